/* request.c - nonblocking collectives (ddp.h: ddp_comm_i*, ddp_wait,
 * ddp_test, ddp_waitall).
 *
 * Each communicator has at most one worker thread, made at its first
 * request: it runs the communicator's requests one at a time in the order
 * they were started (core_run: the same path as a blocking call), so that
 * every rank's calls meet in the same order.  A host communicator of one runs
 * each request when it starts (run_now: a copy) and has no worker.  A
 * blocking call on the communicator first drains its queue (request_drain),
 * so the caller's thread and the worker never call the backend context at
 * once.  The worker blocks every signal: a stop signal or Ctrl-C reaches the
 * program's threads, as before.
 *
 * Completion: the worker sets the request's done flag (release) after
 * its result; a waiter spins on it for a moment, then sleeps on the
 * worker's condition variable.  A failure's words (the worker's thread's
 * ddp_last_error) travel in the request to the waiting thread.
 */
#include "config.h"

#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "ddp_internal.h"

/* How many times a waiter looks at the flag before it sleeps: about as
 * long as a small collective between nodes takes (tens of us). */
#define SPIN_LOOKS 20000

struct ddp_request {
    struct ddp_comm *comm;
    const char *fn;
    int kind;               /* enum ddp_coll_kind or CORE_BARRIER */
    struct ddp_coll k;
    int rc;
    char why[512];          /* the failure, in words */
    atomic_bool done;
    struct ddp_request *next;
};

struct ddp_worker {
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t work;    /* a request queued, or stop */
    pthread_cond_t fin;     /* a request completed */
    struct ddp_request *head, *tail;
    unsigned pending;       /* started, not completed */
    bool stop;
};

/* r's call, on this thread: its result and, on failure, its words. */
static void run_call (struct ddp_request *r)
{
    r->rc = core_run (r->comm, r->fn, r->kind,
                      r->kind == CORE_BARRIER ? NULL : &r->k);
    if (r->rc < 0)
        snprintf (r->why, sizeof (r->why), "%s", ddpi_last_error ());
}

static void *worker_main (void *arg)
{
    struct ddp_worker *w = arg;
    struct ddp_request *r;

    pthread_mutex_lock (&w->mu);
    for (;;) {
        while (!w->head && !w->stop)
            pthread_cond_wait (&w->work, &w->mu);
        if (!w->head)
            break;
        r = w->head;
        w->head = r->next;
        if (!w->head)
            w->tail = NULL;
        pthread_mutex_unlock (&w->mu);
        run_call (r);
        pthread_mutex_lock (&w->mu);
        atomic_store_explicit (&r->done, true, memory_order_release);
        w->pending--;
        pthread_cond_broadcast (&w->fin);
    }
    pthread_mutex_unlock (&w->mu);
    return NULL;
}

/* c's worker, made now if need be; NULL (recorded) on failure. */
static struct ddp_worker *worker_of (struct ddp_comm *c, const char *fn)
{
    struct ddp_worker *w = c->worker;
    sigset_t all, old;
    int e;

    if (w)
        return w;
    if (!(w = calloc (1, sizeof (*w)))) {
        ddpi_error (DDP_ENOMEM, "%s: out of memory", fn);
        return NULL;
    }
    pthread_mutex_init (&w->mu, NULL);
    pthread_cond_init (&w->work, NULL);
    pthread_cond_init (&w->fin, NULL);
    sigfillset (&all);
    pthread_sigmask (SIG_SETMASK, &all, &old);
    e = pthread_create (&w->thread, NULL, worker_main, w);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    if (e != 0) {
        pthread_cond_destroy (&w->fin);
        pthread_cond_destroy (&w->work);
        pthread_mutex_destroy (&w->mu);
        free (w);
        ddpi_error (DDP_ENOMEM, "%s: no thread for the request: %s", fn,
                    strerror (e));
        return NULL;
    }
    c->worker = w;
    return w;
}

/* r's call, run now on this thread: a host communicator of one, whose
 * call is a copy (no peer to wait for, nothing to overlap; the hand-off
 * to a worker cost 10 us against 0.05 for the copy).  Its requests never
 * queue (no worker), so the order of calls holds. */
