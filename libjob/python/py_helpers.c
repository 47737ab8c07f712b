/* py_helpers.c - the main-process helpers of ddp._ddp: run_on_main(),
 * main_only(), rank0_first() and local_rank0_first() with a function (the
 * Python callable run from libddp's callback through a trampoline) and as
 * with-blocks (_Block: a helper thread makes the libddp call while the
 * body runs on the caller's thread), and the local blocks of the
 * main_process_only decorator.  Inside any of these only this rank runs
 * (pyddp_local_depth > 0).
 */
#include "pyddp.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- Callbacks ---------------------------------------------------------- */

/* Call c->fn as a local block (GIL held); 0, or 1 with c->exc set. */
static int pycall_run (struct pycall *c)
{
    PyObject *r;

    pyddp_local_depth++;
    r = PyObject_CallNoArgs (c->fn);
    pyddp_local_depth--;
    if (r && c->want_bytes && !PyBytes_Check (r)) {
        PyErr_Format (PyExc_TypeError, "the compute function returned a %s, "
                      "not bytes", Py_TYPE (r)->tp_name);
        Py_CLEAR (r);
    }
    if (!r) {
        Py_XSETREF (c->exc, pyddp_fetch_exception ());
        return 1;
    }
    Py_XSETREF (c->result, r);
    return 0;
}

/* A ddp_fn_t: called by libddp on this thread, without the GIL. */
static int fn_trampoline (void *arg)
{
    PyGILState_STATE g = PyGILState_Ensure ();
    int was = pyddp_wait_suspend (), rc;

    rc = pycall_run (arg);
    pyddp_wait_end (was);
    PyGILState_Release (g);
    return rc;
}

int pyddp_compute_trampoline (void *arg, void **out, size_t *len)
{
    PyGILState_STATE g = PyGILState_Ensure ();
    struct pycall *c = arg;
    int was = pyddp_wait_suspend (), rc;

    rc = pycall_run (c);
    if (rc == 0) {
        Py_ssize_t n = PyBytes_GET_SIZE (c->result);
        *out = n > 0 ? malloc ((size_t) n) : NULL;
        *len = (size_t) n;
        if (n > 0 && !*out) {
            PyErr_NoMemory ();
            Py_XSETREF (c->exc, pyddp_fetch_exception ());
            rc = 1;
        }
        else if (n > 0)
            memcpy (*out, PyBytes_AS_STRING (c->result), (size_t) n);
    }
    pyddp_wait_end (was);
    PyGILState_Release (g);
    return rc;
}

static bool check_callable (PyObject *o, const char *where, const char *what)
{
    if (o == Py_None || PyCallable_Check (o))
        return true;
    PyErr_Format (PyExc_TypeError, "%s: %s must be callable, not %s", where,
                  what, Py_TYPE (o)->tp_name);
    return false;
}

/* _run_on_main(func, post_func, run_post_on_main): func and post_func take
 * no arguments (the package binds them); returns func's result on main,
 * None elsewhere. */
static PyObject *py_run_on_main (PyObject *self, PyObject *args)
{
    static const char where[] = "ddp.run_on_main";
    struct pycall c1 = { 0 }, c2 = { 0 };
    PyObject *post, *res = NULL;
    int post_on_main, rc;

    (void) self;
    if (!PyArg_ParseTuple (args, "OOp", &c1.fn, &post, &post_on_main))
        return NULL;
    if (!check_callable (c1.fn, where, "func")
        || !check_callable (post, where, "post_func"))
        return NULL;
    c2.fn = post;
    if (pyddp_ensure_init () < 0)
        return NULL;
    DDP_CALL (rc, ddp_run_on_main (fn_trampoline, &c1,
                                   post == Py_None ? NULL : fn_trampoline,
                                   &c2, post_on_main));
    if (rc < 0) {
        const char *detail = ddp_last_error ();
        PyObject *mine = c1.exc ? c1.exc : c2.exc;
        if (mine == c1.exc)
            Py_XDECREF (c2.exc);
        else
            Py_XDECREF (c1.exc);
        pyddp_share_failure (rc, where, mine, false, detail);
    }
    else
        res = c1.result ? Py_NewRef (c1.result) : Py_NewRef (Py_None);
    Py_XDECREF (c1.result);
    Py_XDECREF (c2.result);
    if (rc >= 0) {
        Py_XDECREF (c1.exc);
        Py_XDECREF (c2.exc);
    }
    return res;
}

