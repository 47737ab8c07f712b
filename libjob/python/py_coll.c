/* py_coll.c - the collectives of ddp._ddp: barrier(), all_reduce() of
 * numbers, sequences, buffers and tensors, the in-place calls on buffers
 * and tensors (broadcast, reduce, all_gather_into, gather_into: their
 * memory lent by py_data.c), and the variable-size data under the
 * package's object calls: compute-and-broadcast (broadcast_object), the
 * byte gathers (gather_object, all_gather_object) and the named values of
 * all_reduce_dict.  Each releases the GIL while it waits (DDP_CALL) and,
 * but barrier(), refuses to run inside a local block.
 */
#include "pyddp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SCALARS_STACK 32        /* sequence elements reduced on the stack */

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
    if (pyddp_ensure_init () < 0)
        return NULL;
    if (pyddp_local_depth > 0)
        Py_RETURN_NONE;
    DDP_CALL (rc, ddp_barrier ());
    if (rc < 0)
        return pyddp_fail_here (rc, "ddp.barrier");
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

/* Raise for a failed data collective: DDP_EMISMATCH (the ranks' calls
 * differ: libddp agrees on the dtype and the count in the call) in words
 * that name what the Python caller controls, then libddp's detail; any
 * other code as pyddp_fail_here(). */
static void data_fail (int rc, const char *where, const char *also)
{
    const char *e = ddp_last_error ();
    char msg[900];

    if (rc != DDP_EMISMATCH) {
        pyddp_fail_here (rc, where);
        return;
    }
    snprintf (msg, sizeof (msg), "the ranks passed different data: every "
              "rank must pass the same dtype and number of elements%s%s%s",
              also, e[0] ? "; " : "", e);
    pyddp_fail (rc, where, msg);
}

/* With DDP_CHECK=1, where libddp compares every call's dtype and count
 * across the ranks, the module also compares the shapes of their tensors
 * and buffers, before any data moves: one all-reduce of two 64-bit words
 * (the largest hash of the shape and of its complement, i.e. the largest
 * and the smallest).  0, or -1 with an exception set: ddp.Error
 * (EMISMATCH) on every rank when the shapes differ. */
static int check_shape (const struct pyddp_data *d, const char *where)
{
    const char *v = getenv ("DDP_CHECK");
    uint64_t h = 14695981039346656037ull, w[2];   /* FNV-1a */
    char shape[160], msg[400];
    size_t n = 0;
    int rc;

    if (!v || strcmp (v, "1") != 0)
        return 0;
    for (int i = -1; i < d->ndim; i++) {
        uint64_t x = i < 0 ? (uint64_t) d->ndim : (uint64_t) d->shape[i];
        for (int b = 0; b < 64; b += 8) {
            h ^= (x >> b) & 0xff;
            h *= 1099511628211ull;
        }
    }
    w[0] = h;
    w[1] = ~h;
    DDP_CALL (rc, ddp_allreduce (w, w, 2, DDP_UINT64, DDP_MAX));
    if (rc < 0) {
        pyddp_fail_here (rc, where);
        return -1;
    }
    if (w[0] == ~w[1])
        return 0;
    n += (size_t) snprintf (shape, sizeof (shape), "(");
    for (int i = 0; i < d->ndim && n < sizeof (shape); i++)
        n += (size_t) snprintf (shape + n, sizeof (shape) - n, "%s%zd",
                                i ? ", " : "", d->shape[i]);
    if (n < sizeof (shape))
        snprintf (shape + n, sizeof (shape) - n, "%s)",
                  d->ndim == 1 ? "," : "");
    snprintf (msg, sizeof (msg), "the ranks passed data of different shapes "
              "(DDP_CHECK=1 compares them): this rank's %s %s", shape,
              pyddp_dtype_name (d->dtype));
    pyddp_fail (DDP_EMISMATCH, where, msg);
    return -1;
}

/* The result of all_reduce of a read-only contiguous d, in store: a new
 * memoryview of d's format and shape. */
