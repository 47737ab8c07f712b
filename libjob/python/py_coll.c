/* py_coll.c - the collectives of ddp._ddp: barrier(), all_reduce() of
 * numbers, sequences, buffers and tensors, and the in-place calls on
 * buffers and tensors (broadcast, reduce, all_gather_into, gather_into,
 * reduce_scatter: their memory lent by py_data.c); the variable-size data
 * under the object calls are py_objects.c's.  Each releases the GIL while
 * it waits (DDP_CALL) and, but barrier(), refuses to run inside a local
 * block.
 *
 * The calls on buffers and tensors (and barrier, all_reduce) take group=
 * (a ddp.Group of py_group.c; None: the world) and async_op=: with True
 * they start the collective and return a ddp.Request (py_request.c) that
 * holds the objects and their memory until it completed.  struct coll
 * carries what a call has chosen: the communicator, where its data are
 * kept (on the stack, or in the request), and ends it either way
 * (coll_end).
 */
#include "pyddp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define SCALARS_STACK 32        /* sequence elements reduced on the stack */

/* ---- The group and the request of a call -------------------------------- */

struct coll {
    const char *where;
    ddp_comm_t *comm;           /* NULL: the world */
    PyObject *group;            /* borrowed: the ddp.Group, NULL: the world */
    int rank, size;             /* this rank's in comm, comm's size */
    PyObject *req;              /* async_op: the ddp.Request, else NULL */
    struct pyddp_data own[2];
    struct pyddp_data *d;       /* own, or the request's */
};

/* Set c up for a call named where on group (None: the world), async or
 * not; local_ok: the call may run inside a local block.  0, or -1 with an
 * exception set (nothing to release). */
static int coll_begin (struct coll *c, const char *where, PyObject *group,
                       bool async, bool local_ok)
{
    memset (c, 0, sizeof (*c));
    c->where = where;
    c->d = c->own;
    if (pyddp_ensure_init () < 0
        || (!local_ok && pyddp_refuse_local (where) < 0)
        || pyddp_group_comm (group, &c->comm, where) < 0)
        return -1;
    c->group = group == Py_None ? NULL : group;
    c->rank = ddp_comm_rank (c->comm);
    c->size = ddp_comm_size (c->comm);
    if (async) {
        if (!(c->req = pyddp_request_new (where, c->comm, c->group)))
            return -1;
        c->d = pyddp_request_data (c->req);
    }
    return 0;
}

/* Give back what c holds (after a failure). */
static void coll_abort (struct coll *c)
{
    for (int i = 0; i < 2; i++)
        pyddp_data_release (&c->d[i]);
    Py_CLEAR (c->req);
}

/* Raise for a failed data collective: DDP_EMISMATCH (the ranks' calls
 * differ: libddp agrees on the dtype and the count in the call) in words
 * that name what the Python caller controls, then libddp's detail; any
 * other code as pyddp_fail_here(). */
static void data_fail (int rc, const char *where, const char *also)
{
    if (rc != DDP_EMISMATCH || !also)
        pyddp_fail_here (rc, where);
    else
        pyddp_fail_data (rc, where, also, ddp_last_error ());
}

/* The call returned rc; r is the request it started (async).  Blocking:
 * write back the data of write_back's bits (of the first nd), give them
 * back, return result (or finish's).  Async: the ddp.Request that holds
 * them.  also: the EMISMATCH words (NULL: not a data collective). */
static PyObject *coll_end (struct coll *c, int rc, ddp_request_t *r, int nd,
                           unsigned write_back, PyObject *result,
                           pyddp_finish_fn finish, const char *also)
{
    PyObject *res;

    if (rc < 0) {
        data_fail (rc, c->where, also);
        coll_abort (c);
        return NULL;
    }
    if (c->req) {
        res = pyddp_request_start (c->req, r, nd, write_back, result, finish,
                                   also);
        c->req = NULL;
        return res;
    }
    for (int i = 0; i < nd; i++)
        if (write_back & (1u << i))
            pyddp_data_write_back (&c->d[i]);
    res = finish ? finish (&c->d[0], result) : Py_NewRef (result);
    coll_abort (c);
    return res;
}

