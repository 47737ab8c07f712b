/* py_objects.c - the variable-size data under the package's object calls
 * (ddp/__init__.py pickles, these move bytes), on the world:
 * compute-and-broadcast (broadcast_object, compute_and_broadcast), the
 * byte gathers (gather, all_gather) and the named values of
 * all_reduce_dict.  Each releases the GIL while it waits (DDP_CALL) and
 * shares a failure of one rank with all (pyddp_share_failure).  On a
 * group the package goes through py_coll.c's data collectives instead.
 */
#include "pyddp.h"

#include <stdlib.h>

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
    if (pyddp_ensure_init () < 0)
        return NULL;
    DDP_CALL (rc, ddp_compute_and_bcast (pyddp_compute_trampoline, &c, root,
                                         &out, &len));
    if (rc < 0)
        pyddp_share_failure (rc, where, c.exc, false, ddp_last_error ());
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
    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0)
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
        pyddp_share_failure (rc, where, error == Py_None ? NULL : error, false,
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
    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0)
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
            pyddp_raise (rc, where, "ddp.all_reduce_dict: the ranks passed "
                         "different keys: every rank must pass a dict with "
                         "the same keys");
        else
            pyddp_fail_here (rc, where);
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

/* ---- Methods ----------------------------------------------------------- */

PyMethodDef pyddp_objects_methods[] = {
    { "_compute_and_bcast", py_compute_and_bcast, METH_VARARGS,
      "_compute_and_bcast(fn, root) -> bytes" },
    { "_gatherv", py_gatherv, METH_VARARGS, "_gatherv(data, root, error)" },
    { "_allgatherv", py_allgatherv, METH_VARARGS, "_allgatherv(data, error)" },
    { "_allgather_named", py_allgather_named, METH_VARARGS,
      "_allgather_named(names, values)" },
    { NULL, NULL, 0, NULL }
};

/* vi: ts=4 sw=4 expandtab
 */