enum { BLOCK_MAIN_ONLY, BLOCK_RANK0_FIRST, BLOCK_LOCAL0_FIRST, NBLOCKS };

static const char *const block_names[NBLOCKS] = {
    "ddp.main_only", "ddp.rank0_first", "ddp.local_rank0_first",
};

static int block_call (int kind, ddp_fn_t fn, void *arg)
{
    switch (kind) {
    case BLOCK_MAIN_ONLY: return ddp_main_only (fn, arg);
    case BLOCK_RANK0_FIRST: return ddp_rank0_first (fn, arg);
    default: return ddp_local_rank0_first (fn, arg);
    }
}

/* _helper(kind, func): main_only / rank0_first / local_rank0_first with a
 * function; returns its result where it ran, None elsewhere. */
static PyObject *py_helper (PyObject *self, PyObject *args)
{
    struct pycall c = { 0 };
    PyObject *res = NULL;
    int kind, rc;

    (void) self;
    if (!PyArg_ParseTuple (args, "iO", &kind, &c.fn))
        return NULL;
    if (kind < 0 || kind >= NBLOCKS)
        return PyErr_Format (PyExc_ValueError, "unknown helper %d", kind);
    if (!PyCallable_Check (c.fn))
        return PyErr_Format (PyExc_TypeError, "%s: func must be callable, "
                             "not %s", block_names[kind],
                             Py_TYPE (c.fn)->tp_name);
    if (pyddp_ensure_init () < 0)
        return NULL;
    DDP_CALL (rc, block_call (kind, fn_trampoline, &c));
    if (rc < 0)
        pyddp_share_failure (rc, block_names[kind], c.exc, false,
                             ddp_last_error ());
    else {
        res = c.result ? Py_NewRef (c.result) : Py_NewRef (Py_None);
        Py_XDECREF (c.exc);
    }
    Py_XDECREF (c.result);
    return res;
}

/* ---- Blocks: the helpers as context managers ---------------------------
 * A with-block's body is not a function libddp can call back, and the
 * helpers' status exchange must go on (in rounds, past DDP_TIMEOUT) while
 * the body runs.  So a helper thread makes the libddp call, with a
 * callback that waits until the body has run on the caller's thread and
 * returns its outcome; libddp's watchdog takes this rank's part in the
 * rounds meanwhile, as for any long callback.  The caller's thread holds
 * pyddp_lib_lock from enter() to exit(): libddp is still entered by one thread
 * (the helper thread, on its behalf), and the body may only make local
 * calls (it is a local block). */

typedef struct {
    PyObject_HEAD
    int kind;
    bool started;       /* enter() started the thread */
    bool local;         /* entered inside a local block: no libddp at all */
    bool ran;           /* the body ran here as the helper's callback */
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    bool entered;       /* the callback runs: the body may run now */
    bool body_done;
    int body_status;
    bool returned;      /* the helper returned rc */
    int rc;
    char detail[512];   /* ddp_last_error() of the helper thread */
} Block;

static int block_cb (void *arg)
{
    Block *b = arg;
    int st;

    pthread_mutex_lock (&b->mu);
    b->entered = true;
    pthread_cond_broadcast (&b->cv);
    while (!b->body_done)
        pthread_cond_wait (&b->cv, &b->mu);
    st = b->body_status;
    pthread_mutex_unlock (&b->mu);
    return st;
}

static void *block_thread (void *arg)
{
    Block *b = arg;
    int rc = block_call (b->kind, block_cb, b);

    pthread_mutex_lock (&b->mu);
    b->rc = rc;
    if (rc < 0)
        snprintf (b->detail, sizeof (b->detail), "%s", ddp_last_error ());
    b->returned = true;
    pthread_cond_broadcast (&b->cv);
    pthread_mutex_unlock (&b->mu);
    return NULL;
}

