/* ddpmodule.c - ddp._ddp, the C half of the Python module ddp: libddp's
 * calls for Python programs, on the public API of <ddp.h> only.
 *
 * The package ddp/__init__.py re-exports what is public here and adds what
 * is easier in Python (pickling, the context managers' protocol, the
 * sampler's iterator).  Rules kept by every function here:
 *
 *   - Every call initializes libddp on first use (ddp_init), so init() is
 *     optional.
 *   - The GIL is released during every call that may wait for other ranks,
 *     and libddp is entered by one thread at a time (lib_lock, recursive so
 *     that a callback may call back in).
 *   - Callbacks (run_on_main's func, a compute function) run Python code
 *     with the GIL taken back; what they raise is kept and, after the
 *     helper's own collective has told every rank that it failed, shared in
 *     one more collective (share_failure): the rank where it was raised
 *     gets its own exception back, every other rank a RemoteError with the
 *     exception's type name and message.
 *   - Inside a callback or a main-only block only this rank runs
 *     ("local"): barrier() returns at once and the helpers run here alone
 *     (speechbrain's MAIN_PROC_ONLY); the data collectives refuse.
 *   - A signal during a wait: Python's handler runs when the wait ends; a
 *     second SIGINT (or SIGTERM, where Python handles it) during the same
 *     wait ends the process (interrupt guard below), so nobody is stuck.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>

#include "config.h"

#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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

#define MSG_MAX 4096            /* bytes of a shared exception message */
#define SCALARS_STACK 32        /* sequence elements reduced on the stack */

static PyObject *Error, *PeerError, *TimeoutErr, *RemoteError;

/* ---- State --------------------------------------------------------------- */

static bool initialized;                /* ddp_init succeeded (GIL held) */
static pthread_mutex_t lib_lock = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;
static _Thread_local int local_depth;   /* in a callback / main-only block */
static bool stop_installed;             /* ddp_stop_signals() was called */
/* The first sticky fault's message (it names the rank): later calls fail
 * with "an earlier failure broke the job" and repeat it. */
static char first_fault[512];

/* ---- Interrupt guard --------------------------------------------------
 * While a thread waits in libddp with the GIL released, Python's signal
 * handler only flags the signal: the KeyboardInterrupt comes when the wait
 * ends (a collective within DDP_TIMEOUT; a helper when the rank it waits
 * for is done, which may be long).  The guard wraps the handler of SIGINT
 * and SIGTERM where Python (or the program) installed one: the first such
 * signal during a wait writes a note, a second one during the same wait
 * puts back the default action and raises it, ending the process (its
 * peers then name it).  Async-signal-safe: atomics, write, sigaction. */

static atomic_int in_wait;              /* a thread is in a libddp wait */
static atomic_int interrupts;           /* guarded signals during it */
static struct sigaction guard_saved[NSIG];
static bool guard_on[NSIG];
static char guard_note[320];
static size_t guard_note_len;

static void guard_chain (int sig, siginfo_t *info, void *uctx)
{
    const struct sigaction *old = &guard_saved[sig];

    if (old->sa_flags & SA_SIGINFO) {
        if (old->sa_sigaction)
            old->sa_sigaction (sig, info, uctx);
    }
    else if (old->sa_handler != SIG_DFL && old->sa_handler != SIG_IGN
             && old->sa_handler != NULL)
        old->sa_handler (sig);
}

static void guard_handler (int sig, siginfo_t *info, void *uctx)
{
    int saved_errno = errno;

    guard_chain (sig, info, uctx);
    if (atomic_load (&in_wait)) {
        if (atomic_fetch_add (&interrupts, 1) == 0) {
            if (write (STDERR_FILENO, guard_note, guard_note_len) < 0) {
                /* nothing to do: stderr is gone */
            }
        }
        else {
            struct sigaction dfl;

            memset (&dfl, 0, sizeof (dfl));
            dfl.sa_handler = SIG_DFL;
            sigemptyset (&dfl.sa_mask);
            (void) sigaction (sig, &dfl, NULL);
            (void) raise (sig);     /* delivered once this handler returns */
        }
    }
    errno = saved_errno;
}

/* Wrap sig's handler, if it has one of its own (not default, not ignored,
 * not ours).  Called once libddp is initialized (the note names the rank). */
static void guard_install (int sig)
{
    struct sigaction cur, ours;

    if (sigaction (sig, NULL, &cur) != 0)
        return;
    if (cur.sa_flags & SA_SIGINFO) {
        if (cur.sa_sigaction == guard_handler || cur.sa_sigaction == NULL)
            return;
    }
    else if (cur.sa_handler == SIG_DFL || cur.sa_handler == SIG_IGN)
        return;
    memset (&ours, 0, sizeof (ours));
    ours.sa_sigaction = guard_handler;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK;
    sigfillset (&ours.sa_mask);
    guard_saved[sig] = cur;
    if (sigaction (sig, &ours, NULL) == 0)
        guard_on[sig] = true;
}

static void guard_setup (void)
{
    int n = snprintf (guard_note, sizeof (guard_note),
                      "[ddp rank %d/%d] interrupted while waiting for the "
                      "other ranks: the interrupt takes effect when the wait "
                      "ends; interrupt again to end this process now\n",
                      ddp_rank (), ddp_world_size ());

    guard_note_len = n < 0 ? 0 : (size_t) n < sizeof (guard_note)
                                 ? (size_t) n : sizeof (guard_note) - 1;
    guard_install (SIGINT);
    guard_install (SIGTERM);
}

/* A wait begins / ends; returns / takes what to restore (waits nest when a
 * callback calls back into the module). */
static int wait_begin (void)
{
    int was = atomic_exchange (&in_wait, 1);

    if (!was)
        atomic_store (&interrupts, 0);
    return was;
}

static void wait_end (int was)
{
    atomic_store (&in_wait, was);
}

/* Run one libddp call: the GIL released, libddp held by this thread. */
#define DDP_CALL(rc, expr)                                                  \
    do {                                                                    \
        int ddp_was_ = wait_begin ();                                       \
        Py_BEGIN_ALLOW_THREADS                                              \
        pthread_mutex_lock (&lib_lock);                                     \
        (rc) = (expr);                                                      \
        pthread_mutex_unlock (&lib_lock);                                   \
        Py_END_ALLOW_THREADS                                                \
        wait_end (ddp_was_);                                                \
    } while (0)

/* ---- Errors ---------------------------------------------------------- */

static bool sticky (int rc)
{
    return rc == DDP_EPEER || rc == DDP_ETIMEDOUT || rc == DDP_ETRANSPORT;
}

/* A helper's failure every rank knows about, so that all of them can take
 * part in share_failure(): a callback here (EUSER), on another rank
 * (EREMOTE), or a bad argument or allocation here (EINVAL, ENOMEM) that
 * the helper reported to the others as EREMOTE. */
static bool shareable (int rc)
{
    return rc == DDP_EUSER || rc == DDP_EREMOTE || rc == DDP_EINVAL
           || rc == DDP_ENOMEM;
}

static PyObject *error_class (int rc)
{
    switch (rc) {
    case DDP_EPEER: return PeerError;
    case DDP_ETIMEDOUT: return TimeoutErr;
    case DDP_EREMOTE: return RemoteError;
    }
    return Error;
}

/* Set attribute name of exc to v (a new reference, stolen); false with an
 * exception set if that failed. */
static bool set_attr (PyObject *exc, const char *name, PyObject *v)
{
    int rc = v ? PyObject_SetAttrString (exc, name, v) : -1;

    Py_XDECREF (v);
    return rc == 0;
}

