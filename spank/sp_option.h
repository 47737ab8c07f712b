/* sp_option.h - the --ddp[=VALUE] option's value (finding it in srun's
 * own argument vector is sp_argv.h's job).
 *
 * VALUE is a comma-separated list of words: at most one backend (off, auto,
 * host, nccl) and the flag nobind.  No value (or an empty one) means auto.
 */
#ifndef SP_OPTION_H
#define SP_OPTION_H

#include <stdbool.h>
#include <stddef.h>

enum sp_backend {
    SP_BACKEND_OFF = 0,
    SP_BACKEND_AUTO,
    SP_BACKEND_HOST,
    SP_BACKEND_NCCL,
};

struct sp_request {
    enum sp_backend backend;
    bool nobind;            /* the user turned GPU binding off */
};

/* Longest --ddp value accepted (longer values are rejected). */
#define SP_OPTION_MAXLEN 64

/* The valid values, for messages. */
#define SP_OPTION_VALID "off, auto, host or nccl, optionally with ',nobind'"

/* Name of BACKEND ("off", "auto", "host", "nccl"), or "?" if out of range. */
const char *sp_backend_name (enum sp_backend backend);

/* Parse a backend word ("off", "auto", "host", "nccl"; exact, lower case).
 * Returns 0 and sets *OUT, or -1 (errno EINVAL) for anything else. */
int sp_backend_parse (const char *word, enum sp_backend *out);

/* Parse a --ddp value (NULL or "" means auto).  Returns 0 and fills *REQ;
 * on failure returns -1 with errno EINVAL, writes a message naming the value
 * (escaped by sp_quote: one line, no control characters) and the valid
 * values to ERR (ERRLEN bytes, may be 0; 256 hold it all) and leaves *REQ
 * alone. */
int sp_option_parse (const char *value, struct sp_request *req, char *err,
                     size_t errlen);

/* True when A and B ask for the same thing. */
bool sp_request_equal (const struct sp_request *a, const struct sp_request *b);

#endif /* SP_OPTION_H */
