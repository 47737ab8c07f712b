/* choice.h - one backend for the whole job (internal to libddp).
 *
 * DDP_BACKEND is read by every rank on its own, and `auto` depends on what
 * the rank's node has (a GPU the CUDA runtime can use).  So that every rank
 * ends on the same backend, or every rank fails with the same reason, each
 * rank publishes a vote in one bootstrap exchange before any backend is
 * created, and every rank runs choice_decide() on the same votes:
 *   1. a rank that already failed (a DDP_BACKEND value that is not auto,
 *      host or nccl; nccl asked of a build without NCCL): that rank returns
 *      its own code, every other rank DDP_EREMOTE naming it;
 *   2. DDP_BACKEND values that differ (unset and "" count as auto):
 *      DDP_EMISMATCH on every rank, naming the ranks of each value;
 *   3. host or nccl on every rank: that backend; auto on every rank: nccl
 *      when every rank can use a GPU, otherwise host on every rank (with a
 *      warning when some ranks could have used NCCL).
 * The vote also carries DDP_CHECK (check.h): a value other than unset,
 * empty, 0 or 1 fails the rank as in 1; values that differ fail every rank
 * with DDP_EMISMATCH as in 2 (a rank that checks its calls would pair its
 * checks with another's calls).
 * Pure code: nothing here calls CUDA or the bootstrap.
 */
#ifndef DDP_CHOICE_H
#define DDP_CHOICE_H

#include <stdbool.h>
#include <stddef.h>

enum choice_want {
    CHOICE_AUTO,
    CHOICE_HOST,
    CHOICE_NCCL,
};

/* One rank's vote. */
struct choice_vote {
    int status;            /* 0, or the DDP_E* code this rank failed with */
    enum choice_want want; /* DDP_BACKEND as this rank read it */
    bool gpu;              /* auto only: this rank can use the NCCL backend */
    bool check;            /* DDP_CHECK=1 */
    char host[64];         /* gethostname(), for messages */
    char reason[160];      /* why status != 0; for auto without gpu, why not */
};

/* The largest encoded vote, in bytes. */
#define CHOICE_WIRE_MAX 240

/* Fill *v for this rank from the DDP_BACKEND value backend (NULL if unset)
 * and host (may be NULL).  probe tells whether the NCCL backend can run
 * here (0, or a DDP_E* code with the reason in why); it is called only for
 * auto, and is NULL in a build without NCCL. */
void choice_local (struct choice_vote *v, const char *backend,
                   const char *host, int (*probe) (char *why, size_t len));

/* Add DDP_CHECK's value (NULL if unset) to *v, filled by choice_local():
 * v->check, or, for a value other than empty, 0 or 1 (and v->status 0 so
 * far), v->status DDP_EINVAL and the reason. */
void choice_local_check (struct choice_vote *v, const char *value);

/* Encode v into buf (CHOICE_WIRE_MAX bytes).  Returns the length used. */
size_t choice_encode (const struct choice_vote *v, void *buf);

/* Decode len bytes at p into *v (strings NUL-terminated).  Returns 0, or -1
 * with the reason in err (errlen bytes). */
int choice_decode (const void *p, size_t len, struct choice_vote *v,
                   char *err, size_t errlen);

/* What this rank does. */
struct choice {
    int code;      /* 0, or the DDP_E* code ddp_init returns */
    bool nccl;     /* code == 0: the NCCL backend, else the host backend */
    bool check;    /* code == 0: DDP_CHECK is on (on every rank) */
    bool warn;     /* code == 0: msg is a warning for rank 0 to log */
    char msg[512]; /* the error; with code == 0 a note (debug) or warning */
};

/* Decide for rank me from the n votes of an exchange: vote r is the len[r]
 * bytes at (char *)raw + off[r].  Every rank given the same votes gets the
 * same backend, or a failure: the same code on every rank, except that a
 * rank that failed itself keeps its own code where the others get
 * DDP_EREMOTE; a vote that does not decode is DDP_EMISMATCH everywhere.
 * Uses O(n) time and n ints of memory.  Returns out->code. */
int choice_decide (const void *raw, const size_t *off, const size_t *len,
                   int n, int me, struct choice *out);

#endif /* DDP_CHOICE_H */
