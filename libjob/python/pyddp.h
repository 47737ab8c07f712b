/* pyddp.h - what the C files of ddp._ddp (the C half of the Python module
 * ddp) share: the Python headers and the shims for older Pythons, the state
 * every call looks at, how a call waits in libddp, and how errors are
 * raised.  Private to libjob/python/; only PyInit__ddp leaves the module.
 *
 * The files, one concern each, from the top (a file calls only files
 * below it, and py_coll.c the trampoline of py_helpers.c):
 *   ddpmodule.c   the module: the identity queries, the constants,
 *                 PyInit__ddp assembling the parts below
 *   py_coll.c     the collectives: barrier, all_reduce, broadcast, the
 *                 gathers and reduce_scatter, on the world or a group,
 *                 blocking or not
 *   py_objects.c  the bytes under the object calls (broadcast_object,
 *                 gather, all_gather) and all_reduce_dict's named values
 *   py_group.c    ddp.Group: split(), the communicator of a group=
 *   py_request.c  ddp.Request: a collective started with async_op=True,
 *                 its memory held until it completed
 *   py_data.c     the memory a data collective works on: buffers and
 *                 DLPack tensors, their dtype, a strided one's copy
 *   py_helpers.c  the main-process helpers: run_on_main, main_only and
 *                 rank0_first (as calls and as with-blocks), local blocks
 *   py_stop.c     the agreed stop and the restart count
 *   py_log.c      rank-prefixed logging
 *   py_sampler.c  the distributed sampler's arithmetic
 *   py_init.c     libddp's life: initialized or not, init on first use,
 *                 init/finalize, the refusal inside a local block
 *   py_errors.c   the exception classes, raising them for libddp's codes,
 *                 and sharing a callback's failure among the ranks
 *   py_wait.c     a wait in libddp: the library lock, the GIL released,
 *                 the local-block depth, the interrupt guard (a second
 *                 SIGINT ends the process)
 *
 * Rules kept by every function of the module:
 *
 *   - Every call initializes libddp on first use (pyddp_ensure_init), so
 *     init() is optional.
 *   - The GIL is released during every call that may wait for other ranks
 *     (DDP_CALL), and libddp is entered by one thread at a time
 *     (pyddp_lib_lock, recursive so that a callback may call back in),
 *     but for a request's wait and test, which libddp allows beside
 *     another thread's call (DDP_CALL_BESIDE).
 *   - Callbacks (run_on_main's func, a compute function) run Python code
 *     with the GIL taken back; what they raise is kept and, after the
 *     helper's own collective has told every rank that it failed, shared in
 *     one more collective (pyddp_share_failure): the rank where it was
 *     raised gets its own exception back, every other rank a RemoteError
 *     with the exception's type name and message.
 *   - Inside a callback or a main-only block only this rank runs
 *     ("local", pyddp_local_depth > 0): barrier() returns at once and the
 *     helpers run here alone (speechbrain's MAIN_PROC_ONLY); the data
 *     collectives refuse (pyddp_refuse_local).
 *   - A signal during a wait: Python's handler runs when the wait ends; a
 *     second SIGINT (or SIGTERM, where Python handles it) during the same
 *     wait ends the process (py_wait.c), so nobody is stuck.
 *
 * Every .c file of the module includes this header first (Python.h must
 * come before the system headers).
 */
#ifndef DDP_PYDDP_H
#define DDP_PYDDP_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>

#include "ddp.h"

/* What Python 3.7 .. 3.9 lack. */
#if PY_VERSION_HEX < 0x030A0000
static inline PyObject *ddp_new_ref (PyObject *o)
{
    Py_INCREF (o);
    return o;
}
#define Py_NewRef(o) ddp_new_ref ((PyObject *) (o))
#endif
#if PY_VERSION_HEX < 0x03090000
#define PyObject_CallNoArgs(f) PyObject_CallObject ((f), NULL)
#define PyObject_CallOneArg(f, a) PyObject_CallFunctionObjArgs ((f), (a), NULL)
#endif

/* ---- The module's state and init (py_init.c) -------------------------- */

/* Initialize libddp on first use; 0, or -1 with an exception set. */
int pyddp_ensure_init (void);

/* Called by finalize() before ddp_finalize() (py_group.c sets it: every
 * request completed, every group marked freed), or NULL. */
extern void (*pyddp_before_finalize) (void);

/* 0 outside a local block; -1 with ddp.Error set inside one, where a data
 * collective named 'where' cannot run (the other ranks would never join). */
int pyddp_refuse_local (const char *where);

/* ---- Waiting in libddp (py_wait.c) ------------------------------------ */

/* Held by the thread inside libddp (recursive: a callback may call back). */
extern pthread_mutex_t pyddp_lib_lock;

/* How deep this thread is in callbacks and main-only blocks (local blocks):
 * above 0, only this rank runs. */
extern _Thread_local int pyddp_local_depth;

/* Install the interrupt guard on SIGINT and SIGTERM where the program has a
 * handler of its own.  Call once libddp is initialized (its note names
 * the rank). */