/* The value of an async_op= argument (NULL: absent); 0/1, or -1. */
static int truth (PyObject *o)
{
    return o ? PyObject_IsTrue (o) : 0;
}

/* Parse a METH_FASTCALL | METH_KEYWORDS call: names[] (NULL-ended) are
 * the parameters, the first npos positional too; slots[] receive them
 * (borrowed; NULL when absent).  0, or -1 with TypeError set. */
static int parse_fast (PyObject *const *args, Py_ssize_t nargs,
                       PyObject *kwnames, const char *const *names,
                       Py_ssize_t npos, PyObject **slots, const char *where)
{
    Py_ssize_t nkw = kwnames ? PyTuple_GET_SIZE (kwnames) : 0, n = 0;

    while (names[n])
        n++;
    if (nargs > npos) {
        PyErr_Format (PyExc_TypeError, "%s() takes at most %zd positional "
                      "arguments (%zd given)", where, npos, nargs);
        return -1;
    }
    for (Py_ssize_t i = 0; i < n; i++)
        slots[i] = i < nargs ? args[i] : NULL;
    for (Py_ssize_t k = 0; k < nkw; k++) {
        PyObject *name = PyTuple_GET_ITEM (kwnames, k);
        Py_ssize_t i = 0;
        while (i < n && PyUnicode_CompareWithASCIIString (name, names[i]) != 0)
            i++;
        if (i == n) {
            PyErr_Format (PyExc_TypeError, "%s() got an unexpected keyword "
                          "argument %R", where, name);
            return -1;
        }
        if (slots[i]) {
            PyErr_Format (PyExc_TypeError, "%s() got %R twice", where, name);
            return -1;
        }
        slots[i] = args[nargs + k];
    }
    return 0;
}

/* ---- Barrier and all_reduce --------------------------------------------- */

PyDoc_STRVAR (barrier_doc,
"barrier(*, group=None, async_op=False)\n--\n\n"
"Wait until every rank (of group: a ddp.Group; None, the world) has\n"
"called barrier().  Bounded by DDP_TIMEOUT (default 30 s): a rank that\n"
"does not come is named in ddp.TimeoutError, a dead one in\n"
"ddp.PeerError.  With async_op=True it returns a ddp.Request at once\n"
"(wait() it).  Inside a main-only block (run_on_main's func, main_only(),\n"
"main_process_only) it returns at once, as only this rank is there\n"
"(speechbrain's ddp_barrier does the same).");

static PyObject *py_barrier (PyObject *self, PyObject *args, PyObject *kw)
{
    static const char where[] = "ddp.barrier";
    static char *kwlist[] = { "group", "async_op", NULL };
    PyObject *group = Py_None;
    ddp_request_t *r = NULL;
    struct coll c;
    int async = 0, rc = 0;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "|$Op:barrier", kwlist,
                                      &group, &async)
        || coll_begin (&c, where, group, async, true) < 0)
        return NULL;
    if (pyddp_local_depth > 0) {
        /* only this rank is here: nothing to wait for */
    }
    else if (c.req)
        DDP_CALL (rc, ddp_comm_ibarrier (c.comm, &r));
    else
        DDP_CALL (rc, ddp_comm_barrier (c.comm));
    return coll_end (&c, rc, r, 0, 0, Py_None, NULL, NULL);
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

/* With DDP_CHECK=1, where libddp compares every call's dtype and count
 * across the ranks, the module also compares the shapes of their tensors
 * and buffers, before any data moves: one all-reduce (on the call's
 * communicator) of two 64-bit words (the largest hash of the shape and of
 * its complement, i.e. the largest and the smallest).  0, or -1 with an
 * exception set: ddp.Error (EMISMATCH) on every rank when the shapes
 * differ. */
static int check_shape (const struct pyddp_data *d, const struct coll *c)
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
    DDP_CALL (rc, ddp_comm_allreduce (c->comm, w, w, 2, DDP_UINT64, DDP_MAX));
    if (rc < 0) {
        pyddp_fail_here (rc, c->where);
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
    pyddp_fail (DDP_EMISMATCH, c->where, msg);
    return -1;
}

