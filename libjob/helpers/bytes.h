/* bytes.h - variable-size data between the helpers (bytes.c; internal to
 * libjob/helpers): the broadcast of a buffer of any length, which
 * ddp_bcast_bytes and ddp_compute_and_bcast (helpers.c) share. */
#ifndef DDP_HELPERS_BYTES_H
#define DDP_HELPERS_BYTES_H

#include <stddef.h>

/* Broadcast (*buf, *len) from root.  'st' is this rank's status so far
 * (0 or a DDP_E* code): the root's goes in the header, any other rank's is
 * shared before the payload moves.  On success a non-root rank has a
 * malloc'd *buf (NULL for length 0) and *len; on failure *buf is NULL
 * there.  The root's buffer is never touched.  Returns 0 or a DDP_E* code,
 * as helpers_sync_status() (sync.h); what names the caller in messages. */
int helpers_bcast_bytes (const char *what, void **buf, size_t *len, int root,
                         int st);

#endif /* DDP_HELPERS_BYTES_H */