static void run_now (struct ddp_request *r)
{
    run_call (r);
    atomic_store_explicit (&r->done, true, memory_order_release);
}

/* Queue a checked call on c; *req the request. */
static int start (struct ddp_comm *c, const char *fn, int kind,
                  const struct ddp_coll *k, ddp_request_t **req)
{
    struct ddp_worker *w;
    struct ddp_request *r;

    if (!(r = calloc (1, sizeof (*r))))
        return ddpi_error (DDP_ENOMEM, "%s: out of memory", fn);
    r->comm = c;
    r->fn = fn;
    r->kind = kind;
    if (k)
        r->k = *k;
    if (c->size == 1 && !c->be->gpu) {
        run_now (r);
        *req = r;
        return 0;
    }
    if (!(w = worker_of (c, fn))) {
        free (r);
        return DDP_ENOMEM;
    }
    pthread_mutex_lock (&w->mu);
    if (w->tail)
        w->tail->next = r;
    else
        w->head = r;
    w->tail = r;
    w->pending++;
    pthread_cond_signal (&w->work);
    pthread_mutex_unlock (&w->mu);
    *req = r;
    return 0;
}

/* A nonblocking collective: the blocking call's checks, then queued. */
static int icoll (ddp_comm_t *comm, const char *fn, struct ddp_coll *k,
                  ddp_request_t **req)
{
    struct ddp_comm *c = core_comm (comm);
    int rc;

    if (req)
        *req = NULL;
    if ((rc = core_check (c ? c : core_world (), fn)) < 0
        || (rc = core_check_args (c, fn, k)) < 0)
        return rc;
    if (!req)
        return ddpi_error (DDP_EINVAL, "%s: req is NULL", fn);
    return start (c, fn, (int)k->kind, k, req);
}

int ddp_comm_ibarrier (ddp_comm_t *comm, ddp_request_t **req)
{
    struct ddp_comm *c = core_comm (comm);
    int rc;

    if (req)
        *req = NULL;
    if ((rc = core_check (c ? c : core_world (), "ddp_comm_ibarrier")) < 0)
        return rc;
    if (!req)
        return ddpi_error (DDP_EINVAL, "ddp_comm_ibarrier: req is NULL");
    return start (c, "ddp_comm_ibarrier", CORE_BARRIER, NULL, req);
}

int ddp_comm_ibcast (ddp_comm_t *comm, void *buf, size_t count,
                     ddp_dtype_t dtype, int root, ddp_request_t **req)
{
    struct ddp_coll k = { .kind = DDP_COLL_BCAST, .sendbuf = buf,
                          .recvbuf = buf, .count = count, .dtype = dtype,
                          .root = root };
    return icoll (comm, "ddp_comm_ibcast", &k, req);
}

int ddp_comm_ireduce (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                      size_t count, ddp_dtype_t dtype, ddp_op_t op, int root,
                      ddp_request_t **req)
{
    struct ddp_coll k = { .kind = DDP_COLL_REDUCE, .sendbuf = sendbuf,
                          .recvbuf = recvbuf, .count = count, .dtype = dtype,
                          .op = op, .root = root };
    return icoll (comm, "ddp_comm_ireduce", &k, req);
}

int ddp_comm_iallreduce (ddp_comm_t *comm, const void *sendbuf,
                         void *recvbuf, size_t count, ddp_dtype_t dtype,
                         ddp_op_t op, ddp_request_t **req)
{
    struct ddp_coll k = { .kind = DDP_COLL_ALLREDUCE, .sendbuf = sendbuf,
                          .recvbuf = recvbuf, .count = count, .dtype = dtype,
                          .op = op };
    return icoll (comm, "ddp_comm_iallreduce", &k, req);
}

int ddp_comm_igather (ddp_comm_t *comm, const void *sendbuf, void *recvbuf,
                      size_t count, ddp_dtype_t dtype, int root,
                      ddp_request_t **req)
{
    struct ddp_coll k = { .kind = DDP_COLL_GATHER, .sendbuf = sendbuf,
                          .recvbuf = recvbuf, .count = count, .dtype = dtype,
                          .root = root };
    return icoll (comm, "ddp_comm_igather", &k, req);
}