/* The result of all_reduce of a read-only contiguous d, in store: a new
 * memoryview of d's format and shape (a pyddp_finish_fn). */
static PyObject *readonly_result (struct pyddp_data *d, PyObject *store)
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

/* all_reduce of a buffer or tensor, c->d[0]: in place if writable (a
 * strided one through a contiguous copy written back), else a contiguous
 * read-only buffer into a new memoryview of the same format and shape. */
static PyObject *reduce_data (struct coll *c, int op)
{
    struct pyddp_data *d = &c->d[0];
    PyObject *res, *store = NULL;
    ddp_request_t *r = NULL;
    void *send, *recv;
    int rc;

    if (!d->writable && !d->contiguous) {
        PyErr_Format (PyExc_ValueError, "%s: x (a %s) is read-only and not "
                      "one contiguous block: pass a contiguous copy",
                      c->where, Py_TYPE (d->obj)->tp_name);
        goto fail;
    }
    if (check_shape (d, c) < 0 || !(send = pyddp_data_buf (d, true)))
        goto fail;
    recv = send;
    if (!d->writable) {
        if (!(store = PyByteArray_FromStringAndSize (
                  NULL, (Py_ssize_t) (d->count * d->itemsize))))
            goto fail;
        recv = PyByteArray_AS_STRING (store);
    }
    if (c->req)
        DDP_CALL (rc, ddp_comm_iallreduce (c->comm, send, recv, d->count,
                                           d->dtype, (ddp_op_t) op, &r));
    else
        DDP_CALL (rc, ddp_comm_allreduce (c->comm, send, recv, d->count,
                                          d->dtype, (ddp_op_t) op));
    res = store ? coll_end (c, rc, r, 1, 0, store, readonly_result, " and op")
                : coll_end (c, rc, r, 1, 1, d->obj, NULL, " and op");
    Py_XDECREF (store);
    return res;
fail:
    coll_abort (c);
    return NULL;
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

/* all_reduce of ints and floats, n of them at items (borrowed), on comm. */
static PyObject *reduce_numbers (ddp_comm_t *comm, PyObject *const *items,
                                 Py_ssize_t n, int op, bool as_tuple,
                                 bool scalar)
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
    DDP_CALL (rc, ddp_comm_allreduce (comm, b, b, (size_t) n,
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
"all_reduce(x, op='sum', *, group=None, async_op=False)\n--\n\n"
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
"group: a ddp.Group (split(), new_group()) to reduce over its ranks only\n"
"('avg' divides by its size); None, the world.  async_op=True (tensors\n"
"and buffers only) starts the reduction and returns a ddp.Request at\n"
"once: x belongs to it until request.wait() returns x (or the new\n"
"memoryview); several may be in flight.\n"
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
    static const char *const names[] = { "x", "op", "group", "async_op",
                                         NULL };
    PyObject *a[4], *seq, *res, *x;
    struct coll c;
    int op = DDP_SUM, async, rc;

    (void) self;
    if (parse_fast (args, nargs, kwnames, names, 2, a, where) < 0)
        return NULL;
    if (!(x = a[0]))
        return PyErr_Format (PyExc_TypeError, "%s() missing x", where);
    if ((a[1] && (op = parse_op (a[1], where)) < 0)
        || (async = truth (a[3])) < 0)
        return NULL;
    if (async && (PyLong_Check (x) || PyFloat_Check (x) || PyList_Check (x)
                  || PyTuple_Check (x)))
        return PyErr_Format (PyExc_TypeError, "%s: async_op=True takes a "
                             "tensor or a buffer (reduced in place), not a "
                             "%s: reduce numbers without it", where,
                             Py_TYPE (x)->tp_name);
    if (coll_begin (&c, where, a[2] ? a[2] : Py_None, async, false) < 0)
        return NULL;
    if (PyLong_Check (x) || PyFloat_Check (x))
        return reduce_numbers (c.comm, &x, 1, op, false, true);
    if (PyList_Check (x) || PyTuple_Check (x)) {
        if (!(seq = PySequence_Fast (x, "")))
            return NULL;
        res = reduce_numbers (c.comm, PySequence_Fast_ITEMS (seq),
                              PySequence_Fast_GET_SIZE (seq), op,
                              PyTuple_Check (x), false);
        Py_DECREF (seq);
        return res;
    }
    if ((rc = pyddp_data_get (x, &c.d[0], PYDDP_DATA_UPDATE, where, "x")) < 0) {
        coll_abort (&c);
        return NULL;
    }
    if (rc == 0)
        return reduce_data (&c, op);
    coll_abort (&c);
    return PyErr_Format (PyExc_TypeError, "%s: x is a %s: pass an int, a "
                         "float, a list or tuple of them, a buffer "
                         "(array.array, numpy array) or a tensor (torch, "
                         "or anything with __dlpack__)", where,
                         Py_TYPE (x)->tp_name);
}

/* ---- Tensors and buffers in place ------------------------------------- */

/* A rank argument of a call on c's communicator: 0 .. size - 1; -1 with
 * ValueError set. */
static int check_rank (int r, const struct coll *c, const char *what)
{
    if (r >= 0 && r < c->size)
        return r;
    PyErr_Format (PyExc_ValueError, "%s: %s=%d is not a rank of this %s "
                  "(0 .. %d)", c->where, what, r, c->group ? "group" : "job",
                  c->size - 1);
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

#define GROUP_ASYNC_DOC                                                     \
"group: a ddp.Group (its ranks only; ranks are the group's); None, the\n"  \
"world.  async_op=True returns a ddp.Request at once (wait() returns\n"    \
"what the call returns); the objects belong to it until then.\n"

PyDoc_STRVAR (broadcast_doc,
"broadcast(x, src=0, *, group=None, async_op=False)\n--\n\n"
"Copy src's x into x on every rank, in place, and return x.\n"
"\n"
"x is a tensor (torch's, CPU memory; anything with __dlpack__) or a\n"
"buffer (numpy array, array.array, bytearray) of int8, uint8, int32,\n"
"uint32, int64, uint64, float16, bfloat16, float32 or float64 elements,\n"
"writable but on src.  Every rank passes the same dtype and number of\n"
"elements (ddp.Error EMISMATCH otherwise).  A strided x (a transposed\n"
"tensor) is copied and written back.  For any other object,\n"
"broadcast_object().\n" GROUP_ASYNC_DOC);

static PyObject *py_broadcast (PyObject *self, PyObject *args, PyObject *kw)
{
    static const char where[] = "ddp.broadcast";
    static char *kwlist[] = { "x", "src", "group", "async_op", NULL };
    PyObject *x, *group = Py_None;
    ddp_request_t *r = NULL;
    struct coll c;
    int src = 0, async = 0, root, rc;
    void *buf;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "O|i$Op:broadcast", kwlist,
                                      &x, &src, &group, &async)
        || coll_begin (&c, where, group, async, false) < 0)
        return NULL;
    if (check_rank (src, &c, "src") < 0)
        goto fail;
    root = c.rank == src;
    if (get_data (x, &c.d[0], root ? 0 : PYDDP_DATA_WRITE, where, "x") < 0
        || check_shape (&c.d[0], &c) < 0
        || !(buf = pyddp_data_buf (&c.d[0], root)))
        goto fail;
    if (c.req)
        DDP_CALL (rc, ddp_comm_ibcast (c.comm, buf, c.d[0].count,
                                       c.d[0].dtype, src, &r));
    else
        DDP_CALL (rc, ddp_comm_bcast (c.comm, buf, c.d[0].count,
                                      c.d[0].dtype, src));
    return coll_end (&c, rc, r, 1, root ? 0 : 1, x, NULL, " and src");
fail:
    coll_abort (&c);
    return NULL;
}

PyDoc_STRVAR (reduce_doc,
"reduce(x, dst=0, op='sum', *, group=None, async_op=False)\n--\n\n"
"Reduce x over all ranks with op into x on dst, in place; x is unchanged\n"
"elsewhere.  Returns x.  x as for broadcast() (writable on dst); every\n"
"rank passes the same dtype, number of elements, dst and op.\n"
GROUP_ASYNC_DOC);

static PyObject *py_reduce (PyObject *self, PyObject *args, PyObject *kw)
{
    static const char where[] = "ddp.reduce";
    static char *kwlist[] = { "x", "dst", "op", "group", "async_op", NULL };
    PyObject *x, *opo = NULL, *group = Py_None;
    ddp_request_t *r = NULL;
    struct coll c;
    int dst = 0, op = DDP_SUM, async = 0, here, rc;
    void *buf;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "O|iO$Op:reduce", kwlist, &x,
                                      &dst, &opo, &group, &async))
        return NULL;
    if (opo && (op = parse_op (opo, where)) < 0)
        return NULL;
    if (coll_begin (&c, where, group, async, false) < 0)
        return NULL;
    if (check_rank (dst, &c, "dst") < 0)
        goto fail;
    here = c.rank == dst;
    if (get_data (x, &c.d[0], here ? PYDDP_DATA_WRITE : 0, where, "x") < 0
        || check_shape (&c.d[0], &c) < 0
        || !(buf = pyddp_data_buf (&c.d[0], true)))
        goto fail;
    if (c.req)
        DDP_CALL (rc, ddp_comm_ireduce (c.comm, buf, here ? buf : NULL,
                                        c.d[0].count, c.d[0].dtype,
                                        (ddp_op_t) op, dst, &r));
    else
        DDP_CALL (rc, ddp_comm_reduce (c.comm, buf, here ? buf : NULL,
                                       c.d[0].count, c.d[0].dtype,
                                       (ddp_op_t) op, dst));
    return coll_end (&c, rc, r, 1, here ? 1 : 0, x, NULL, ", dst and op");