/* Raise cls(msg) with .code = rc and .where; returns NULL. */
static PyObject *raise_error (PyObject *cls, int rc, const char *where,
                              const char *msg)
{
    PyObject *exc = PyObject_CallFunction (cls, "s", msg);

    if (!exc)
        return NULL;
    if (set_attr (exc, "code", PyLong_FromLong (rc))
        && set_attr (exc, "where", PyUnicode_FromString (where)))
        PyErr_SetObject (cls, exc);
    Py_DECREF (exc);
    return NULL;
}

/* Raise the exception for libddp's rc in 'where', with detail (why, from
 * ddp_last_error; may be NULL or "").  A signal that came during the call
 * (KeyboardInterrupt) wins.  Returns NULL. */
static PyObject *fail (int rc, const char *where, const char *detail)
{
    char msg[1024];

    if (PyErr_CheckSignals () < 0)
        return NULL;
    if (!detail)
        detail = "";
    if (sticky (rc)) {
        if (!first_fault[0] && detail[0])
            snprintf (first_fault, sizeof (first_fault), "%s", detail);
        if (first_fault[0])
            detail = first_fault;
    }
    if (rc == DDP_ENOINIT)
        detail = "libddp was finalized; call ddp.init() again";
    snprintf (msg, sizeof (msg), "%s: %s%s%s", where, ddp_strerror (rc),
              detail[0] ? ": " : "", detail);
    return raise_error (error_class (rc), rc, where, msg);
}

/* fail() for a call this thread just made.  ddp_last_error() is what the
 * core recorded (init, the collectives and their faults); the helpers log
 * their own argument errors and leave it as it was, so it is only read for
 * the codes the core gives. */
static PyObject *fail_here (int rc, const char *where)
{
    bool core = rc != DDP_EINVAL && rc != DDP_ENOMEM && rc != DDP_EUSER
                && rc != DDP_EREMOTE && rc != DDP_EMISMATCH;

    return fail (rc, where, core ? ddp_last_error () : "");
}

static PyObject *fetch_exception (void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException ();
#else
    PyObject *t, *v, *tb;

    PyErr_Fetch (&t, &v, &tb);
    PyErr_NormalizeException (&t, &v, &tb);
    if (v && tb)
        PyException_SetTraceback (v, tb);
    Py_XDECREF (t);
    Py_XDECREF (tb);
    return v;
#endif
}

/* Raise exc again (stolen). */
static void restore_exception (PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException (exc);
#else
    PyObject *t = (PyObject *) Py_TYPE (exc);

    Py_INCREF (t);
    PyErr_Restore (t, exc, PyException_GetTraceback (exc));
#endif
}

/* "Type\nmessage" of exc, UTF-8, in a new bytes object (at most MSG_MAX
 * bytes of message); a type outside builtins is named module.qualname. */
static PyObject *describe_exception (PyObject *exc)
{
    PyObject *type = (PyObject *) Py_TYPE (exc), *mod, *qual, *text, *r;

    mod = PyObject_GetAttrString (type, "__module__");
    qual = PyObject_GetAttrString (type, "__qualname__");
    text = PyObject_Str (exc);
    PyErr_Clear ();     /* a broken __str__ still gets reported */
    if (mod && qual && PyUnicode_Check (mod)
        && PyUnicode_CompareWithASCIIString (mod, "builtins") != 0)
        r = PyUnicode_FromFormat ("%U.%U", mod, qual);
    else if (qual)
        r = PyUnicode_FromFormat ("%S", qual);
    else
        r = PyUnicode_FromString (Py_TYPE (exc)->tp_name);
    Py_XDECREF (mod);
    Py_XDECREF (qual);
    if (r && text) {
        PyObject *full = PyUnicode_FromFormat ("%U\n%U", r, text);
        Py_SETREF (r, full);
    }
    Py_XDECREF (text);
    if (!r) {
        PyErr_Clear ();
        return PyBytes_FromString ("Exception\n(no message)");
    }
    text = PyUnicode_AsEncodedString (r, "utf-8", "replace");
    Py_DECREF (r);
    if (text && PyBytes_GET_SIZE (text) > MSG_MAX)
        Py_SETREF (text, PyBytes_FromStringAndSize (PyBytes_AS_STRING (text),
                                                    MSG_MAX));
    return text;
}

/* Raise RemoteError for rank r's description "Type\nmessage" (len bytes);
 * others: how many more ranks failed.  Returns NULL. */
static PyObject *raise_remote (const char *where, int r, const char *d,
                               size_t len, int others)
{
    const char *nl = memchr (d, '\n', len);
    size_t tlen = nl ? (size_t) (nl - d) : len;
    PyObject *type = PyUnicode_DecodeUTF8 (d, (Py_ssize_t) tlen, "replace");
    PyObject *text = nl ? PyUnicode_DecodeUTF8 (nl + 1,
                                                (Py_ssize_t) (len - tlen - 1),
                                                "replace")
                        : PyUnicode_FromString ("");
    PyObject *msg = NULL, *exc = NULL;

    if (!type || !text)
        goto out;
    msg = PyUnicode_FromFormat ("%s: rank %d raised %U%s%U%s", where, r, type,
                                PyUnicode_GET_LENGTH (text) ? ": " : "", text,
                                others == 0 ? "" : " (and other ranks too)");
    if (!msg || !(exc = PyObject_CallOneArg (RemoteError, msg)))
        goto out;
    if (set_attr (exc, "code", PyLong_FromLong (DDP_EREMOTE))
        && set_attr (exc, "where", PyUnicode_FromString (where))
        && set_attr (exc, "rank", PyLong_FromLong (r))
        && set_attr (exc, "type_name", Py_NewRef (type))
        && set_attr (exc, "remote_message", Py_NewRef (text)))
        PyErr_SetObject (RemoteError, exc);
out:
    Py_XDECREF (type);
    Py_XDECREF (text);
    Py_XDECREF (msg);
    Py_XDECREF (exc);
    return NULL;
}

/* A helper returned rc < 0.  If every rank knows it failed (shareable),
 * all of them exchange what went wrong in one allgather: the rank whose
 * Python code raised 'mine' (stolen; NULL if none here) gets it back, the
 * others a RemoteError naming the lowest such rank, its exception's type
 * and message.  Otherwise, or if the exchange fails, the error of rc (or of
 * the exchange).  Returns NULL.  With keep_mine, 'mine' is not raised again
 * (the caller lets it propagate itself) and NULL is returned without an
 * exception set. */
static PyObject *share_failure (int rc, const char *where, PyObject *mine,
                                bool keep_mine, const char *detail)
{
    PyObject *desc = NULL;
    void *out = NULL;
    size_t *lens = NULL, off = 0, first_off = 0;
    const char *buf = "";
    Py_ssize_t len = 0;
    int xrc, first = -1, others = 0;

    if (!shareable (rc) || local_depth > 0) {
        if (mine && !keep_mine) {
            restore_exception (mine);
            return NULL;
        }
        Py_XDECREF (mine);
        return keep_mine && mine ? NULL : fail (rc, where, detail);
    }
    if (mine) {
        if (!(desc = describe_exception (mine)))
            PyErr_Clear ();
        else {
            buf = PyBytes_AS_STRING (desc);
            len = PyBytes_GET_SIZE (desc);
        }
    }
    DDP_CALL (xrc, ddp_allgatherv_bytes (buf, (size_t) len, &out, &lens));
    if (xrc < 0)
        detail = ddp_last_error ();
    Py_XDECREF (desc);
    if (mine) {
        free (out);
        free (lens);
        if (keep_mine) {
            Py_DECREF (mine);
            return NULL;
        }
        restore_exception (mine);
        return NULL;
    }
    if (xrc < 0)
        return fail (xrc, where, detail);
    for (int r = 0; r < ddp_world_size (); r++) {
        if (lens[r] > 0 && first < 0) {
            first = r;
            first_off = off;
        }
        else if (lens[r] > 0)
            others++;
        off += lens[r];
    }
    if (first >= 0)
        raise_remote (where, first, (const char *) out + first_off,
                      lens[first], others);
    else
        fail (rc, where, detail);
    free (out);
    free (lens);
    return NULL;
}