int ddp_comm_iallgather (ddp_comm_t *comm, const void *sendbuf,
                         void *recvbuf, size_t count, ddp_dtype_t dtype,
                         ddp_request_t **req)
{
    struct ddp_coll k = { .kind = DDP_COLL_ALLGATHER, .sendbuf = sendbuf,
                          .recvbuf = recvbuf, .count = count,
                          .dtype = dtype };
    return icoll (comm, "ddp_comm_iallgather", &k, req);
}

int ddp_comm_ireduce_scatter (ddp_comm_t *comm, const void *sendbuf,
                              void *recvbuf, size_t recvcount,
                              ddp_dtype_t dtype, ddp_op_t op,
                              ddp_request_t **req)
{
    struct ddp_coll k = { .kind = DDP_COLL_REDUCE_SCATTER,
                          .sendbuf = sendbuf, .recvbuf = recvbuf,
                          .count = recvcount, .dtype = dtype, .op = op };
    return icoll (comm, "ddp_comm_ireduce_scatter", &k, req);
}

/* Sleep until r completed. */
static void wait_done (struct ddp_request *r)
{
    struct ddp_worker *w;

    for (int i = 0; i < SPIN_LOOKS; i++) {
        if (atomic_load_explicit (&r->done, memory_order_acquire))
            return;
        if ((i & 1023) == 1023)
            sched_yield ();
    }
    /* Not done: its communicator is alive (freeing one drains it), and
     * so is the worker. */
    w = r->comm->worker;
    pthread_mutex_lock (&w->mu);
    while (!atomic_load_explicit (&r->done, memory_order_acquire))
        pthread_cond_wait (&w->fin, &w->mu);
    pthread_mutex_unlock (&w->mu);
}

/* r completed: its result on this thread, and r freed. */
static int finish (struct ddp_request *r)
{
    int rc = r->rc;

    if (rc < 0)
        ddpi_error_quiet (rc, "%s", r->why);
    free (r);
    return rc;
}

int ddp_wait (ddp_request_t **req)
{
    struct ddp_request *r;

    if (!req)
        return ddpi_error (DDP_EINVAL, "ddp_wait: req is NULL");
    if (!(r = *req))
        return 0;
    wait_done (r);
    *req = NULL;
    return finish (r);
}

int ddp_waitall (size_t n, ddp_request_t **reqs)
{
    int first = 0, rc;

    if (n > 0 && !reqs)
        return ddpi_error (DDP_EINVAL, "ddp_waitall: reqs is NULL");
    for (size_t i = 0; i < n; i++)
        if ((rc = ddp_wait (&reqs[i])) < 0 && first == 0)
            first = rc;
    return first;
}

int ddp_test (ddp_request_t **req, bool *done)
{
    struct ddp_request *r;

    if (!req || !done)
        return ddpi_error (DDP_EINVAL, "ddp_test: %s is NULL",
                           req ? "done" : "req");
    if (!(r = *req)) {
        *done = true;
        return 0;
    }
    *done = atomic_load_explicit (&r->done, memory_order_acquire);
    if (!*done)
        return 0;
    *req = NULL;
    return finish (r);
}

/* comm.h. */
void request_drain (struct ddp_comm *c)
{
    struct ddp_worker *w = c ? c->worker : NULL;

    if (!w)
        return;
    pthread_mutex_lock (&w->mu);
    while (w->pending > 0)
        pthread_cond_wait (&w->fin, &w->mu);
    pthread_mutex_unlock (&w->mu);
}

/* comm.h.  Requests never waited for stay allocated: the program holds
 * their handles (ddp_wait after this still answers). */
void request_stop (struct ddp_comm *c)
{
    struct ddp_worker *w = c->worker;

    if (!w)
        return;
    request_drain (c);
    pthread_mutex_lock (&w->mu);
    w->stop = true;
    pthread_cond_signal (&w->work);
    pthread_mutex_unlock (&w->mu);
    pthread_join (w->thread, NULL);
    pthread_cond_destroy (&w->fin);
    pthread_cond_destroy (&w->work);
    pthread_mutex_destroy (&w->mu);
    free (w);
    c->worker = NULL;
}