fail:
    coll_abort (&c);
    return NULL;
}

/* out, where it is received, holds size times x's elements of x's dtype;
 * 0, or -1 with ValueError set. */
static int check_out (const struct pyddp_data *out,
                      const struct pyddp_data *x, const struct coll *c)
{
    size_t size = (size_t) c->size;
    const char *what = c->group ? "the group's size" : "world_size";

    if (out->dtype != x->dtype) {
        PyErr_Format (PyExc_ValueError, "%s: out holds %s elements and x "
                      "%s: pass the same dtype", c->where,
                      pyddp_dtype_name (out->dtype),
                      pyddp_dtype_name (x->dtype));
        return -1;
    }
    if (out->count != size * x->count) {
        PyErr_Format (PyExc_ValueError, "%s: out holds %zu elements: it "
                      "must hold %s (%zu) times x's %zu, e.g. of "
                      "shape (%zu, *x.shape)", c->where, out->count, what,
                      size, x->count, size);
        return -1;
    }
    return 0;
}

/* all_gather_into / gather_into: x's elements of every rank into out
 * (rank order) on every rank (all) or on root. */
static PyObject *gather_into (struct coll *c, PyObject *outo, PyObject *x,
                              int root, bool all)
{
    struct pyddp_data *d = &c->d[0], *o = &c->d[1];
    bool here = all || c->rank == root, have_out = false;
    ddp_request_t *r = NULL;
    void *send, *recv = NULL;
    int rc;

    if (get_data (x, d, 0, c->where, "x") < 0)
        goto fail;
    if (here || outo != Py_None) {
        if (get_data (outo, o, PYDDP_DATA_WRITE, c->where, "out") < 0)
            goto fail;
        have_out = true;
        if (check_out (o, d, c) < 0)
            goto fail;
    }
    if (check_shape (d, c) < 0 || !(send = pyddp_data_buf (d, true))
        || (here && !(recv = pyddp_data_buf (o, false))))
        goto fail;
    if (all && c->req)
        DDP_CALL (rc, ddp_comm_iallgather (c->comm, send, recv, d->count,
                                           d->dtype, &r));
    else if (all)
        DDP_CALL (rc, ddp_comm_allgather (c->comm, send, recv, d->count,
                                          d->dtype));
    else if (c->req)
        DDP_CALL (rc, ddp_comm_igather (c->comm, send, recv, d->count,
                                        d->dtype, root, &r));
    else
        DDP_CALL (rc, ddp_comm_gather (c->comm, send, recv, d->count,
                                       d->dtype, root));
    return coll_end (c, rc, r, have_out ? 2 : 1, here ? 2 : 0,
                     here ? outo : Py_None, NULL, all ? "" : " and dst");
fail:
    coll_abort (c);
    return NULL;
}