static PyObject *Block_new (PyTypeObject *type, PyObject *args, PyObject *kw)
{
    Block *b;
    int kind;

    if (!PyArg_ParseTuple (args, "i", &kind))
        return NULL;
    (void) kw;
    if (kind < 0 || kind >= NBLOCKS)
        return PyErr_Format (PyExc_ValueError, "unknown block %d", kind);
    if (!(b = (Block *) type->tp_alloc (type, 0)))
        return NULL;
    b->kind = kind;
    pthread_mutex_init (&b->mu, NULL);
    pthread_cond_init (&b->cv, NULL);
    return (PyObject *) b;
}

static void Block_dealloc (Block *b)
{
    pthread_mutex_destroy (&b->mu);
    pthread_cond_destroy (&b->cv);
    Py_TYPE (b)->tp_free ((PyObject *) b);
}

/* Wait (GIL released) until the helper thread entered the callback or
 * returned; returns whether it entered. */
static bool block_wait_entry (Block *b)
{
    bool entered;
    int was = pyddp_wait_begin ();

    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock (&b->mu);
    while (!b->entered && !b->returned)
        pthread_cond_wait (&b->cv, &b->mu);
    entered = b->entered;
    pthread_mutex_unlock (&b->mu);
    Py_END_ALLOW_THREADS
    pyddp_wait_end (was);
    return entered;
}

/* Hand the body's status to the callback, wait for the helper's return
 * and join the thread (GIL released). */
static void block_finish (Block *b, int status)
{
    int was = pyddp_wait_begin ();

    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock (&b->mu);
    b->body_status = status;
    b->body_done = true;
    pthread_cond_broadcast (&b->cv);
    while (!b->returned)
        pthread_cond_wait (&b->cv, &b->mu);
    pthread_mutex_unlock (&b->mu);
    pthread_join (b->thread, NULL);
    Py_END_ALLOW_THREADS
    pyddp_wait_end (was);
}

/* The helper thread: signals stay with the program's threads. */
static int block_start (Block *b)
{
    sigset_t all, old;
    int rc;

    sigfillset (&all);
    pthread_sigmask (SIG_SETMASK, &all, &old);
    rc = pthread_create (&b->thread, NULL, block_thread, b);
    pthread_sigmask (SIG_SETMASK, &old, NULL);
    return rc;
}

static void lock_library (void)
{
    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock (&pyddp_lib_lock);
    Py_END_ALLOW_THREADS
}

/* enter(): True when this rank runs the body now; False when it must skip
 * it (main_only on another rank, once main's block has succeeded).
 * Raises RemoteError (every rank but the one that raised) when the block
 * failed where it ran first. */
static PyObject *Block_enter (Block *b, PyObject *unused)
{
    const char *where = block_names[b->kind];
    int rc;

    (void) unused;
    if (b->started || b->local)
        return PyErr_Format (PyExc_RuntimeError, "%s: a block can be entered "
                             "once", where);
    if (pyddp_ensure_init () < 0)
        return NULL;
    if (pyddp_local_depth > 0) {    /* only this rank is here: run the body */
        b->local = true;
        pyddp_local_depth++;
        Py_RETURN_TRUE;
    }
    lock_library ();
    if ((rc = block_start (b)) != 0) {
        pthread_mutex_unlock (&pyddp_lib_lock);
        errno = rc;
        return PyErr_SetFromErrno (PyExc_OSError);
    }
    b->started = true;
    Py_INCREF (b);              /* the thread uses b until joined */
    if (block_wait_entry (b)) {
        b->ran = true;
        pyddp_local_depth++;
        Py_RETURN_TRUE;
    }
    /* Returned without running the body here (the caller's reference
     * keeps b alive past the thread's). */
    Py_BEGIN_ALLOW_THREADS
    pthread_join (b->thread, NULL);
    Py_END_ALLOW_THREADS
    pthread_mutex_unlock (&pyddp_lib_lock);
    Py_DECREF (b);
    if (b->rc < 0)
        return pyddp_share_failure (b->rc, where, NULL, false, b->detail);
    Py_RETURN_FALSE;
}

