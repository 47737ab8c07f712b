/* ddpmodule.c - ddp._ddp, the C half of the Python module ddp: libddp's
 * calls for Python programs, on the public API of <ddp.h> only.  This file
 * owns the module itself: the identity queries (rank, world_size ...),
 * the DDP_E* constants, and PyInit__ddp, which adds the functions of the
 * other files (init/finalize and the module's state: py_init.c).  It sits
 * on top: the other files call nothing here.  What each file owns and
 * the rules every function keeps: pyddp.h.
 *
 * The package ddp/__init__.py re-exports what is public here and adds what
 * is easier in Python (pickling, the context managers' protocol, the
 * sampler's iterator).
 */
#include "pyddp.h"

#include <stdio.h>

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

PyDoc_STRVAR (nccl_info_doc,
"nccl_info()\n--\n\nHow this build finds CUDA and NCCL, in one line: not built, loaded at\n"
"run time by the steps that use them (and from where), or the files they\n"
"were loaded from.  Loads nothing; needs no init.");

static PyObject *py_nccl_info (PyObject *self, PyObject *unused)
{
    char buf[512];

    (void) self;
    (void) unused;
    return PyUnicode_FromString (ddp_nccl_info (buf, sizeof (buf)));
}

/* ---- Module ------------------------------------------------------------- */

static PyMethodDef methods[] = {
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
    NOARGS (nccl_info),
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
        pyddp_init_methods, pyddp_coll_methods, pyddp_group_methods,
        pyddp_objects_methods, pyddp_helpers_methods,
        pyddp_stop_methods, pyddp_log_methods, pyddp_sampler_methods,
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
        || add_constants (m) < 0 || pyddp_errors_init (m) < 0
        || pyddp_group_init (m) < 0 || pyddp_request_init (m) < 0) {
        Py_DECREF (m);
        return NULL;
    }
    return m;
}

/* vi: ts=4 sw=4 expandtab
 */