PyDoc_STRVAR (all_gather_into_doc,
"all_gather_into(out, x, *, group=None, async_op=False)\n--\n\n"
"Gather every rank's x into out on every rank, rank order, and return\n"
"out (torch.distributed's all_gather_into_tensor).  x as for broadcast();\n"
"out, writable, of x's dtype, holds world_size (the group's size) times\n"
"x's elements (any shape: (size * n,) or (size, *x.shape)); every rank\n"
"passes the same dtype and number of elements.  x may be this rank's part\n"
"of out.  For objects of any size, all_gather().\n" GROUP_ASYNC_DOC);

static PyObject *py_all_gather_into (PyObject *self, PyObject *args,
                                     PyObject *kw)
{
    static char *kwlist[] = { "out", "x", "group", "async_op", NULL };
    PyObject *out, *x, *group = Py_None;
    struct coll c;
    int async = 0;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "OO|$Op:all_gather_into",
                                      kwlist, &out, &x, &group, &async)
        || coll_begin (&c, "ddp.all_gather_into", group, async, false) < 0)
        return NULL;
    return gather_into (&c, out, x, 0, true);
}

PyDoc_STRVAR (gather_into_doc,
"gather_into(out, x, dst=0, *, group=None, async_op=False)\n--\n\n"
"As all_gather_into(), with the result on dst only: out is returned\n"
"there, None elsewhere, where out may be None (it is not touched).\n"
GROUP_ASYNC_DOC);

