/* local_proto.h - the wire protocol between a rank's local bootstrap
 * method (local.c) and the local launcher's server (local_server.c).
 * Internal to libjob/bootstrap.
 *
 * The launcher makes one socketpair per rank and passes the rank its end
 * as an inherited descriptor named by DDP_LOCAL_FD: there is no socket
 * file, and the server knows each rank by its connection.  Both ends run
 * the same library on the same machine, so integers go in host order.
 *
 * Every message is a frame: struct lp_hdr, then len bytes of payload.
 *   HELLO   rank -> server   (empty)
 *   WELCOME server -> rank   struct lp_welcome, then size int32 node ids
 *   PUT     rank -> server   struct lp_put, key, blob
 *   SYNC    rank -> server   struct lp_sync, key (the round's name)
 *   DONE    server -> rank   struct lp_done, key, then nblobs times:
 *                            struct lp_blob, its key, its data
 *   FAIL    server -> rank   struct lp_fail, key, nranks int32, text
 *   ABORT   rank -> server   struct lp_abort, text
 *   VICTIM  rank -> server   struct lp_victim, text: this rank's collectives
 *                            failed because of another rank (libddp's
 *                            words), so it does not fail first
 *   REASON  rank -> server   struct lp_victim, text: why this rank is
 *                            about to end badly ("raised ValueError: x")
 */
#ifndef DDP_LOCAL_PROTO_H
#define DDP_LOCAL_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/uio.h>

#define LP_MAGIC 0x4c504444u   /* "DDPL" */
#define LP_KEY_MAX 47          /* bytes of a key, at most */
#define LP_TEXT_MAX 1024       /* bytes of a FAIL or ABORT text, at most */

enum lp_type {
    LP_HELLO = 1,
    LP_WELCOME = 2,
    LP_PUT = 3,
    LP_SYNC = 4,
    LP_DONE = 5,
    LP_FAIL = 6,
    LP_ABORT = 7,
    LP_VICTIM = 8,
    LP_REASON = 9,
};

struct lp_hdr {
    uint32_t magic;
    uint32_t type;
    uint64_t len;
};

struct lp_welcome {
    int32_t rank, size, nnodes, pad;
    int64_t job;        /* the launcher's id for the job (its pid) */
};

struct lp_put {
    uint32_t scope;     /* enum bootstrap_scope */
    uint32_t keylen;
    uint64_t len;       /* blob bytes */
};

struct lp_sync {
    uint32_t collect;
    uint32_t keylen;
    double timeout_s;   /* this rank's bound on the fence */
};

struct lp_done {
    uint32_t keylen;
    uint32_t nblobs;
};

struct lp_blob {
    int32_t rank;
    uint32_t keylen;
    uint64_t len;
};

enum lp_fail_kind {
    LP_FAIL_TIMEOUT = 1,    /* ranks did not arrive within the bound */
    LP_FAIL_GONE = 2,       /* ranks ended before they arrived */
    LP_FAIL_MISMATCH = 3,   /* ranks are in another round */
};

struct lp_fail {
    int32_t kind;       /* enum lp_fail_kind */
    int32_t nranks;     /* ranks at fault, listed */
    uint32_t keylen;
    uint32_t textlen;   /* what the launcher knows of them */
};

struct lp_abort {
    int32_t code;
    uint32_t textlen;
};

struct lp_victim {
    uint32_t textlen;
    uint32_t pad;
};

/* Send one frame of type whose payload is the n pieces of iov, on the
 * non-blocking socket fd, by deadline (ddpi_now() time).  Returns 0, or -1
 * when the peer is gone or the deadline passed. */
int lp_send (int fd, uint32_t type, const struct iovec *iov, int n,
             double deadline);

/* Receive one frame from the non-blocking socket fd by deadline: *type,
 * and the payload in a malloc'd *buf (free() it) of *len bytes (a 1-byte
 * buffer when empty).  Returns 0, or -1 on EOF, a bad header, a payload
 * over max bytes, out of memory or the deadline (*buf NULL). */
int lp_recv (int fd, uint32_t *type, void **buf, size_t *len, size_t max,
             double deadline);

/* Reading a payload: take n bytes (into out, unless it is NULL) from the
 * cursor.  Returns a pointer to them, or NULL when fewer are left. */
struct lp_cur {
    const char *p;
    size_t left;
};
const void *lp_take (struct lp_cur *c, void *out, size_t n);

/* Take a key of keylen bytes (at most LP_KEY_MAX) into key (room for
 * LP_KEY_MAX + 1), NUL-terminated.  Returns 0 or -1. */
int lp_take_key (struct lp_cur *c, uint32_t keylen, char *key);

#endif /* DDP_LOCAL_PROTO_H */