/* ---- Initialization ----------------------------------------------------- */

static int do_init (void)
{
    int rc;

    DDP_CALL (rc, ddp_init ());
    if (rc < 0) {
        fail_here (rc, "ddp.init");
        return -1;
    }
    if (!initialized) {
        first_fault[0] = '\0';
        guard_setup ();
    }
    initialized = true;
    return 0;
}

/* Initialize on first use; 0, or -1 with an exception set. */
static inline int ensure_init (void)
{
    return initialized ? 0 : do_init ();
}

/* The data collectives refuse to run where only this rank is. */
static int refuse_local (const char *where)
{
    char msg[400];

    if (local_depth == 0)
        return 0;
    snprintf (msg, sizeof (msg), "%s: called inside a main-only block or a "
              "helper's callback, where only this rank runs: the other "
              "ranks would never join; call it outside the block", where);
    raise_error (Error, DDP_EINVAL, where, msg);
    return -1;
}

PyDoc_STRVAR (init_doc,
"init()\n--\n\n"
"Start libddp: find this process's rank and peers (PMIx under srun --ddp\n"
"or another PMIx launcher; a single process otherwise) and connect the\n"
"backend.\n"
"Optional: every function of the module initializes on first use.  Calling\n"
"it again does nothing.  Raises ddp.Error (with .code) if the job cannot\n"
"start, e.g. WORLD_SIZE > 1 without a PMIx launcher.");

static PyObject *py_init (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    if (do_init () < 0)
        return NULL;
    Py_RETURN_NONE;
}

PyDoc_STRVAR (finalize_doc,
"finalize()\n--\n\n"
"Release libddp after a final barrier with the other ranks (and the\n"
"straggler report, with DDP_STRAGGLERS=1).  Done at exit by itself, unless\n"
"the program ends with an uncaught exception: then the process just exits\n"
"and the other ranks name it as dead instead of waiting in a barrier.\n"
"A later call of any function initializes again.  Does nothing when not\n"
"initialized.");

static PyObject *py_finalize (PyObject *self, PyObject *unused)
{
    int rc;

    (void) self;
    (void) unused;
    if (!initialized)
        Py_RETURN_NONE;
    if (refuse_local ("ddp.finalize") < 0)
        return NULL;
    DDP_CALL (rc, ddp_finalize ());
    initialized = false;
    if (rc < 0 && rc != DDP_ENOINIT)
        return fail_here (rc, "ddp.finalize");
    Py_RETURN_NONE;
}

static PyObject *py_is_initialized (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    return PyBool_FromLong (initialized);
}

/* ---- Identity ----------------------------------------------------------- */