static PyObject *readonly_result (const struct pyddp_data *d, PyObject *store)
{
    /* The native format of the dtype: '<i' (4 bytes) is 'i' here. */
    static const char native[DDP_NUM_DTYPES] = {
        [DDP_INT8] = 'b', [DDP_UINT8] = 'B', [DDP_INT32] = 'i',
        [DDP_UINT32] = 'I', [DDP_INT64] = 'q', [DDP_UINT64] = 'Q',
        [DDP_FLOAT16] = 'e', [DDP_FLOAT32] = 'f', [DDP_FLOAT64] = 'd',
    };
    char fmt[2] = { native[d->dtype], '\0' };
    PyObject *mv, *shape, *res = NULL;

    if (!(mv = PyMemoryView_FromObject (store)))
        return NULL;
    if ((shape = PyTuple_New (d->ndim))) {
        for (int i = 0; i < d->ndim; i++) {
            PyObject *n = PyLong_FromSsize_t (d->shape[i]);
            if (!n) {
                Py_CLEAR (shape);
                break;
            }
            PyTuple_SET_ITEM (shape, i, n);
        }
    }
    if (shape)
        res = PyObject_CallMethod (mv, "cast", "sO", fmt, shape);
    Py_XDECREF (shape);
    Py_DECREF (mv);
    return res;
}

/* all_reduce of a buffer or tensor d: in place if writable (a strided one
 * through a contiguous copy written back), else a contiguous read-only
 * buffer into a new memoryview of the same format and shape. */
static PyObject *reduce_data (struct pyddp_data *d, int op)
{
    static const char where[] = "ddp.all_reduce";
    PyObject *res = NULL, *store = NULL;
    void *send, *recv;
    int rc;

    if (!d->writable && !d->contiguous)
        return PyErr_Format (PyExc_ValueError, "%s: x (a %s) is read-only "
                             "and not one contiguous block: pass a "
                             "contiguous copy", where,
                             Py_TYPE (d->obj)->tp_name);
    if (check_shape (d, where) < 0 || !(send = pyddp_data_buf (d, true)))
        return NULL;
    recv = send;
    if (!d->writable) {
        if (!(store = PyByteArray_FromStringAndSize (
                  NULL, (Py_ssize_t) (d->count * d->itemsize))))
            return NULL;
        recv = PyByteArray_AS_STRING (store);
    }
    DDP_CALL (rc, ddp_allreduce (send, recv, d->count, d->dtype,
                                 (ddp_op_t) op));
    if (rc < 0)
        data_fail (rc, where, " and op");
    else if (d->writable) {
        pyddp_data_write_back (d);
        res = Py_NewRef (d->obj);
    }
    else
        res = readonly_result (d, store);
    Py_XDECREF (store);
    return res;
}

/* Raise for a failed all_reduce of numbers: DDP_EMISMATCH, which the host
 * backend reports in the call itself without DDP_CHECK, says in Python's
 * words what the ranks passed (an int on one rank and a float on another
 * is an int64 against a float64), then libddp's detail; any other code as
 * pyddp_fail_here(). */
