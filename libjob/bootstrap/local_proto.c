/* local_proto.c - frames of the local launcher's protocol (local_proto.h). */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "local_proto.h"
#include "net.h"

int lp_send (int fd, uint32_t type, const struct iovec *iov, int n,
             double deadline)
{
    struct lp_hdr h = { LP_MAGIC, type, 0 };
    int i;

    for (i = 0; i < n; i++)
        h.len += iov[i].iov_len;
    if (ddpi_io_full (fd, &h, sizeof (h), true, deadline) < 0)
        return -1;
    for (i = 0; i < n; i++)
        if (iov[i].iov_len
            && ddpi_io_full (fd, iov[i].iov_base, iov[i].iov_len, true,
                             deadline) < 0)
            return -1;
    return 0;
}

int lp_recv (int fd, uint32_t *type, void **buf, size_t *len, size_t max,
             double deadline)
{
    struct lp_hdr h;

    *buf = NULL;
    if (ddpi_io_full (fd, &h, sizeof (h), false, deadline) < 0
        || h.magic != LP_MAGIC || h.len > max
        || !(*buf = malloc (h.len ? (size_t)h.len : 1)))
        return -1;
    if (h.len && ddpi_io_full (fd, *buf, (size_t)h.len, false, deadline) < 0) {
        free (*buf);
        *buf = NULL;
        return -1;
    }
    *type = h.type;
    *len = (size_t)h.len;
    return 0;
}

const void *lp_take (struct lp_cur *c, void *out, size_t n)
{
    const void *p = c->p;

    if (c->left < n)
        return NULL;
    if (out && n)
        memcpy (out, p, n);
    c->p += n;
    c->left -= n;
    return p;
}

int lp_take_key (struct lp_cur *c, uint32_t keylen, char *key)
{
    if (keylen > LP_KEY_MAX || !lp_take (c, key, keylen))
        return -1;
    key[keylen] = '\0';
    return strlen (key) == keylen ? 0 : -1;
}
