/* py_log.c - rank-prefixed logging for ddp._ddp: ddp.log() and
 * log_main() (one str each, through libddp's ddp_log and ddp_log_main) and
 * log_prefix(), for a program that logs through its own logger.
 */
#include "pyddp.h"

#include <string.h>

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
    if (pyddp_ensure_init () < 0)
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
    if (pyddp_ensure_init () < 0)
        return NULL;
    n = ddp_log_prefix (buf, sizeof (buf));
    if (n < 0 || (size_t) n >= sizeof (buf))
        return pyddp_fail (DDP_EINVAL, "ddp.log_prefix", "");
    return PyUnicode_FromStringAndSize (buf, n);
}

PyMethodDef pyddp_log_methods[] = {
    NOARGS (log_prefix),
    { "_log", py_log, METH_VARARGS, "ddp_log of one str." },
    { "_log_main", py_log_main, METH_VARARGS, "ddp_log_main of one str." },
    { NULL, NULL, 0, NULL }
};

/* vi: ts=4 sw=4 expandtab
 */