static void mismatch_or_fail (int rc, const char *where)
{
    const char *e = ddp_last_error ();
    char msg[900];

    if (rc != DDP_EMISMATCH) {
        pyddp_fail_here (rc, where);
        return;
    }
    snprintf (msg, sizeof (msg), "%s%s%s",
              strstr (e, " int64 ") && strstr (e, " float64 ")
                  ? "an int on some ranks and a float on others (an int is "
                    "reduced as int64, a float as float64): pass the same "
                    "type on every rank, e.g. float(x)"
                  : "the ranks passed different values (ints on some and "
                    "floats on others, sequences of other lengths, or "
                    "another op): pass the same on every rank",
              e[0] ? "; " : "", e);
    pyddp_fail (rc, where, msg);
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
        mismatch_or_fail (rc, where);
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
"as soon as one element is a float), a tensor (torch's in CPU memory, or\n"
"anything with __dlpack__) or a buffer (array.array, numpy array,\n"
"bytearray, memoryview) of int8, uint8, int32, uint32, int64, uint64,\n"
"float16, bfloat16 (tensors), float32 or float64 elements.  A tensor or\n"
"writable buffer is reduced in place, without a copy when contiguous (a\n"
"strided one, such as a transposed tensor, through a copy written back),\n"
"and returned; a read-only buffer into a new memoryview of the same\n"
"format and shape.  'avg' of ints and sequences gives floats; of an\n"
"integer tensor or buffer, integers truncated toward zero (as libddp's\n"
"DDP_AVG).  Refused with ValueError, saying why: CUDA tensors, dtypes ddp\n"
"lacks (complex, bool, int16), a tensor that requires grad (detach it),\n"
"an expanded one (its elements share memory).\n"
"\n"
"Every rank must pass the same kind of x with the same length, dtype and\n"
"op: an int on one rank and a float on another (int64 against float64),\n"
"tensors of other dtypes or numbers of elements, fail the call on every\n"
"rank with ddp.Error (EMISMATCH), saying what each passed; no promotion\n"
"is made.  The shape is compared only with DDP_CHECK=1: by default\n"
"tensors of the same dtype and number of elements are reduced element\n"
"by element in memory order.\n"
"Raises TypeError / ValueError for an x or op it cannot reduce (on this\n"
"rank, before any communication: the others then time out naming it),\n"
"ddp.PeerError / ddp.TimeoutError when a rank died or did not come.");

static PyObject *py_all_reduce (PyObject *self, PyObject *const *args,
                                Py_ssize_t nargs, PyObject *kwnames)
{
    static const char where[] = "ddp.all_reduce";
    PyObject *x = NULL, *opo = NULL, *seq, *res;
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE (kwnames) : 0;
    struct pyddp_data d;
    int op = DDP_SUM, rc;

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
    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0)
        return NULL;
    if (PyLong_Check (x) || PyFloat_Check (x))
        return reduce_numbers (&x, 1, op, false, true);
    if (PyList_Check (x) || PyTuple_Check (x)) {
        if (!(seq = PySequence_Fast (x, "")))
            return NULL;
        res = reduce_numbers (PySequence_Fast_ITEMS (seq),
                              PySequence_Fast_GET_SIZE (seq), op,
                              PyTuple_Check (x), false);
        Py_DECREF (seq);
        return res;
    }
    if ((rc = pyddp_data_get (x, &d, PYDDP_DATA_UPDATE, where, "x")) < 0)
        return NULL;
    if (rc == 0) {
        res = reduce_data (&d, op);
        pyddp_data_release (&d);
        return res;
    }
    return PyErr_Format (PyExc_TypeError, "%s: x is a %s: pass an int, a "
                         "float, a list or tuple of them, a buffer "
                         "(array.array, numpy array) or a tensor (torch, "
                         "or anything with __dlpack__)", where,
                         Py_TYPE (x)->tp_name);
}

/* ---- Tensors and buffers in place ------------------------------------- */

/* A rank argument of a call: 0 .. world_size - 1; -1 with ValueError set. */
static int check_rank (int r, const char *where, const char *what)
{
    if (r >= 0 && r < ddp_world_size ())
        return r;
    PyErr_Format (PyExc_ValueError, "%s: %s=%d is not a rank of this job "
                  "(0 .. %d)", where, what, r, ddp_world_size () - 1);
    return -1;
}

/* x as d for a call named where; 0, or -1 with an exception set (a
 * TypeError when x lends no memory at all). */
static int get_data (PyObject *x, struct pyddp_data *d, unsigned flags,
                     const char *where, const char *what)
{
    int rc = pyddp_data_get (x, d, flags, where, what);

    if (rc == 1) {
        PyErr_Format (PyExc_TypeError, "%s: %s is a %s: pass a tensor (torch, "
                      "or anything with __dlpack__) or a buffer (numpy "
                      "array, array.array, bytearray)%s", where, what,
                      Py_TYPE (x)->tp_name,
                      strcmp (where, "ddp.broadcast") == 0
                          ? "; for other objects, ddp.broadcast_object()"
                          : "");
        return -1;
    }
    return rc;
}

