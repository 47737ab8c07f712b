/* py_sampler.c - the arithmetic of ddp.Sampler for ddp._ddp: the sizes
 * and the index lists of libddp's distributed sampler (torch's
 * DistributedSampler order); the package's Sampler class keeps the state
 * and iterates.  Pure: no libddp state, no communication.
 */
#include "pyddp.h"

#include <stdint.h>

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

PyMethodDef pyddp_sampler_methods[] = {
    { "_sampler_info", py_sampler_info, METH_VARARGS,
      "_sampler_info(n, world, rank, shuffle, seed, drop_last)" },
    { "_sampler_indices", py_sampler_indices, METH_VARARGS,
      "_sampler_indices(n, world, rank, shuffle, seed, drop_last, epoch, "
      "start, count)" },
    { NULL, NULL, 0, NULL }
};

/* vi: ts=4 sw=4 expandtab
 */