#define IDENTITY(name, expr, doc)                                           \
    PyDoc_STRVAR (name##_doc, #name "()\n--\n\n" doc);                      \
    static PyObject *py_##name (PyObject *self, PyObject *unused)           \
    {                                                                       \
        (void) self;                                                        \
        (void) unused;                                                      \
        if (ensure_init () < 0)                                             \
            return NULL;                                                    \
        return (expr);                                                      \
    }

IDENTITY (rank, PyLong_FromLong (ddp_rank ()),
          "This process's rank, 0 .. world_size() - 1.")
IDENTITY (world_size, PyLong_FromLong (ddp_world_size ()),
          "The number of processes in the job (1 for a single process).")
IDENTITY (local_rank, PyLong_FromLong (ddp_local_rank ()),
          "This process's rank among the processes of its node.")
IDENTITY (local_world_size, PyLong_FromLong (ddp_local_world_size ()),
          "The number of processes of the job on this node.")
IDENTITY (node_rank, PyLong_FromLong (ddp_node_rank ()),
          "The index of this node in the job, 0-based.")
IDENTITY (num_nodes, PyLong_FromLong (ddp_num_nodes ()),
          "The number of nodes of the job.")
IDENTITY (is_main, PyBool_FromLong (ddp_is_main ()),
          "True on the main process (rank 0), and in a single process.")
IDENTITY (is_local_main, PyBool_FromLong (ddp_is_local_main ()),
          "True on local rank 0 of each node.")
IDENTITY (is_distributed, PyBool_FromLong (ddp_is_distributed ()),
          "True when the job has more than one process.")
IDENTITY (backend, PyUnicode_FromString (ddp_backend_name ()),
          "The backend in use: 'host' or 'nccl'.")

PyDoc_STRVAR (version_doc,
"version()\n--\n\nThe libddp version, 'MAJOR.MINOR.PATCH' (needs no init).");

static PyObject *py_version (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    return PyUnicode_FromString (ddp_version ());
}

/* ---- Barrier and all_reduce --------------------------------------------- */

PyDoc_STRVAR (barrier_doc,
"barrier()\n--\n\n"
"Wait until every rank has called barrier().  Bounded by DDP_TIMEOUT\n"
"(default 30 s): a rank that does not come is named in ddp.TimeoutError,\n"
"a dead one in ddp.PeerError.  Inside a main-only block (run_on_main's\n"
"func, main_only(), main_process_only) it returns at once, as only this\n"
"rank is there (speechbrain's ddp_barrier does the same).");

static PyObject *py_barrier (PyObject *self, PyObject *unused)
{
    int rc;

    (void) self;
    (void) unused;
    if (!initialized && do_init () < 0)
        return NULL;
    if (local_depth > 0)
        Py_RETURN_NONE;
    DDP_CALL (rc, ddp_barrier ());
    if (rc < 0)
        return fail_here (rc, "ddp.barrier");
    Py_RETURN_NONE;
}

static const char *const op_names[DDP_NUM_OPS] = {
    [DDP_SUM] = "sum", [DDP_PROD] = "prod", [DDP_MIN] = "min",
    [DDP_MAX] = "max", [DDP_AVG] = "avg",
};

/* The op named by o (a str); -1 with TypeError/ValueError set. */
static int parse_op (PyObject *o, const char *where)
{
    if (!PyUnicode_Check (o)) {
        PyErr_Format (PyExc_TypeError, "%s: op must be a str ('sum', 'prod', "
                      "'min', 'max' or 'avg'), not %s", where,
                      Py_TYPE (o)->tp_name);
        return -1;
    }
    for (int i = 0; i < DDP_NUM_OPS; i++)
        if (PyUnicode_CompareWithASCIIString (o, op_names[i]) == 0)
            return i;
    PyErr_Format (PyExc_ValueError, "%s: unknown op %R: use 'sum', 'prod', "
                  "'min', 'max' or 'avg'", where, o);
    return -1;
}

/* The dtype of a buffer's elements (struct module format, item size); -1
 * with ValueError set for one libddp does not reduce. */
static int buffer_dtype (const Py_buffer *v, const char *where)
{
    const char *f = v->format ? v->format : "B";
    char kind = 0;

    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    else if (*f == '>' || *f == '!') {
        PyErr_Format (PyExc_ValueError, "%s: the buffer holds big-endian "
                      "elements (format %s): convert to native byte order",
                      where, v->format);
        return -1;
    }
    if (f[0] && !f[1])
        kind = strchr ("bhilqn", f[0]) ? 'i' : strchr ("BHILQN", f[0]) ? 'u'
             : strchr ("efd", f[0]) ? 'f' : 0;
    switch (kind == 0 ? 0 : v->itemsize) {
    case 1: if (kind != 'f') return kind == 'i' ? DDP_INT8 : DDP_UINT8; break;
    case 2: if (kind == 'f') return DDP_FLOAT16; break;
    case 4: return kind == 'i' ? DDP_INT32 : kind == 'u' ? DDP_UINT32
                                                         : DDP_FLOAT32;
    case 8: return kind == 'i' ? DDP_INT64 : kind == 'u' ? DDP_UINT64
                                                         : DDP_FLOAT64;
    }
    PyErr_Format (PyExc_ValueError, "%s: cannot reduce elements of format "
                  "'%s' (%zd bytes): use 8-, 32- or 64-bit integers, "
                  "float16, float32 or float64", where,
                  v->format ? v->format : "B", v->itemsize);
    return -1;
}

/* all_reduce of a buffer: in place if writable, else into a new
 * memoryview of the same format and shape. */
static PyObject *reduce_buffer (PyObject *x, int op)
{
    static const char where[] = "ddp.all_reduce";
    const int flags = PyBUF_FORMAT | PyBUF_ND | PyBUF_C_CONTIGUOUS;
    Py_buffer v;
    PyObject *res = NULL, *store = NULL, *mv = NULL;
    bool writable = true;
    void *recv;
    int dt, rc;

    if (PyObject_GetBuffer (x, &v, flags | PyBUF_WRITABLE) < 0) {
        PyErr_Clear ();
        writable = false;
        if (PyObject_GetBuffer (x, &v, flags) < 0) {
            PyErr_Clear ();
            return PyErr_Format (PyExc_ValueError, "%s: the %s is not one "
                                 "C-contiguous block: pass a contiguous copy",
                                 where, Py_TYPE (x)->tp_name);
        }
    }
    if ((dt = buffer_dtype (&v, where)) < 0)
        goto out;
    recv = v.buf;
    if (!writable) {
        if (!(store = PyByteArray_FromStringAndSize (NULL, v.len)))
            goto out;
        recv = PyByteArray_AS_STRING (store);
    }
    DDP_CALL (rc, ddp_allreduce (v.buf, recv, (size_t) (v.len / v.itemsize),
                                 (ddp_dtype_t) dt, (ddp_op_t) op));
    if (rc < 0) {
        fail_here (rc, where);
        goto out;
    }
    if (writable)
        res = Py_NewRef (x);
    else if ((mv = PyMemoryView_FromObject (store))) {
        /* The native format of the dtype: '<i' (4 bytes) is 'i' here. */
        static const char native[DDP_NUM_DTYPES] = {
            [DDP_INT8] = 'b', [DDP_UINT8] = 'B', [DDP_INT32] = 'i',
            [DDP_UINT32] = 'I', [DDP_INT64] = 'q', [DDP_UINT64] = 'Q',
            [DDP_FLOAT16] = 'e', [DDP_FLOAT32] = 'f', [DDP_FLOAT64] = 'd',
        };
        char fmt[2] = { native[dt], '\0' };
        PyObject *shape = PyTuple_New (v.ndim);
        for (int i = 0; shape && i < v.ndim; i++) {
            PyObject *d = PyLong_FromSsize_t (v.shape ? v.shape[i]
                                                      : v.len / v.itemsize);
            if (!d) {
                Py_CLEAR (shape);
                break;
            }
            PyTuple_SET_ITEM (shape, i, d);
        }
        if (shape)
            res = PyObject_CallMethod (mv, "cast", "sO", fmt, shape);
        Py_XDECREF (shape);
    }
out:
    Py_XDECREF (mv);
    Py_XDECREF (store);
    PyBuffer_Release (&v);
    return res;
}

/* all_reduce of ints and floats, n of them at items (borrowed). */
static PyObject *reduce_numbers (PyObject *const *items, Py_ssize_t n,
                                 int op, bool as_tuple, bool scalar)
{
    static const char where[] = "ddp.all_reduce";
    union num { int64_t i; double f; } stackbuf[SCALARS_STACK], *b = stackbuf;
    bool floats = op == DDP_AVG;    /* an average is a float */
    PyObject *res = NULL;
    int rc;

    for (Py_ssize_t k = 0; k < n; k++) {
        if (PyFloat_Check (items[k]))
            floats = true;
        else if (!PyLong_Check (items[k])) {
            if (scalar)
                return PyErr_Format (PyExc_TypeError, "%s: x is a %s: pass an "
                                     "int, a float, a sequence of them or a "
                                     "buffer (array.array, numpy array)",
                                     where, Py_TYPE (items[k])->tp_name);
            return PyErr_Format (PyExc_TypeError, "%s: element %zd of the "
                                 "sequence is a %s: a sequence must hold ints "
                                 "and floats only", where, k,
                                 Py_TYPE (items[k])->tp_name);
        }
    }
    if (n > SCALARS_STACK && !(b = PyMem_Calloc ((size_t) n, sizeof (*b))))
        return PyErr_NoMemory ();
    for (Py_ssize_t k = 0; k < n; k++) {
        if (floats) {
            b[k].f = PyFloat_AsDouble (items[k]);
            if (b[k].f == -1. && PyErr_Occurred ())
                goto out;
        }
        else {
            int over = 0;
            b[k].i = PyLong_AsLongLongAndOverflow (items[k], &over);
            if (over) {
                PyErr_Format (PyExc_OverflowError, "%s: %R does not fit in "
                              "64 bits: pass a float", where, items[k]);
                goto out;
            }
            if (b[k].i == -1 && PyErr_Occurred ())
                goto out;
        }
    }
    DDP_CALL (rc, ddp_allreduce (b, b, (size_t) n,
                                 floats ? DDP_FLOAT64 : DDP_INT64,
                                 (ddp_op_t) op));
    if (rc < 0) {
        fail_here (rc, where);
        goto out;
    }
    if (scalar) {
        res = floats ? PyFloat_FromDouble (b[0].f)
                     : PyLong_FromLongLong (b[0].i);
        goto out;
    }
    if (!(res = as_tuple ? PyTuple_New (n) : PyList_New (n)))
        goto out;
    for (Py_ssize_t k = 0; k < n; k++) {
        PyObject *o = floats ? PyFloat_FromDouble (b[k].f)
                             : PyLong_FromLongLong (b[k].i);
        if (!o) {
            Py_CLEAR (res);
            goto out;
        }
        if (as_tuple)
            PyTuple_SET_ITEM (res, k, o);
        else
            PyList_SET_ITEM (res, k, o);
    }
out:
    if (b != stackbuf)
        PyMem_Free (b);
    return res;
}

PyDoc_STRVAR (all_reduce_doc,
"all_reduce(x, op='sum')\n--\n\n"
"Reduce x over all ranks with op ('sum', 'prod', 'min', 'max', 'avg') and\n"
"return the result, the same on every rank (bitwise: a fixed order).\n"
"\n"
"x is an int or a float (the result is one too), a list or tuple of them\n"
"(a new list or tuple; ints are reduced as 64-bit integers, and as float64\n"
"as soon as one element is a float), or any C-contiguous buffer\n"
"(array.array, numpy array, bytearray, memoryview) of 8-, 32- or 64-bit\n"
"integers, float16, float32 or float64: a writable one is reduced in place\n"
"and returned, a read-only one into a new memoryview of the same format\n"
"and shape.  'avg' of ints and sequences gives floats; of an integer\n"
"buffer, integers truncated toward zero (as libddp's DDP_AVG).\n"
"\n"
"Every rank must pass the same kind of x with the same length and op.\n"
"Raises TypeError / ValueError for an x or op it cannot reduce (on this\n"
"rank, before any communication: the others then time out naming it),\n"
"ddp.PeerError / ddp.TimeoutError when a rank died or did not come.");

static PyObject *py_all_reduce (PyObject *self, PyObject *const *args,
                                Py_ssize_t nargs, PyObject *kwnames)
{
    static const char where[] = "ddp.all_reduce";
    PyObject *x = NULL, *opo = NULL, *seq, *res;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE (kwnames) : 0;
    int op = DDP_SUM;

    (void) self;
    if (nargs + nkw > 2 || nargs > 2)
        return PyErr_Format (PyExc_TypeError, "%s() takes x and op, got %zd "
                             "arguments", where, nargs + nkw);
    if (nargs >= 1)
        x = args[0];
    if (nargs == 2)
        opo = args[1];
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM (kwnames, k);
        PyObject **slot =
            PyUnicode_CompareWithASCIIString (name, "x") == 0 ? &x
            : PyUnicode_CompareWithASCIIString (name, "op") == 0 ? &opo : NULL;
        if (!slot)
            return PyErr_Format (PyExc_TypeError, "%s() got an unexpected "
                                 "keyword argument %R", where, name);
        if (*slot)
            return PyErr_Format (PyExc_TypeError, "%s() got %R twice", where,
                                 name);
        *slot = args[nargs + k];
    }
    if (!x)
        return PyErr_Format (PyExc_TypeError, "%s() missing x", where);
    if (opo && (op = parse_op (opo, where)) < 0)
        return NULL;
    if (ensure_init () < 0 || refuse_local (where) < 0)
        return NULL;
    if (PyLong_Check (x) || PyFloat_Check (x))
        return reduce_numbers (&x, 1, op, false, true);
    if (PyObject_CheckBuffer (x))
        return reduce_buffer (x, op);
    if (PyList_Check (x) || PyTuple_Check (x)) {
        if (!(seq = PySequence_Fast (x, "")))
            return NULL;
        res = reduce_numbers (PySequence_Fast_ITEMS (seq),
                              PySequence_Fast_GET_SIZE (seq), op,
                              PyTuple_Check (x), false);
        Py_DECREF (seq);
        return res;
    }
    return PyErr_Format (PyExc_TypeError, "%s: x is a %s: pass an int, a "
                         "float, a list or tuple of them or a buffer "
                         "(array.array, numpy array)", where,
                         Py_TYPE (x)->tp_name);
}