PyDoc_STRVAR (broadcast_doc,
"broadcast(x, src=0)\n--\n\n"
"Copy src's x into x on every rank, in place, and return x.\n"
"\n"
"x is a tensor (torch's, CPU memory; anything with __dlpack__) or a\n"
"buffer (numpy array, array.array, bytearray) of int8, uint8, int32,\n"
"uint32, int64, uint64, float16, bfloat16, float32 or float64 elements,\n"
"writable but on src.  Every rank passes the same dtype and number of\n"
"elements (ddp.Error EMISMATCH otherwise).  A strided x (a transposed\n"
"tensor) is copied and written back.  For any other object,\n"
"broadcast_object().");

static PyObject *py_broadcast (PyObject *self, PyObject *args, PyObject *kw)
{
    static const char where[] = "ddp.broadcast";
    static char *kwlist[] = { "x", "src", NULL };
    struct pyddp_data d;
    PyObject *x, *res = NULL;
    int src = 0, root, rc;
    void *buf;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "O|i:broadcast", kwlist, &x,
                                      &src))
        return NULL;
    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0
        || check_rank (src, where, "src") < 0)
        return NULL;
    root = ddp_rank () == src;
    if (get_data (x, &d, root ? 0 : PYDDP_DATA_WRITE, where, "x") < 0)
        return NULL;
    if (check_shape (&d, where) == 0 && (buf = pyddp_data_buf (&d, root))) {
        DDP_CALL (rc, ddp_bcast (buf, d.count, d.dtype, src));
        if (rc < 0)
            data_fail (rc, where, " and src");
        else {
            if (!root)
                pyddp_data_write_back (&d);
            res = Py_NewRef (x);
        }
    }
    pyddp_data_release (&d);
    return res;
}

PyDoc_STRVAR (reduce_doc,
"reduce(x, dst=0, op='sum')\n--\n\n"
"Reduce x over all ranks with op into x on dst, in place; x is unchanged\n"
"elsewhere.  Returns x.  x as for broadcast() (writable on dst); every\n"
"rank passes the same dtype, number of elements, dst and op.");

static PyObject *py_reduce (PyObject *self, PyObject *args, PyObject *kw)
{
    static const char where[] = "ddp.reduce";
    static char *kwlist[] = { "x", "dst", "op", NULL };
    struct pyddp_data d;
    PyObject *x, *opo = NULL, *res = NULL;
    int dst = 0, op = DDP_SUM, here, rc;
    void *buf;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "O|iO:reduce", kwlist, &x,
                                      &dst, &opo))
        return NULL;
    if (opo && (op = parse_op (opo, where)) < 0)
        return NULL;
    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0
        || check_rank (dst, where, "dst") < 0)
        return NULL;
    here = ddp_rank () == dst;
    if (get_data (x, &d, here ? PYDDP_DATA_WRITE : 0, where, "x") < 0)
        return NULL;
    if (check_shape (&d, where) == 0 && (buf = pyddp_data_buf (&d, true))) {
        DDP_CALL (rc, ddp_reduce (buf, here ? buf : NULL, d.count, d.dtype,
                                  (ddp_op_t) op, dst));
        if (rc < 0)
            data_fail (rc, where, ", dst and op");
        else {
            if (here)
                pyddp_data_write_back (&d);
            res = Py_NewRef (x);
        }
    }
    pyddp_data_release (&d);
    return res;
}

/* out, where it is received, holds world_size times x's elements of x's
 * dtype; 0, or -1 with ValueError set. */
static int check_out (const struct pyddp_data *out,
                      const struct pyddp_data *x, const char *where)
{
    size_t world = (size_t) ddp_world_size ();

    if (out->dtype != x->dtype) {
        PyErr_Format (PyExc_ValueError, "%s: out holds %s elements and x "
                      "%s: pass the same dtype", where,
                      pyddp_dtype_name (out->dtype),
                      pyddp_dtype_name (x->dtype));
        return -1;
    }
    if (out->count != world * x->count) {
        PyErr_Format (PyExc_ValueError, "%s: out holds %zu elements: it "
                      "must hold world_size (%zu) times x's %zu, e.g. of "
                      "shape (%zu, *x.shape)", where, out->count, world,
                      x->count, world);
        return -1;
    }
    return 0;
}