void pyddp_guard_setup (void);

/* A wait begins: returns what pyddp_wait_end() must restore (waits nest
 * when a callback calls back into the module). */
int pyddp_wait_begin (void);

/* A wait ends: restore what pyddp_wait_begin() or pyddp_wait_suspend()
 * returned. */
void pyddp_wait_end (int was);

/* Python code runs again inside a wait (a callback): the guard stands
 * aside; returns what pyddp_wait_end() must restore afterwards. */
int pyddp_wait_suspend (void);

/* Run one libddp call: the GIL released, libddp held by this thread. */
#define DDP_CALL(rc, expr)                                                  \
    do {                                                                    \
        int ddp_was_ = pyddp_wait_begin ();                                 \
        Py_BEGIN_ALLOW_THREADS                                              \
        pthread_mutex_lock (&pyddp_lib_lock);                               \
        (rc) = (expr);                                                      \
        pthread_mutex_unlock (&pyddp_lib_lock);                             \
        Py_END_ALLOW_THREADS                                                \
        pyddp_wait_end (ddp_was_);                                          \
    } while (0)

/* Run a libddp call that is safe beside another thread's libddp call (a
 * request's ddp_wait/ddp_test: ddp.h, "Threads"): the GIL released,
 * pyddp_lib_lock not taken, so that a thread blocked on a request does
 * not keep the others out of libddp. */
#define DDP_CALL_BESIDE(rc, expr)                                           \
    do {                                                                    \
        int ddp_was_ = pyddp_wait_begin ();                                 \
        Py_BEGIN_ALLOW_THREADS                                              \
        (rc) = (expr);                                                      \
        Py_END_ALLOW_THREADS                                                \
        pyddp_wait_end (ddp_was_);                                          \
    } while (0)

/* ---- Errors (py_errors.c) --------------------------------------------- */

/* Create ddp.Error, PeerError, TimeoutError, RemoteError in module m;
 * 0, or -1 with an exception set. */
int pyddp_errors_init (PyObject *m);

/* libddp was (re)initialized: forget the first sticky fault. */
void pyddp_forget_fault (void);

/* Raise the class for rc (ddp.Error or a subclass) with message msg,
 * .code = rc and .where; returns NULL. */
PyObject *pyddp_raise (int rc, const char *where, const char *msg);

/* Raise the exception for libddp's rc in 'where', with detail (why, from
 * ddp_last_error; may be NULL or "").  A signal that came during the call
 * (KeyboardInterrupt) wins.  Returns NULL. */
PyObject *pyddp_fail (int rc, const char *where, const char *detail);

/* pyddp_fail() for a libddp call this thread just made (detail from
 * ddp_last_error() where the core recorded one).  Returns NULL. */
PyObject *pyddp_fail_here (int rc, const char *where);

/* Raise for a failed data collective in 'where': DDP_EMISMATCH (the
 * ranks passed different dtypes or counts, or also: " and op") in words
 * the Python caller controls, then detail; any other code as
 * pyddp_fail().  Returns NULL. */
PyObject *pyddp_fail_data (int rc, const char *where, const char *also,
                           const char *detail);

/* The exception being raised, taken out (a new reference; NULL if none). */
PyObject *pyddp_fetch_exception (void);

/* Raise exc (stolen) again, its traceback kept. */
void pyddp_raise_exception (PyObject *exc);

/* A helper returned rc < 0: every rank learns what went wrong where it can
 * (see py_errors.c).  mine is stolen; returns NULL, with an exception set
 * unless keep_mine kept mine for the caller. */
PyObject *pyddp_share_failure (int rc, const char *where, PyObject *mine,
                               bool keep_mine, const char *detail);

/* ---- The memory of a data collective (py_data.c) ---------------------- */

#define PYDDP_MAX_DIMS 64       /* as the buffer protocol's PyBUF_MAX_NDIM */

/* The elements of a Python object lent to a collective. */
struct pyddp_data {
    PyObject *obj;              /* borrowed: the object */
    Py_buffer view;             /* its buffer, when it has one */
    bool have_view;
    PyObject *capsule;          /* its __dlpack__() capsule, when used */
    char *base;                 /* the first element */
    ddp_dtype_t dtype;
    size_t itemsize;            /* bytes of an element */
    size_t count;               /* elements */
    int ndim;
    Py_ssize_t shape[PYDDP_MAX_DIMS];
    Py_ssize_t strides[PYDDP_MAX_DIMS];     /* in bytes */
    bool writable;
    bool contiguous;            /* one C-contiguous block at base */
    bool cuda;                  /* GPU memory (a CUDA tensor): the NCCL
                                 * backend's device, ordered on its stream */
    void *tmp;                  /* a strided object's contiguous copy */
};

#define PYDDP_DATA_WRITE 1u     /* the result is written into it */
#define PYDDP_DATA_UPDATE 2u    /* written into if writable (all_reduce) */