/* ---- Callbacks ---------------------------------------------------------- */

struct pycall {
    PyObject *fn;           /* borrowed: the callable, no arguments */
    PyObject *result;       /* what it returned (new reference) */
    PyObject *exc;          /* what it raised (new reference) */
    bool want_bytes;        /* a compute function: result must be bytes */
};

/* Call c->fn as a local block (GIL held); 0, or 1 with c->exc set. */
static int pycall_run (struct pycall *c)
{
    PyObject *r;

    local_depth++;
    r = PyObject_CallNoArgs (c->fn);
    local_depth--;
    if (r && c->want_bytes && !PyBytes_Check (r)) {
        PyErr_Format (PyExc_TypeError, "the compute function returned a %s, "
                      "not bytes", Py_TYPE (r)->tp_name);
        Py_CLEAR (r);
    }
    if (!r) {
        Py_XSETREF (c->exc, fetch_exception ());
        return 1;
    }
    Py_XSETREF (c->result, r);
    return 0;
}

/* A ddp_fn_t: called by libddp on this thread, without the GIL. */
static int fn_trampoline (void *arg)
{
    PyGILState_STATE g = PyGILState_Ensure ();
    int was = atomic_exchange (&in_wait, 0), rc;

    rc = pycall_run (arg);
    atomic_store (&in_wait, was);
    PyGILState_Release (g);
    return rc;
}

/* A ddp_compute_fn_t: the callable returns bytes, copied for libddp. */
static int compute_trampoline (void *arg, void **out, size_t *len)
{
    PyGILState_STATE g = PyGILState_Ensure ();
    struct pycall *c = arg;
    int was = atomic_exchange (&in_wait, 0), rc;

    rc = pycall_run (c);
    if (rc == 0) {
        Py_ssize_t n = PyBytes_GET_SIZE (c->result);
        *out = n > 0 ? malloc ((size_t) n) : NULL;
        *len = (size_t) n;
        if (n > 0 && !*out) {
            PyErr_NoMemory ();
            Py_XSETREF (c->exc, fetch_exception ());
            rc = 1;
        }
        else if (n > 0)
            memcpy (*out, PyBytes_AS_STRING (c->result), (size_t) n);
    }
    atomic_store (&in_wait, was);
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
    if (ensure_init () < 0)
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
        share_failure (rc, where, mine, false, detail);
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
    if (ensure_init () < 0)
        return NULL;
    DDP_CALL (rc, block_call (kind, fn_trampoline, &c));
    if (rc < 0)
        share_failure (rc, block_names[kind], c.exc, false, ddp_last_error ());
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
 * lib_lock from enter() to exit(): libddp is still entered by one thread
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
    int was = wait_begin ();

    Py_BEGIN_ALLOW_THREADS
    pthread_mutex_lock (&b->mu);
    while (!b->entered && !b->returned)
        pthread_cond_wait (&b->cv, &b->mu);
    entered = b->entered;
    pthread_mutex_unlock (&b->mu);
    Py_END_ALLOW_THREADS
    wait_end (was);
    return entered;
}

/* Hand the body's status to the callback, wait for the helper's return
 * and join the thread (GIL released). */
static void block_finish (Block *b, int status)
{
    int was = wait_begin ();

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
    wait_end (was);
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
    pthread_mutex_lock (&lib_lock);
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
    if (ensure_init () < 0)
        return NULL;
    if (local_depth > 0) {      /* only this rank is here: run the body */
        b->local = true;
        local_depth++;
        Py_RETURN_TRUE;
    }
    lock_library ();
    if ((rc = block_start (b)) != 0) {
        pthread_mutex_unlock (&lib_lock);
        errno = rc;
        return PyErr_SetFromErrno (PyExc_OSError);
    }
    b->started = true;
    Py_INCREF (b);              /* the thread uses b until joined */
    if (block_wait_entry (b)) {
        b->ran = true;
        local_depth++;
        Py_RETURN_TRUE;
    }
    /* Returned without running the body here (the caller's reference
     * keeps b alive past the thread's). */
    Py_BEGIN_ALLOW_THREADS
    pthread_join (b->thread, NULL);
    Py_END_ALLOW_THREADS
    pthread_mutex_unlock (&lib_lock);
    Py_DECREF (b);
    if (b->rc < 0)
        return share_failure (b->rc, where, NULL, false, b->detail);
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
        local_depth--;
        Py_RETURN_NONE;
    }
    if (!b->ran)                /* skipped body (or never entered) */
        Py_RETURN_NONE;
    b->ran = false;
    local_depth--;
    block_finish (b, exc == Py_None ? 0 : 1);
    pthread_mutex_unlock (&lib_lock);
    Py_DECREF (b);              /* the thread's; the caller's keeps b */
    rc = b->rc;
    if (rc >= 0)
        Py_RETURN_NONE;
    if (exc != Py_None) {
        /* This rank's body raised: the others learn it, exc propagates. */
        Py_INCREF (exc);
        share_failure (rc, where, exc, true, b->detail);
        if (PyErr_Occurred ())
            return NULL;
        Py_RETURN_NONE;
    }
    return share_failure (rc, where, NULL, false, b->detail);
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