/* all_gather_into / gather_into: x's elements of every rank into out
 * (rank order) on every rank (all) or on root. */
static PyObject *gather_into (PyObject *outo, PyObject *x, int root, bool all)
{
    const char *where = all ? "ddp.all_gather_into" : "ddp.gather_into";
    struct pyddp_data d, o;
    PyObject *res = NULL;
    bool here = all || ddp_rank () == root, have_out = false;
    void *send, *recv = NULL;
    int rc;

    if (get_data (x, &d, 0, where, "x") < 0)
        return NULL;
    if (here || outo != Py_None) {
        if (get_data (outo, &o, PYDDP_DATA_WRITE, where, "out") < 0)
            goto out;
        have_out = true;
        if (check_out (&o, &d, where) < 0)
            goto out;
    }
    if (check_shape (&d, where) < 0 || !(send = pyddp_data_buf (&d, true))
        || (here && !(recv = pyddp_data_buf (&o, false))))
        goto out;
    if (all)
        DDP_CALL (rc, ddp_allgather (send, recv, d.count, d.dtype));
    else
        DDP_CALL (rc, ddp_gather (send, recv, d.count, d.dtype, root));
    if (rc < 0)
        data_fail (rc, where, all ? "" : " and dst");
    else {
        if (here)
            pyddp_data_write_back (&o);
        res = Py_NewRef (here ? outo : Py_None);
    }
out:
    if (have_out)
        pyddp_data_release (&o);
    pyddp_data_release (&d);
    return res;
}

PyDoc_STRVAR (all_gather_into_doc,
"all_gather_into(out, x)\n--\n\n"
"Gather every rank's x into out on every rank, rank order, and return\n"
"out (torch.distributed's all_gather_into_tensor).  x as for broadcast();\n"
"out, writable, of x's dtype, holds world_size times x's elements (any\n"
"shape: (world_size * n,) or (world_size, *x.shape)); every rank passes\n"
"the same dtype and number of elements.  x may be this rank's part of\n"
"out.  For objects of any size, all_gather().");

static PyObject *py_all_gather_into (PyObject *self, PyObject *args,
                                     PyObject *kw)
{
    static char *kwlist[] = { "out", "x", NULL };
    PyObject *out, *x;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "OO:all_gather_into", kwlist,
                                      &out, &x))
        return NULL;
    if (pyddp_ensure_init () < 0
        || pyddp_refuse_local ("ddp.all_gather_into") < 0)
        return NULL;
    return gather_into (out, x, 0, true);
}

PyDoc_STRVAR (gather_into_doc,
"gather_into(out, x, dst=0)\n--\n\n"
"As all_gather_into(), with the result on dst only: out is returned\n"
"there, None elsewhere, where out may be None (it is not touched).");

static PyObject *py_gather_into (PyObject *self, PyObject *args, PyObject *kw)
{
    static const char where[] = "ddp.gather_into";
    static char *kwlist[] = { "out", "x", "dst", NULL };
    PyObject *out, *x;
    int dst = 0;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "OO|i:gather_into", kwlist,
                                      &out, &x, &dst))
        return NULL;
    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0
        || check_rank (dst, where, "dst") < 0)
        return NULL;
    return gather_into (out, x, dst, false);
}

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

PyMethodDef pyddp_coll_methods[] = {
    NOARGS (barrier),
    { "all_reduce", (PyCFunction) (void (*) (void)) py_all_reduce,
      METH_FASTCALL | METH_KEYWORDS, all_reduce_doc },
    { "broadcast", (PyCFunction) (void (*) (void)) py_broadcast,
      METH_VARARGS | METH_KEYWORDS, broadcast_doc },
    { "reduce", (PyCFunction) (void (*) (void)) py_reduce,
      METH_VARARGS | METH_KEYWORDS, reduce_doc },
    { "all_gather_into", (PyCFunction) (void (*) (void)) py_all_gather_into,
      METH_VARARGS | METH_KEYWORDS, all_gather_into_doc },
    { "gather_into", (PyCFunction) (void (*) (void)) py_gather_into,
      METH_VARARGS | METH_KEYWORDS, gather_into_doc },
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
