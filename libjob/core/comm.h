/* comm.h - a communicator inside the core (internal to libddp).
 *
 * struct ddp_comm is what ddp.h's ddp_comm_t points to: the state of one
 * set of ranks that make collectives together, each communicator with its
 * own backend context, fault state and call count.  The world is one (the
 * core's, made by ddp_init); ddp_comm_split (split.c) makes the others,
 * and the nonblocking calls (request.c) queue work on a communicator's
 * worker thread.  Everything below core.c's public functions takes the
 * communicator first: core.c checks and runs a call on a communicator,
 * split.c makes and frees groups, request.c runs calls on a thread.
 */
#ifndef DDP_CORE_COMM_H
#define DDP_CORE_COMM_H

#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>

#include "backend.h"
#include "bootstrap.h"
#include "ddp.h"

/* A barrier, in the places that take a collective's kind. */
#define CORE_BARRIER DDP_COLL_NKINDS

struct ddp_worker;

/* struct ddp_comm's magic while it lives (cleared when it is freed), so
 * that a freed or foreign handle is refused with a message rather than
 * used. */
#define CORE_COMM_MAGIC 0x6464702d636f6d6dULL /* "ddp-comm" */

struct ddp_comm {
    uint64_t magic;
    const struct ddp_backend *be;
    void *ctx;              /* the backend's context of this communicator */
    int rank, size;         /* this rank's in it, and its size */
    int *world_ranks;       /* the world rank of each rank (size entries) */
    unsigned id;            /* 0: the world; groups 1, 2, ... per process */
    unsigned splits;        /* ddp_comm_split calls on it so far (the same
                               on every rank of it) */
    _Atomic int broken;     /* sticky failure code, 0 while healthy */
    uint64_t calls;         /* collectives entered (DDP_CHECK numbers them) */
    struct bootstrap *boot; /* a group's bootstrap (NULL: the world's) */
    struct ddp_worker *worker; /* request.c's, made at the first request */
    struct ddp_comm *next;  /* the core's list of groups */
};

/* The communicator comm names (NULL: the world), or NULL before init. */
struct ddp_comm *core_comm (ddp_comm_t *comm);

/* The world, the settings in force and the world's bootstrap. */
struct ddp_comm *core_world (void);
const struct ddp_config *core_config (void);
struct bootstrap *core_boot (void);

/* Checks shared by every call on c (fn names it): initialized, c known,
 * not broken.  Returns 0 or the DDP_E* code after ddpi_error(). */
int core_check (struct ddp_comm *c, const char *fn);

/* The argument checks of a collective on c.  Returns 0 to go on. */
int core_check_args (struct ddp_comm *c, const char *fn,
                     struct ddp_coll *k);

/* Run a checked call on c (kind: an enum ddp_coll_kind, k its arguments,
 * or CORE_BARRIER with k NULL): DDP_CHECK's vote when on, then the
 * backend; a fault breaks c.  Called by the caller's thread for a blocking
 * call, by c's worker for a request.  Returns 0 or a DDP_E* code. */
int core_run (struct ddp_comm *c, const char *fn, int kind,
              struct ddp_coll *k);

/* DDP_CHECK's vote on a call that is neither a collective nor a barrier
 * (kind: CHECK_SPLIT, CHECK_FREE; check.h), when DDP_CHECK is on; else
 * nothing.  Returns 0 or the vote's DDP_E* code (c is then broken). */
int core_vote (struct ddp_comm *c, const char *fn, int kind);

/* After a backend call on c: a fault is sticky, and the launcher hears
 * that this rank is a victim.  Returns rc. */
int core_done (struct ddp_comm *c, int rc);

/* Add c to the core's groups / take it out (split.c). */
void core_add_group (struct ddp_comm *c);
void core_remove_group (struct ddp_comm *c);

/* request.c: wait until every request started on c has completed (a
 * blocking call keeps its place behind them).  Never fails: a request's
 * error is its own. */
void request_drain (struct ddp_comm *c);

/* request.c: drain, then stop and free c's worker (NULL: none). */
void request_stop (struct ddp_comm *c);

/* split.c: free the group c (its requests drained, a final barrier when
 * barrier is true and it is healthy), and its bootstrap. */
void split_release (struct ddp_comm *c, bool barrier);

#endif /* DDP_CORE_COMM_H */