/* ---- Variable-size data ------------------------------------------------- */

/* _compute_and_bcast(fn, root[, where]): fn() -> bytes runs on root; every
 * rank gets the bytes. */
static PyObject *py_compute_and_bcast (PyObject *self, PyObject *args)
{
    const char *where = "ddp.compute_and_broadcast";
    struct pycall c = { .want_bytes = true };
    void *out = NULL;
    size_t len = 0;
    PyObject *res = NULL;
    int root, rc;

    (void) self;
    if (!PyArg_ParseTuple (args, "Oi|s", &c.fn, &root, &where))
        return NULL;
    if (ensure_init () < 0)
        return NULL;
    DDP_CALL (rc, ddp_compute_and_bcast (compute_trampoline, &c, root, &out,
                                         &len));
    if (rc < 0)
        share_failure (rc, where, c.exc, false, ddp_last_error ());
    else {
        res = PyBytes_FromStringAndSize (out, (Py_ssize_t) len);
        Py_XDECREF (c.exc);
    }
    free (out);
    Py_XDECREF (c.result);
    return res;
}

/* _gatherv(data, root, error[, where]) / _allgatherv(data, error[, where]):
 * data is bytes, or error an exception this rank raised preparing it (then
 * data is ignored and the others learn it); where names the call in
 * errors.  Returns the list of every rank's bytes
 * where it is received, None elsewhere. */
static PyObject *gather_common (PyObject *args, bool all)
{
    const char *where = all ? "ddp.all_gather" : "ddp.gather";
    Py_buffer data;
    PyObject *error, *res = NULL;
    const void *buf;
    void *out = NULL;
    size_t *lens = NULL, off = 0, len;
    int root = 0, rc;

    if (all ? !PyArg_ParseTuple (args, "y*O|s", &data, &error, &where)
            : !PyArg_ParseTuple (args, "y*iO|s", &data, &root, &error, &where))
        return NULL;
    if (ensure_init () < 0 || refuse_local (where) < 0)
        goto out;
    /* A local failure: a NULL buffer of length 1 is libddp's EINVAL, which
     * still takes part and fails the others with EREMOTE. */
    buf = error == Py_None ? data.buf : NULL;
    len = error == Py_None ? (size_t) data.len : 1;
    if (all)
        DDP_CALL (rc, ddp_allgatherv_bytes (buf, len, &out, &lens));
    else
        DDP_CALL (rc, ddp_gatherv_bytes (buf, len, &out, &lens, root));
    if (rc < 0) {
        if (error != Py_None)
            Py_INCREF (error);
        share_failure (rc, where, error == Py_None ? NULL : error, false,
                       ddp_last_error ());
        goto out;
    }
    if (!lens) {
        res = Py_NewRef (Py_None);
        goto out;
    }
    if (!(res = PyList_New (ddp_world_size ())))
        goto out;
    for (int r = 0; r < ddp_world_size (); r++) {
        PyObject *b = PyBytes_FromStringAndSize ((const char *) out + off,
                                                 (Py_ssize_t) lens[r]);
        if (!b) {
            Py_CLEAR (res);
            goto out;
        }
        PyList_SET_ITEM (res, r, b);
        off += lens[r];
    }
out:
    free (out);
    free (lens);
    PyBuffer_Release (&data);
    return res;
}

static PyObject *py_gatherv (PyObject *self, PyObject *args)
{
    (void) self;
    return gather_common (args, false);
}

static PyObject *py_allgatherv (PyObject *self, PyObject *args)
{
    (void) self;
    return gather_common (args, true);
}

/* _allgather_named(names, values): names a list of str, values a list of
 * floats, the same names on every rank; returns world_size lists of
 * floats (rank order). */
static PyObject *py_allgather_named (PyObject *self, PyObject *args)
{
    static const char where[] = "ddp.all_reduce_dict";
    PyObject *names, *values, *res = NULL;
    ddp_named_value_t *v = NULL;
    double *out = NULL;
    Py_ssize_t n;
    int world, rc;

    (void) self;
    if (!PyArg_ParseTuple (args, "O!O!", &PyList_Type, &names, &PyList_Type,
                           &values))
        return NULL;
    if ((n = PyList_GET_SIZE (names)) != PyList_GET_SIZE (values))
        return PyErr_Format (PyExc_ValueError, "%s: %zd names, %zd values",
                             where, n, PyList_GET_SIZE (values));
    if (ensure_init () < 0 || refuse_local (where) < 0)
        return NULL;
    world = ddp_world_size ();
    if (!(v = PyMem_Calloc ((size_t) n + 1, sizeof (*v)))
        || !(out = PyMem_Calloc ((size_t) world * (size_t) n + 1,
                                 sizeof (*out)))) {
        PyErr_NoMemory ();
        goto out;
    }
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *name = PyList_GET_ITEM (names, i);
        if (!PyUnicode_Check (name)) {
            PyErr_Format (PyExc_TypeError, "%s: key %R is not a str", where,
                          name);
            goto out;
        }
        if (!(v[i].name = PyUnicode_AsUTF8 (name)))
            goto out;
        v[i].value = PyFloat_AsDouble (PyList_GET_ITEM (values, i));
        if (v[i].value == -1. && PyErr_Occurred ())
            goto out;
    }
    DDP_CALL (rc, ddp_allgather_named (v, (size_t) n, out));
    if (rc < 0) {
        if (rc == DDP_EMISMATCH)
            raise_error (Error, rc, where, "ddp.all_reduce_dict: the ranks "
                         "passed different keys: every rank must pass a dict "
                         "with the same keys");
        else
            fail_here (rc, where);
        goto out;
    }
    if (!(res = PyList_New (world)))
        goto out;
    for (int r = 0; r < world; r++) {
        PyObject *row = PyList_New (n);
        if (!row) {
            Py_CLEAR (res);
            goto out;
        }
        PyList_SET_ITEM (res, r, row);
        for (Py_ssize_t i = 0; i < n; i++) {
            PyObject *f = PyFloat_FromDouble (out[(size_t) r * (size_t) n
                                                  + (size_t) i]);
            if (!f) {
                Py_CLEAR (res);
                goto out;
            }
            PyList_SET_ITEM (row, i, f);
        }
    }
out:
    PyMem_Free (v);
    PyMem_Free (out);
    return res;
}

/* ---- Stopping, restarts, logging ---------------------------------------- */

static const char *env_or (const char *name, const char *dflt)
{
    const char *v = getenv (name);

    return v ? v : dflt;
}

PyDoc_STRVAR (stop_signals_doc,
"stop_signals(signals=None)\n--\n\n"
"Catch the signals that ask the job to stop, for should_stop(): a\n"
"comma-separated list of names or numbers ('TERM,USR1'), 'none' to put back\n"
"what the program had, or None for DDP_STOP_SIGNALS, else 'TERM,USR1,USR2'.\n"
"The first such signal is only recorded; a second one ends the process.\n"
"should_stop() calls stop_signals() itself the first time, if the program\n"
"has not.  Raises ValueError naming a bad word (KILL, SEGV, 'FOO').");