static PyObject *py_gather_into (PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "out", "x", "dst", "group", "async_op", NULL };
    PyObject *out, *x, *group = Py_None;
    struct coll c;
    int dst = 0, async = 0;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "OO|i$Op:gather_into", kwlist,
                                      &out, &x, &dst, &group, &async)
        || coll_begin (&c, "ddp.gather_into", group, async, false) < 0)
        return NULL;
    if (check_rank (dst, &c, "dst") < 0) {
        coll_abort (&c);
        return NULL;
    }
    return gather_into (&c, out, x, dst, false);
}

/* ---- Reduce-scatter ------------------------------------------------------ */

/* Do the bytes of a and b overlap (both contiguous)? */
static bool overlap (const struct pyddp_data *a, const struct pyddp_data *b)
{
    uintptr_t a0 = (uintptr_t) a->base, b0 = (uintptr_t) b->base;

    return a->count && b->count && a0 < b0 + b->count * b->itemsize
           && b0 < a0 + a->count * a->itemsize;
}

/* out (when given) for reduce_scatter of x: x's dtype, n elements, and
 * either apart from x or exactly this rank's block of it.  0, or -1 with
 * ValueError set. */
static int check_block (const struct pyddp_data *o, const struct pyddp_data *d,
                        size_t n, const struct coll *c)
{
    if (o->dtype != d->dtype) {
        PyErr_Format (PyExc_ValueError, "%s: out holds %s elements and x "
                      "%s: pass the same dtype", c->where,
                      pyddp_dtype_name (o->dtype),
                      pyddp_dtype_name (d->dtype));
        return -1;
    }
    if (o->count != n) {
        PyErr_Format (PyExc_ValueError, "%s: out holds %zu elements: it "
                      "must hold x's %zu divided by %s (%d), %zu", c->where,
                      o->count, d->count,
                      c->group ? "the group's size" : "world_size", c->size,
                      n);
        return -1;
    }
    if (o->contiguous && d->contiguous && overlap (o, d)
        && o->base != d->base + (size_t) c->rank * n * d->itemsize) {
        PyErr_Format (PyExc_ValueError, "%s: out shares memory with x but "
                      "is not this rank's block of it (elements %zu .. %zu): "
                      "pass that block, a separate out, or out=None", c->where,
                      (size_t) c->rank * n, (size_t) c->rank * n + n - 1);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR (reduce_scatter_doc,
"reduce_scatter(x, out=None, op='sum', *, group=None, async_op=False)\n--\n\n"
"Reduce x over all ranks with op and leave block r of the result in\n"
"rank r's out (torch.distributed's reduce_scatter_tensor,\n"
"MPI_Reduce_scatter_block): x holds size * n elements (size: world_size,\n"
"or the group's), block r is elements r * n .. r * n + n - 1 in memory\n"
"order.  out, writable, of x's dtype, holds n elements (any shape), and\n"
"is returned.  With out=None the result is left in place, in this\n"
"rank's block of x (x writable; its other blocks are then undefined),\n"
"and x is returned; out may also be that block itself (a view).  x as\n"
"for broadcast(); every rank passes the same dtype, number of elements\n"
"and op ('avg' divides by the size).\n" GROUP_ASYNC_DOC);

static PyObject *py_reduce_scatter (PyObject *self, PyObject *args,
                                    PyObject *kw)
{
    static const char where[] = "ddp.reduce_scatter";
    static char *kwlist[] = { "x", "out", "op", "group", "async_op", NULL };
    PyObject *x, *outo = Py_None, *opo = NULL, *group = Py_None;
    struct pyddp_data *d, *o;
    ddp_request_t *r = NULL;
    struct coll c;
    int op = DDP_SUM, async = 0, rc;
    bool in_place;
    size_t n;
    char *send, *recv;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "O|OO$Op:reduce_scatter",
                                      kwlist, &x, &outo, &opo, &group, &async))
        return NULL;
    if (opo && (op = parse_op (opo, where)) < 0)
        return NULL;
    if (coll_begin (&c, where, group, async, false) < 0)
        return NULL;
    d = &c.d[0];
    o = &c.d[1];
    in_place = outo == Py_None;
    if (get_data (x, d, in_place ? PYDDP_DATA_WRITE : 0, where, "x") < 0)
        goto fail;
    if (d->count % (size_t) c.size) {
        PyErr_Format (PyExc_ValueError, "%s: x holds %zu elements: it must "
                      "hold a multiple of %s (%d), one block for each rank",
                      where, d->count,
                      c.group ? "the group's size" : "world_size", c.size);
        goto fail;
    }
    n = d->count / (size_t) c.size;
    if (!in_place && (get_data (outo, o, PYDDP_DATA_WRITE, where, "out") < 0
                      || check_block (o, d, n, &c) < 0))
        goto fail;
    if (check_shape (d, &c) < 0 || !(send = pyddp_data_buf (d, true)))
        goto fail;
    if (in_place)
        recv = send + (size_t) c.rank * n * d->itemsize;
    else if (!(recv = pyddp_data_buf (o, false)))
        goto fail;
    if (c.req)
        DDP_CALL (rc, ddp_comm_ireduce_scatter (c.comm, send, recv, n,
                                                d->dtype, (ddp_op_t) op, &r));
    else
        DDP_CALL (rc, ddp_comm_reduce_scatter (c.comm, send, recv, n,
                                               d->dtype, (ddp_op_t) op));
    return coll_end (&c, rc, r, in_place ? 1 : 2, in_place ? 1 : 2,
                     in_place ? x : outo, NULL, " and op");
fail:
    coll_abort (&c);
    return NULL;
}

/* ---- Methods ----------------------------------------------------------- */

#define KW(name) { #name, (PyCFunction) (void (*) (void)) py_##name,          \
                   METH_VARARGS | METH_KEYWORDS, name##_doc }

PyMethodDef pyddp_coll_methods[] = {
    KW (barrier),
    { "all_reduce", (PyCFunction) (void (*) (void)) py_all_reduce,
      METH_FASTCALL | METH_KEYWORDS, all_reduce_doc },
    KW (broadcast),
    KW (reduce),
    KW (all_gather_into),
    KW (gather_into),
    KW (reduce_scatter),
    { NULL, NULL, 0, NULL }
};

/* vi: ts=4 sw=4 expandtab
 */
