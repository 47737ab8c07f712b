/* sp_option.c - the --ddp option value and its detection in srun's argv. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sp_option.h"
#include "sp_err.h"

static const char *backend_names[] = {
    [SP_BACKEND_OFF] = "off",
    [SP_BACKEND_AUTO] = "auto",
    [SP_BACKEND_HOST] = "host",
    [SP_BACKEND_NCCL] = "nccl",
};

#define NBACKENDS (sizeof (backend_names) / sizeof (backend_names[0]))

const char *sp_backend_name (enum sp_backend backend)
{
    if ((unsigned) backend >= NBACKENDS)
        return "?";
    return backend_names[backend];
}

int sp_backend_parse (const char *word, enum sp_backend *out)
{
    size_t i;

    if (word && out) {
        for (i = 0; i < NBACKENDS; i++) {
            if (strcmp (word, backend_names[i]) == 0) {
                *out = (enum sp_backend) i;
                return 0;
            }
        }
    }
    errno = EINVAL;
    return -1;
}


/* Room for the value quoted in the message (sp_quote): a value of printable
 * characters whole, one of escapes cut after 32 bytes, so that the message
 * still names the valid values in 256 bytes. */
#define QUOTED_LEN SP_QUOTE_LEN (32)

/* Apply one word of a --ddp value to REQ; SEEN tracks a backend word. */
static int apply_word (const char *word, struct sp_request *req, bool *seen)
{
    enum sp_backend b;

    if (strcmp (word, "nobind") == 0) {
        if (req->nobind)
            return -1;
        req->nobind = true;
        return 0;
    }
    if (*seen || sp_backend_parse (word, &b) < 0)
        return -1;
    req->backend = b;
    *seen = true;
    return 0;
}

int sp_option_parse (const char *value, struct sp_request *req, char *err,
                     size_t errlen)
{
    struct sp_request r = { .backend = SP_BACKEND_AUTO, .nobind = false };
    char buf[SP_OPTION_MAXLEN + 1], q[QUOTED_LEN];
    char *word, *save = NULL;
    bool seen = false;
    size_t len;

    if (!req)
        return sp_fail (err, errlen, "ddp: internal error: no request");
    if (value && *value) {
        len = strnlen (value, sizeof (buf));
        if (len >= sizeof (buf))
            return sp_fail (err, errlen, "ddp: --ddp value is longer than %d "
                         "characters; valid values: %s", SP_OPTION_MAXLEN,
                         SP_OPTION_VALID);
        memcpy (buf, value, len + 1);
        if (buf[0] == ',' || buf[len - 1] == ',' || strstr (buf, ",,"))
            goto invalid;
        for (word = strtok_r (buf, ",", &save); word;
             word = strtok_r (NULL, ",", &save)) {
            if (apply_word (word, &r, &seen) < 0)
                goto invalid;
        }
    }
    *req = r;
    return 0;
invalid:
    return sp_fail (err, errlen, "ddp: invalid --ddp value '%s'; valid values: %s",
                    sp_quote (value, q, sizeof (q)), SP_OPTION_VALID);
}

bool sp_request_equal (const struct sp_request *a, const struct sp_request *b)
{
    return a && b && a->backend == b->backend && a->nobind == b->nobind;
}