static PyObject *py_stop_signals (PyObject *self, PyObject *args)
{
    const char *spec = NULL;
    int rc;

    (void) self;
    if (!PyArg_ParseTuple (args, "|z", &spec))
        return NULL;
    rc = ddp_stop_signals (spec);
    if (rc < 0)     /* libddp logged which word and why */
        return PyErr_Format (PyExc_ValueError, "ddp.stop_signals: libddp "
                             "refused the list \"%s\" (%s; the reason is "
                             "logged above): give signal names or numbers "
                             "separated by commas, or 'none'",
                             spec ? spec : env_or ("DDP_STOP_SIGNALS", ""),
                             ddp_strerror (rc));
    stop_installed = !spec || strcmp (spec, "none") != 0;
    Py_RETURN_NONE;
}

PyDoc_STRVAR (stop_requested_doc,
"stop_requested()\n--\n\n"
"The first stop signal this process received (a number), or 0.  Only this\n"
"process's knowledge: decide with should_stop(), which asks every rank.");

static PyObject *py_stop_requested (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    return PyLong_FromLong (ddp_stop_requested ());
}

PyDoc_STRVAR (should_stop_doc,
"should_stop()\n--\n\n"
"Collective: True on every rank if any rank received a stop signal (SIGTERM\n"
"from scancel, preemption or requeue; SIGUSR1/SIGUSR2 from\n"
"--signal=USR1@SECONDS before the time limit) before it entered this call,\n"
"False on every rank otherwise.  Call it at the same point on every rank,\n"
"once per step, and leave the loop together when it says so: save a\n"
"checkpoint, exit, and resume on requeue (restart_count() > 0).  One\n"
"8-byte all-reduce.  The first call installs the stop signals\n"
"(stop_signals()) unless the program did.");

static PyObject *py_should_stop (PyObject *self, PyObject *unused)
{
    static const char where[] = "ddp.should_stop";
    bool stop = false;
    int rc;

    (void) self;
    (void) unused;
    if (ensure_init () < 0 || refuse_local (where) < 0)
        return NULL;
    if (!stop_installed) {
        if ((rc = ddp_stop_signals (NULL)) < 0)
            return PyErr_Format (PyExc_ValueError, "%s: libddp refused "
                                 "DDP_STOP_SIGNALS=\"%s\" (the reason is "
                                 "logged above)", where,
                                 env_or ("DDP_STOP_SIGNALS", ""));
        stop_installed = true;
    }
    DDP_CALL (rc, ddp_should_stop (&stop));
    if (rc < 0)
        return fail_here (rc, where);
    return PyBool_FromLong (stop);
}

PyDoc_STRVAR (restart_count_doc,
"restart_count()\n--\n\n"
"How many times Slurm has requeued this job (SLURM_RESTART_COUNT; 0 on a\n"
"first run or outside Slurm): above 0, resume from the checkpoint.  Needs\n"
"no init.  Raises ValueError if SLURM_RESTART_COUNT is not a whole number.");

static PyObject *py_restart_count (PyObject *self, PyObject *unused)
{
    int n;

    (void) self;
    (void) unused;
    if ((n = ddp_restart_count ()) < 0)
        return PyErr_Format (PyExc_ValueError, "ddp.restart_count: "
                             "SLURM_RESTART_COUNT='%s' is not a whole number "
                             "(Slurm sets it in a requeued job; unset it "
                             "otherwise)", env_or ("SLURM_RESTART_COUNT", ""));
    return PyLong_FromLong (n);
}

static PyObject *log_common (PyObject *args, bool main_only)
{
    const char *s;
    Py_ssize_t n;
    PyObject *o;

    if (!PyArg_ParseTuple (args, "U", &o))
        return NULL;
    if (!(s = PyUnicode_AsUTF8AndSize (o, &n)))
        return NULL;
    if (strlen (s) != (size_t) n)
        return PyErr_Format (PyExc_ValueError, "ddp.log: the message holds a "
                             "NUL character");
    if (ensure_init () < 0)
        return NULL;
    if (main_only)
        ddp_log_main ("%s", s);
    else
        ddp_log ("%s", s);
    Py_RETURN_NONE;
}

static PyObject *py_log (PyObject *self, PyObject *args)
{
    (void) self;
    return log_common (args, false);
}

static PyObject *py_log_main (PyObject *self, PyObject *args)
{
    (void) self;
    return log_common (args, true);
}

PyDoc_STRVAR (log_prefix_doc,
"log_prefix()\n--\n\n"
"The prefix log() puts before each line, '[ddp rank R/W] ', for a program\n"
"that logs through its own logger (speechbrain's rank_prefixed_message).");

static PyObject *py_log_prefix (PyObject *self, PyObject *unused)
{
    char buf[64];
    int n;

    (void) self;
    (void) unused;
    if (ensure_init () < 0)
        return NULL;
    n = ddp_log_prefix (buf, sizeof (buf));
    if (n < 0 || (size_t) n >= sizeof (buf))
        return fail (DDP_EINVAL, "ddp.log_prefix", "");
    return PyUnicode_FromStringAndSize (buf, n);
}

/* ---- Sampler ------------------------------------------------------------ */

/* _sampler_info(n, world, rank, shuffle, seed, drop_last) ->
 * (num_samples, total_size); the package checks the ranges. */
static PyObject *py_sampler_info (PyObject *self, PyObject *args)
{
    unsigned long long n, seed;
    int world, rank, shuffle, drop;
    ddp_sampler_t s;

    (void) self;
    if (!PyArg_ParseTuple (args, "KiipKp", &n, &world, &rank, &shuffle, &seed,
                           &drop))
        return NULL;
    if (ddp_sampler_init (&s, n, world, rank, shuffle, seed, drop) < 0)
        return PyErr_Format (PyExc_ValueError, "ddp.Sampler: libddp refused "
                             "n=%llu world_size=%d rank=%d (n must be below "
                             "2**63, rank in 0 .. world_size - 1)", n, world,
                             rank);
    return Py_BuildValue ("KK", (unsigned long long) s.num_samples,
                          (unsigned long long) s.total_size);
}

/* _sampler_indices(n, world, rank, shuffle, seed, drop_last, epoch, start,
 * count) -> list of count indices from position start of this rank's list
 * for the epoch (ddp_sampler_indices_from). */
static PyObject *py_sampler_indices (PyObject *self, PyObject *args)
{
    unsigned long long n, seed, epoch, start;
    Py_ssize_t count;
    int world, rank, shuffle, drop, rc;
    ddp_sampler_t s;
    uint64_t *out;
    PyObject *res;

    (void) self;
    if (!PyArg_ParseTuple (args, "KiipKpKKn", &n, &world, &rank, &shuffle,
                           &seed, &drop, &epoch, &start, &count))
        return NULL;
    if (count < 0)
        return PyErr_Format (PyExc_ValueError, "count %zd < 0", count);
    if (ddp_sampler_init (&s, n, world, rank, shuffle, seed, drop) < 0)
        return PyErr_Format (PyExc_ValueError, "ddp.Sampler: bad sampler");
    ddp_sampler_set_epoch (&s, epoch);
    if (!(out = PyMem_Calloc ((size_t) count + 1, sizeof (*out))))
        return PyErr_NoMemory ();
    rc = ddp_sampler_indices_from (&s, start, out, (size_t) count);
    if (rc < 0) {
        PyMem_Free (out);
        return PyErr_Format (PyExc_ValueError, "ddp.Sampler: positions %llu "
                             "to %llu are past this rank's %llu", start,
                             start + (unsigned long long) count,
                             (unsigned long long) s.num_samples);
    }
    if ((res = PyList_New (count))) {
        for (Py_ssize_t i = 0; i < count; i++) {
            PyObject *o = PyLong_FromUnsignedLongLong (out[i]);
            if (!o) {
                Py_CLEAR (res);
                break;
            }
            PyList_SET_ITEM (res, i, o);
        }
    }
    PyMem_Free (out);
    return res;
}

