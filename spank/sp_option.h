/* sp_option.h - the --ddp[=VALUE] option: its value, and finding it in
 * srun's own argument vector before srun has parsed it.
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
 * and the valid values to ERR (ERRLEN bytes, may be 0) and leaves *REQ alone. */
int sp_option_parse (const char *value, struct sp_request *req, char *err,
                     size_t errlen);

/* True when A and B ask for the same thing. */
bool sp_request_equal (const struct sp_request *a, const struct sp_request *b);

/* Look for --NAME / --NAME=VALUE among srun's options in ARGV (ARGC words,
 * ARGV[0] is the program), the way srun's getopt_long ("+" mode) would see
 * them: scanning stops at "--" and at the first word that is not an option or
 * an option's argument (that word is the command srun launches, and what
 * follows belongs to it).  A long option without "=" that is not one of
 * srun's options without argument is taken to consume the next word; short
 * options consume the next word when they take an argument in srun.
 * NAME may be abbreviated on the command line to any prefix of at least two
 * characters.  Returns 1 when found (the last occurrence wins; *VALUE points
 * into ARGV, or is NULL for a bare --NAME), 0 when not found, -1 (errno
 * EINVAL) for NULL arguments. */
int sp_argv_find (int argc, char *const argv[], const char *name,
                  const char **value);

#endif /* SP_OPTION_H */