/* exit(exc): exc is what the body raised (None if nothing).  Returns None
 * (the body's own exception, if any, propagates: the caller does not
 * suppress it) or raises RemoteError where another rank's body failed. */
static PyObject *Block_exit (Block *b, PyObject *exc)
{
    const char *where = block_names[b->kind];
    int rc;

    if (b->local) {
        b->local = false;
        pyddp_local_depth--;
        Py_RETURN_NONE;
    }
    if (!b->ran)                /* skipped body (or never entered) */
        Py_RETURN_NONE;
    b->ran = false;
    pyddp_local_depth--;
    block_finish (b, exc == Py_None ? 0 : 1);
    pthread_mutex_unlock (&pyddp_lib_lock);
    Py_DECREF (b);              /* the thread's; the caller's keeps b */
    rc = b->rc;
    if (rc >= 0)
        Py_RETURN_NONE;
    if (exc != Py_None) {
        /* This rank's body raised: the others learn it, exc propagates. */
        Py_INCREF (exc);
        pyddp_share_failure (rc, where, exc, true, b->detail);
        if (PyErr_Occurred ())
            return NULL;
        Py_RETURN_NONE;
    }
    return pyddp_share_failure (rc, where, NULL, false, b->detail);
}

static PyMethodDef Block_methods[] = {
    { "enter", (PyCFunction) Block_enter, METH_NOARGS,
      "Start the block; True if this rank runs its body now." },
    { "exit", (PyCFunction) Block_exit, METH_O,
      "End the block with what its body raised (None if nothing)." },
    { NULL, NULL, 0, NULL }
};

static PyTypeObject BlockType = {
    PyVarObject_HEAD_INIT (NULL, 0)
    .tp_name = "ddp._ddp._Block",
    .tp_basicsize = sizeof (Block),
    .tp_dealloc = (destructor) Block_dealloc,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "The libddp side of main_only(), rank0_first() and "
              "local_rank0_first() as context managers.",
    .tp_methods = Block_methods,
    .tp_new = Block_new,
};

/* ---- Local blocks (the main_process_only decorator) --------------------- */

static PyObject *py_local_enter (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    pyddp_local_depth++;
    Py_RETURN_NONE;
}

static PyObject *py_local_exit (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    if (pyddp_local_depth > 0)
        pyddp_local_depth--;
    Py_RETURN_NONE;
}

static PyObject *py_in_local (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    return PyBool_FromLong (pyddp_local_depth > 0);
}

/* ---- Methods ----------------------------------------------------------- */

PyMethodDef pyddp_helpers_methods[] = {
    { "_run_on_main", py_run_on_main, METH_VARARGS,
      "_run_on_main(func, post_func, run_post_on_main)" },
    { "_helper", py_helper, METH_VARARGS, "_helper(kind, func)" },
    { "_local_enter", py_local_enter, METH_NOARGS, "Enter a local block." },
    { "_local_exit", py_local_exit, METH_NOARGS, "Leave a local block." },
    { "_in_local", py_in_local, METH_NOARGS, "True inside a local block." },
    { NULL, NULL, 0, NULL }
};

int pyddp_helpers_init (PyObject *m)
{
    static const struct { const char *name; int value; } c[] = {
        { "_MAIN_ONLY", BLOCK_MAIN_ONLY },
        { "_RANK0_FIRST", BLOCK_RANK0_FIRST },
        { "_LOCAL_RANK0_FIRST", BLOCK_LOCAL0_FIRST },
    };

    if (PyType_Ready (&BlockType) < 0
        || PyModule_AddObject (m, "_Block", Py_NewRef (&BlockType)) < 0)
        return -1;
    for (size_t i = 0; i < sizeof (c) / sizeof (c[0]); i++)
        if (PyModule_AddIntConstant (m, c[i].name, c[i].value) < 0)
            return -1;
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