/* ---- Local blocks (the main_process_only decorator) --------------------- */

static PyObject *py_local_enter (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    local_depth++;
    Py_RETURN_NONE;
}

static PyObject *py_local_exit (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    if (local_depth > 0)
        local_depth--;
    Py_RETURN_NONE;
}

static PyObject *py_in_local (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    return PyBool_FromLong (local_depth > 0);
}

/* ---- Module ------------------------------------------------------------- */

#define NOARGS(name) { #name, py_##name, METH_NOARGS, name##_doc }

static PyMethodDef methods[] = {
    NOARGS (init),
    NOARGS (finalize),
    NOARGS (rank),
    NOARGS (world_size),
    NOARGS (local_rank),
    NOARGS (local_world_size),
    NOARGS (node_rank),
    NOARGS (num_nodes),
    NOARGS (is_main),
    NOARGS (is_local_main),
    NOARGS (is_distributed),
    NOARGS (backend),
    NOARGS (version),
    NOARGS (barrier),
    { "all_reduce", (PyCFunction) (void (*) (void)) py_all_reduce,
      METH_FASTCALL | METH_KEYWORDS, all_reduce_doc },
    { "stop_signals", py_stop_signals, METH_VARARGS, stop_signals_doc },
    NOARGS (stop_requested),
    NOARGS (should_stop),
    NOARGS (restart_count),
    NOARGS (log_prefix),
    { "_log", py_log, METH_VARARGS, "ddp_log of one str." },
    { "_log_main", py_log_main, METH_VARARGS, "ddp_log_main of one str." },
    { "_is_initialized", py_is_initialized, METH_NOARGS,
      "True once libddp is initialized." },
    { "_run_on_main", py_run_on_main, METH_VARARGS,
      "_run_on_main(func, post_func, run_post_on_main)" },
    { "_helper", py_helper, METH_VARARGS, "_helper(kind, func)" },
    { "_compute_and_bcast", py_compute_and_bcast, METH_VARARGS,
      "_compute_and_bcast(fn, root) -> bytes" },
    { "_gatherv", py_gatherv, METH_VARARGS, "_gatherv(data, root, error)" },
    { "_allgatherv", py_allgatherv, METH_VARARGS, "_allgatherv(data, error)" },
    { "_allgather_named", py_allgather_named, METH_VARARGS,
      "_allgather_named(names, values)" },
    { "_sampler_info", py_sampler_info, METH_VARARGS,
      "_sampler_info(n, world, rank, shuffle, seed, drop_last)" },
    { "_sampler_indices", py_sampler_indices, METH_VARARGS,
      "_sampler_indices(n, world, rank, shuffle, seed, drop_last, epoch, "
      "start, count)" },
    { "_local_enter", py_local_enter, METH_NOARGS, "Enter a local block." },
    { "_local_exit", py_local_exit, METH_NOARGS, "Leave a local block." },
    { "_in_local", py_in_local, METH_NOARGS, "True inside a local block." },
    { NULL, NULL, 0, NULL }
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ddp._ddp",
    .m_doc = "The C half of the module ddp (libddp's calls); use ddp.",
    .m_size = -1,
    .m_methods = methods,
};

/* A new exception class ddp.NAME with doc, .code None by default. */
static PyObject *new_error (PyObject *mod, const char *name, const char *doc,
                            PyObject *base)
{
    char full[64];
    PyObject *dict = Py_BuildValue ("{sOsOsOsOsO}", "code", Py_None, "where",
                                    Py_None, "rank", Py_None, "type_name",
                                    Py_None, "remote_message", Py_None), *cls;

    if (!dict)
        return NULL;
    snprintf (full, sizeof (full), "ddp.%s", name);
    cls = PyErr_NewExceptionWithDoc (full, doc, base, dict);
    Py_DECREF (dict);
    if (cls && PyModule_AddObject (mod, name, Py_NewRef (cls)) < 0) {
        Py_DECREF (cls);
        Py_CLEAR (cls);
    }
    return cls;
}

static int add_constants (PyObject *m)
{
    static const struct { const char *name; int value; } c[] = {
        { "OK", DDP_OK }, { "EINVAL", DDP_EINVAL }, { "ENOINIT", DDP_ENOINIT },
        { "ENOMEM", DDP_ENOMEM }, { "ENOLAUNCH", DDP_ENOLAUNCH },
        { "EPMIX", DDP_EPMIX }, { "ETRANSPORT", DDP_ETRANSPORT },
        { "ETIMEDOUT", DDP_ETIMEDOUT }, { "EPEER", DDP_EPEER },
        { "EREMOTE", DDP_EREMOTE }, { "EUSER", DDP_EUSER },
        { "ENOTSUP", DDP_ENOTSUP }, { "ENCCL", DDP_ENCCL },
        { "ECUDA", DDP_ECUDA }, { "EMISMATCH", DDP_EMISMATCH },
        { "_MAIN_ONLY", BLOCK_MAIN_ONLY }, { "_RANK0_FIRST", BLOCK_RANK0_FIRST },
        { "_LOCAL_RANK0_FIRST", BLOCK_LOCAL0_FIRST },
    };

    for (size_t i = 0; i < sizeof (c) / sizeof (c[0]); i++)
        if (PyModule_AddIntConstant (m, c[i].name, c[i].value) < 0)
            return -1;
    return 0;
}

PyMODINIT_FUNC PyInit__ddp (void)
{
    PyObject *m = PyModule_Create (&moddef);

    if (!m)
        return NULL;
    if (PyType_Ready (&BlockType) < 0
        || PyModule_AddObject (m, "_Block", Py_NewRef (&BlockType)) < 0
        || add_constants (m) < 0)
        goto fail;
    if (!(Error = new_error (m, "Error",
            "A libddp call failed.  .code is the DDP_E* value (ddp.EPEER ...),\n"
            ".where the call ('ddp.barrier'); str() says what happened.",
            NULL))
        || !(PeerError = new_error (m, "PeerError",
            "A rank died or aborted (DDP_EPEER); the message names it.  Every\n"
            "later collective fails the same way: end the program.",
            Error))
        || !(TimeoutErr = new_error (m, "TimeoutError",
            "A rank did not arrive within DDP_TIMEOUT (DDP_ETIMEDOUT); the\n"
            "message names it and the call.  Every later collective fails.",
            Error))
        || !(RemoteError = new_error (m, "RemoteError",
            "Work failed on another rank (DDP_EREMOTE): run_on_main's func on\n"
            "main, a main_only() or rank0_first() block, a compute function.\n"
            ".rank is the rank that raised, .type_name its exception's type\n"
            "('FileNotFoundError', 'mypkg.MyError'), .remote_message its\n"
            "message (None where libddp itself failed there).  The rank\n"
            "that raised gets its own exception back.",
            Error)))
        goto fail;
    return m;
fail:
    Py_DECREF (m);
    return NULL;
}

/* vi: ts=4 sw=4 expandtab
 */
