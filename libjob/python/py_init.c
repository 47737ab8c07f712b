/* py_init.c - the life of libddp in ddp._ddp (pyddp.h): whether it is
 * initialized, initialization on first use (pyddp_ensure_init, which every
 * call of the module makes), init() and finalize(), and the refusal of a
 * data collective inside a local block (pyddp_refuse_local).  Below the
 * module's parts and ddpmodule.c; calls only py_errors.c and py_wait.c.
 */
#include "pyddp.h"

#include <stdint.h>
#include <stdio.h>

/* ---- State ------------------------------------------------------------- */

static bool initialized;                /* ddp_init succeeded (GIL held) */

void (*pyddp_before_finalize) (void);

/* ---- Initialization ----------------------------------------------------- */

static int do_init (void)
{
    int rc;

    DDP_CALL (rc, ddp_init ());
    if (rc < 0) {
        /* ddp_init records every failure, DDP_EINVAL's too (a malformed
         * variable, named): the exception says why. */
        pyddp_fail (rc, "ddp.init", ddp_last_error ());
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
"straggler report, with DDP_STRAGGLERS=1).  The barrier waits about 1 s\n"
"for the others: when they are elsewhere this rank leaves, and their next\n"
"call fails naming it ('rank 1 left (ddp_finalize) before ...').  Done at\n"
"exit by itself, unless the program ends with an uncaught exception: then\n"
"the process just exits and the other ranks name it by how it ended.\n"
"Raises when its barrier found that the ranks' earlier calls differed\n"
"where no call since could see it (each rank its own bcast root:\n"
"DDP_EMISMATCH); libddp is released all the same.\n"
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
    if (pyddp_before_finalize)
        pyddp_before_finalize ();
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

/* _exit_reason(text): ddp_exit_reason; True when the launcher was told.
 * For the module's excepthook, which must not raise: never raises but for
 * a bad argument. */
static PyObject *py_exit_reason (PyObject *self, PyObject *args)
{
    const char *why;
    int rc;

    (void) self;
    if (!PyArg_ParseTuple (args, "s", &why))
        return NULL;
    Py_BEGIN_ALLOW_THREADS
    rc = ddp_exit_reason (why);
    Py_END_ALLOW_THREADS
    return PyBool_FromLong (rc == 0);
}

/* host_addrs(): ddp_host_addrs as a list of strings, best first. */
static PyObject *py_host_addrs (PyObject *self, PyObject *unused)
{
    char buf[256];
    PyObject *text, *sep, *list = NULL;
    int rc;

    (void) self;
    (void) unused;
    rc = ddp_host_addrs (buf, sizeof (buf));
    if (rc < 0)
        return pyddp_fail (rc, "ddp.host_addrs", ddp_last_error ());
    text = PyUnicode_FromString (buf);
    sep = PyUnicode_FromString (",");
    if (text && sep)
        list = PyUnicode_Split (text, sep, -1);
    Py_XDECREF (text);
    Py_XDECREF (sep);
    return list;
}

/* _cuda_stream(): ddp_cuda_stream() as an int (the cudaStream_t a CUDA
 * tensor is ordered on), None without the NCCL backend.  For tests. */
static PyObject *py_cuda_stream (PyObject *self, PyObject *unused)
{
    void *s = ddp_cuda_stream ();

    (void) self;
    (void) unused;
    if (ddp_cuda_device () < 0)
        Py_RETURN_NONE;
    return PyLong_FromUnsignedLongLong ((unsigned long long) (uintptr_t) s);
}

/* ---- Functions ---------------------------------------------------------- */

PyMethodDef pyddp_init_methods[] = {
    NOARGS (init),
    NOARGS (finalize),
    { "_is_initialized", py_is_initialized, METH_NOARGS,
      "True once libddp is initialized." },
    { "_exit_reason", py_exit_reason, METH_VARARGS,
      "Tell the launcher why this rank ends badly (ddp_exit_reason)." },
    { "_cuda_stream", py_cuda_stream, METH_NOARGS,
      "The cudaStream_t libddp's collectives run on, as an int; None "
      "without the NCCL backend." },
    { "host_addrs", py_host_addrs, METH_NOARGS,
      "host_addrs()\n--\n\nThe IPv4 addresses this rank offers its peers, "
      "best first (DDP_HOST_ADDR, DDP_SOCKET_IFNAME or the default), as a "
      "list of strings: where to serve something of the program's own to "
      "the other ranks.  Needs no init.  Raises ddp.Error for a malformed "
      "DDP_HOST_ADDR or DDP_SOCKET_IFNAME." },
    { NULL, NULL, 0, NULL }
};

/* vi: ts=4 sw=4 expandtab
 */
