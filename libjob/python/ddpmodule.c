/* ddpmodule.c - ddp._ddp, the C half of the Python module ddp: libddp's
 * calls for Python programs, on the public API of <ddp.h> only.  This file
 * owns the module itself: its state (initialized, the local-block depth),
 * init/finalize and initialization on first use, the identity queries
 * (rank, world_size ...), the DDP_E* constants, and PyInit__ddp, which
 * adds the functions of the other files.  What each file owns and the
 * rules every function keeps: pyddp.h.
 *
 * The package ddp/__init__.py re-exports what is public here and adds what
 * is easier in Python (pickling, the context managers' protocol, the
 * sampler's iterator).
 */
#include "pyddp.h"

#include <stdio.h>

/* ---- State ------------------------------------------------------------- */

static bool initialized;                /* ddp_init succeeded (GIL held) */
_Thread_local int pyddp_local_depth;    /* in a callback / main-only block */

/* ---- Initialization ----------------------------------------------------- */

static int do_init (void)
{
    int rc;

    DDP_CALL (rc, ddp_init ());
    if (rc < 0) {
        pyddp_fail_here (rc, "ddp.init");
        return -1;
    }
    if (!initialized) {
        pyddp_forget_fault ();
        pyddp_guard_setup ();
    }
    initialized = true;
    return 0;
}

int pyddp_ensure_init (void)
{
    return initialized ? 0 : do_init ();
}

int pyddp_refuse_local (const char *where)
{
    char msg[400];

    if (pyddp_local_depth == 0)
        return 0;
    snprintf (msg, sizeof (msg), "%s: called inside a main-only block or a "
              "helper's callback, where only this rank runs: the other "
              "ranks would never join; call it outside the block", where);
    pyddp_raise (DDP_EINVAL, where, msg);
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
    if (pyddp_refuse_local ("ddp.finalize") < 0)
        return NULL;
    DDP_CALL (rc, ddp_finalize ());
    initialized = false;
    if (rc < 0 && rc != DDP_ENOINIT)
        return pyddp_fail_here (rc, "ddp.finalize");
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
        if (pyddp_ensure_init () < 0)                                       \
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

/* ---- Module ------------------------------------------------------------- */

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
    { "_is_initialized", py_is_initialized, METH_NOARGS,
      "True once libddp is initialized." },
    { NULL, NULL, 0, NULL }
};

static struct PyModuleDef moddef = {
    PyModuleDef_HEAD_INIT,
    .m_name = "ddp._ddp",
    .m_doc = "The C half of the module ddp (libddp's calls); use ddp.",
    .m_size = -1,
    .m_methods = methods,
};

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
    };

    for (size_t i = 0; i < sizeof (c) / sizeof (c[0]); i++)
        if (PyModule_AddIntConstant (m, c[i].name, c[i].value) < 0)
            return -1;
    return 0;
}

/* The functions of the other files, after the module's own. */
static int add_parts (PyObject *m)
{
    PyMethodDef *const parts[] = {
        pyddp_coll_methods, pyddp_helpers_methods, pyddp_stop_methods,
        pyddp_log_methods, pyddp_sampler_methods,
    };

    for (size_t i = 0; i < sizeof (parts) / sizeof (parts[0]); i++)
        if (PyModule_AddFunctions (m, parts[i]) < 0)
            return -1;
    return 0;
}

PyMODINIT_FUNC PyInit__ddp (void)
{
    PyObject *m = PyModule_Create (&moddef);

    if (!m)
        return NULL;
    if (add_parts (m) < 0 || pyddp_helpers_init (m) < 0
        || add_constants (m) < 0 || pyddp_errors_init (m) < 0) {
        Py_DECREF (m);
        return NULL;
    }
    return m;
}

/* vi: ts=4 sw=4 expandtab
 */