/* Lend x's elements as d: a buffer (the buffer protocol) or a DLPack
 * producer (__dlpack__) whose memory the CPU can read, of a dtype libddp
 * has; with PYDDP_DATA_WRITE also writable; with it, or with
 * PYDDP_DATA_UPDATE when writable, and strided, without elements that
 * share memory (the result could not be written back).  what names x in errors ("x", "out").
 * Returns 0 (release d with pyddp_data_release), 1 when x is neither (no
 * exception set, nothing to release), or -1 with ValueError set naming
 * what is wrong (a CUDA tensor, a dtype ddp lacks, read-only, ...). */
int pyddp_data_get (PyObject *x, struct pyddp_data *d, unsigned flags,
                    const char *where, const char *what);

/* The contiguous elements of d for libddp: d's own memory when it is
 * contiguous, else a copy (of the elements when read is true); never NULL
 * but with MemoryError set (an empty d gives a valid pointer).  The copy is freed by pyddp_data_release(). */
void *pyddp_data_buf (struct pyddp_data *d, bool read);

/* After the call: write a strided d's copy back into its elements. */
void pyddp_data_write_back (struct pyddp_data *d);

/* Give back what pyddp_data_get() took (idempotent). */
void pyddp_data_release (struct pyddp_data *d);

/* "float32" for DDP_FLOAT32. */
const char *pyddp_dtype_name (ddp_dtype_t dt);

/* ---- Groups (py_group.c) ----------------------------------------------- */

/* The communicator of a call's group= argument: NULL for None (or a NULL
 * group: the world).  0, or -1 with TypeError (not a ddp.Group) or
 * ValueError (freed) set. */
int pyddp_group_comm (PyObject *group, ddp_comm_t **comm, const char *where);

/* Add ddp.Group and UNDEFINED to module m; 0, or -1 with an exception set. */
int pyddp_group_init (PyObject *m);

/* ---- Requests (py_request.c) ------------------------------------------- */

/* Makes the result of a request when it completed successfully, from its
 * first data and the result it was started with (a new reference, or NULL
 * with an exception set, raised by wait()). */
typedef PyObject *(*pyddp_finish_fn) (struct pyddp_data *d, PyObject *result);

/* A ddp.Request for a collective 'where' (a static string) about to start
 * on comm (group: the ddp.Group, referenced; NULL for the world); a new
 * reference, or NULL with an exception set.  Its data (two slots, zeroed:
 * pyddp_request_data) are released when it goes. */
PyObject *pyddp_request_new (const char *where, ddp_comm_t *comm,
                             PyObject *group);

/* The request's two slots of data, for pyddp_data_get. */
struct pyddp_data *pyddp_request_data (PyObject *r);

/* The collective started as req (NULL: nothing runs, completed at once):
 * the request holds the objects of its first nd data, writes back those of
 * write_back's bits on success, and wait() returns result (or finish's).
 * also: the EMISMATCH words.  Returns r (the reference passed on). */
PyObject *pyddp_request_start (PyObject *r, ddp_request_t *req, int nd,
                               unsigned write_back, PyObject *result,
                               pyddp_finish_fn finish, const char *also);

/* Wait for r and return what wait() returns (a new reference), or NULL
 * with its exception set. */
PyObject *pyddp_request_result (PyObject *r);

/* Complete every request in flight on comm (all: on any communicator),
 * the GIL released while waiting; their results are kept for wait(). */
void pyddp_requests_complete (ddp_comm_t *comm, bool all);

/* Add ddp.Request to module m; 0, or -1 with an exception set. */
int pyddp_request_init (PyObject *m);

/* ---- Callbacks (py_helpers.c) ----------------------------------------- */

/* A Python callable libddp calls back through a trampoline. */
struct pycall {
    PyObject *fn;           /* borrowed: the callable, no arguments */
    PyObject *result;       /* what it returned (new reference) */
    PyObject *exc;          /* what it raised (new reference) */
    bool want_bytes;        /* a compute function: result must be bytes */
};

/* A ddp_compute_fn_t for a struct pycall whose callable returns bytes,
 * copied (malloc) for libddp.  Called by libddp without the GIL. */
int pyddp_compute_trampoline (void *arg, void **out, size_t *len);

/* Add the _Block type and the block kinds (_MAIN_ONLY ...) to module m;
 * 0, or -1 with an exception set. */
int pyddp_helpers_init (PyObject *m);

/* ---- The parts' functions, added to the module by PyInit__ddp --------- */

/* A method table's entry for py_NAME, a function without arguments, with
 * its docstring NAME_doc. */
#define NOARGS(name) { #name, py_##name, METH_NOARGS, name##_doc }

extern PyMethodDef pyddp_init_methods[];
extern PyMethodDef pyddp_coll_methods[];
extern PyMethodDef pyddp_group_methods[];
extern PyMethodDef pyddp_objects_methods[];
extern PyMethodDef pyddp_helpers_methods[];
extern PyMethodDef pyddp_stop_methods[];
extern PyMethodDef pyddp_log_methods[];
extern PyMethodDef pyddp_sampler_methods[];

#endif /* DDP_PYDDP_H */

/* vi: ts=4 sw=4 expandtab
 */
