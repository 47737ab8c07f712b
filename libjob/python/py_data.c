/* py_data.c - the memory a data collective of ddp._ddp works on: a
 * Python object that exports its elements, through the buffer protocol
 * (numpy arrays, array.array, bytearray, memoryview) or through DLPack's
 * __dlpack__() (torch tensors, and any other producer of a "dltensor"
 * capsule), seen as one struct pyddp_data: where the elements are, how
 * many, their libddp dtype, and their layout.
 *
 * No copy where the memory allows it: a C-contiguous object is passed to
 * libddp as it is.  A strided one (a transposed or sliced tensor, a numpy
 * view with steps) is copied into a contiguous block for the call and the
 * result written back through the same strides; one whose elements
 * overlap (torch's expand(), numpy's broadcast_to) is refused, since a
 * result cannot be written back to it.  A CUDA tensor is taken under the
 * NCCL backend, on the GPU libddp uses, contiguous: exported again with
 * libddp's stream (DLPack's __dlpack__(stream=)), so that the producer
 * orders its pending work on the tensor before the collective; the
 * collective returns once done on the GPU.  Elsewhere it is refused with
 * what to do.
 *
 * The DLPack declarations below are written from the public specification
 * of its C ABI (DLPack 0.x, the version __dlpack__() returns in a capsule
 * named "dltensor"): only the fields this file reads.  The capsule is
 * borrowed, not consumed: its producer's destructor frees the tensor's
 * export when the capsule goes, as the specification asks of a producer.
 */
#include "pyddp.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* ---- DLPack (from the specification) ------------------------------------ */

enum {
    DL_CPU = 1,             /* kDLCPU */
    DL_CUDA = 2,            /* kDLCUDA */
    DL_CUDA_HOST = 3,       /* kDLCUDAHost: pinned host memory */
    DL_CUDA_MANAGED = 13,   /* kDLCUDAManaged */
};

enum {
    DL_INT = 0, DL_UINT = 1, DL_FLOAT = 2, DL_OPAQUE = 3, DL_BFLOAT = 4,
    DL_COMPLEX = 5, DL_BOOL = 6,
};

struct dl_device {
    int32_t device_type;    /* an enum in dlpack.h: int-sized */
    int32_t device_id;
};

struct dl_dtype {
    uint8_t code;
    uint8_t bits;
    uint16_t lanes;
};

struct dl_tensor {
    void *data;
    struct dl_device device;
    int32_t ndim;
    struct dl_dtype dtype;
    int64_t *shape;
    int64_t *strides;       /* in elements; NULL: compact row-major */
    uint64_t byte_offset;
};

struct dl_managed_tensor {
    struct dl_tensor dl_tensor;
    void *manager_ctx;
    void (*deleter) (struct dl_managed_tensor *self);
};

/* ---- Names ---------------------------------------------------------------- */

static const char *const dtype_names[DDP_NUM_DTYPES] = {
    [DDP_INT8] = "int8", [DDP_UINT8] = "uint8", [DDP_INT32] = "int32",
    [DDP_UINT32] = "uint32", [DDP_INT64] = "int64", [DDP_UINT64] = "uint64",
    [DDP_FLOAT16] = "float16", [DDP_BFLOAT16] = "bfloat16",
    [DDP_FLOAT32] = "float32", [DDP_FLOAT64] = "float64",
};

#define DTYPE_LIST "int8, uint8, int32, uint32, int64, uint64, float16, " \
                   "bfloat16, float32 or float64"

const char *pyddp_dtype_name (ddp_dtype_t dt)
{
    return (unsigned) dt < DDP_NUM_DTYPES ? dtype_names[dt] : "?";
}

/* ---- The buffer protocol --------------------------------------------------- */

/* The dtype of a buffer's elements (struct module format, item size); -1
 * with ValueError set for one libddp does not have. */
static int buffer_dtype (const Py_buffer *v, const char *where,
                         const char *what)
{
    const char *f = v->format ? v->format : "B";
    char kind = 0;

    if (*f == '@' || *f == '=' || *f == '<')
        f++;
    else if (*f == '>' || *f == '!') {
        PyErr_Format (PyExc_ValueError, "%s: %s holds big-endian elements "
                      "(format %s): convert to native byte order", where,
                      what, v->format);
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
    PyErr_Format (PyExc_ValueError, "%s: %s holds elements of format '%s' "
                  "(%zd bytes), which ddp does not have: use " DTYPE_LIST,
                  where, what, v->format ? v->format : "B", v->itemsize);
    return -1;
}

/* d from the buffer x exports; 0, or -1 with an exception set. */
static int from_buffer (PyObject *x, struct pyddp_data *d, const char *where,
                        const char *what)
{
    int dt;

    if (PyObject_GetBuffer (x, &d->view, PyBUF_RECORDS) == 0)
        d->writable = true;
    else {
        PyErr_Clear ();
        if (PyObject_GetBuffer (x, &d->view, PyBUF_RECORDS_RO) < 0)
            return -1;
    }
    d->have_view = true;
    if ((dt = buffer_dtype (&d->view, where, what)) < 0)
        return -1;
    if (d->view.ndim > PYDDP_MAX_DIMS) {
        PyErr_Format (PyExc_ValueError, "%s: %s has %d dimensions (at most "
                      "%d)", where, what, d->view.ndim, PYDDP_MAX_DIMS);
        return -1;
    }
    d->dtype = (ddp_dtype_t) dt;
    d->base = d->view.buf;
    d->itemsize = (size_t) d->view.itemsize;
    d->ndim = d->view.ndim;
    for (int i = 0; i < d->ndim; i++) {
        d->shape[i] = d->view.shape[i];
        d->strides[i] = d->view.strides ? d->view.strides[i] : 0;
    }
    if (!d->view.strides && d->ndim > 0) {      /* C-contiguous */
        Py_ssize_t s = d->view.itemsize;
        for (int i = d->ndim - 1; i >= 0; i--) {
            d->strides[i] = s;
            s *= d->shape[i];
        }
    }
    if (d->ndim == 0 && d->view.len != d->view.itemsize) {
        /* ndim 0 without shape is a flat block of len bytes. */
        d->ndim = 1;
        d->shape[0] = d->view.len / d->view.itemsize;
        d->strides[0] = d->view.itemsize;
    }
    return 0;
}

/* ---- DLPack ---------------------------------------------------------------- */

/* The libddp dtype of a DLPack dtype; -1 with ValueError set (naming it)
 * for one ddp does not have. */
static int dlpack_dtype (struct dl_dtype t, const char *where,
                         const char *what)
{
    static const char *const codes[] = {
        [DL_INT] = "int", [DL_UINT] = "uint", [DL_FLOAT] = "float",
        [DL_OPAQUE] = "opaque", [DL_BFLOAT] = "bfloat",
        [DL_COMPLEX] = "complex", [DL_BOOL] = "bool",
    };
    const char *hint = "";

    if (t.lanes == 1) {
        switch (t.code) {
        case DL_INT:
            if (t.bits == 8) return DDP_INT8;
            if (t.bits == 32) return DDP_INT32;
            if (t.bits == 64) return DDP_INT64;
            break;
        case DL_UINT:
            if (t.bits == 8) return DDP_UINT8;
            if (t.bits == 32) return DDP_UINT32;
            if (t.bits == 64) return DDP_UINT64;
            break;
        case DL_FLOAT:
            if (t.bits == 16) return DDP_FLOAT16;
            if (t.bits == 32) return DDP_FLOAT32;
            if (t.bits == 64) return DDP_FLOAT64;
            break;
        case DL_BFLOAT:
            if (t.bits == 16) return DDP_BFLOAT16;
            break;
        }
    }
    if (t.code == DL_COMPLEX)
        hint = " (a complex tensor: pass torch.view_as_real(x))";
    else if (t.code == DL_BOOL)
        hint = " (convert with x.to(torch.uint8))";
    if (t.code < sizeof (codes) / sizeof (codes[0]) && t.code != DL_BOOL)
        PyErr_Format (PyExc_ValueError, "%s: %s holds %s%u%s elements, which "
                      "ddp does not have%s: use " DTYPE_LIST, where, what,
                      codes[t.code], t.bits, t.lanes == 1 ? "" : " (vector)",
                      hint);
    else
        PyErr_Format (PyExc_ValueError, "%s: %s holds %s elements (DLPack "
                      "type code %u, %u bits), which ddp does not have%s: "
                      "use " DTYPE_LIST, where, what,
                      t.code == DL_BOOL ? "bool" : "unknown", t.code, t.bits,
                      hint);
    return -1;
}

/* Raise for memory of a device this process cannot use from the CPU
 * (not a CUDA tensor libddp can take: cuda_usable); returns -1. */
static int refuse_device (int type, int id, const char *where,
                          const char *what)
{
    PyErr_Format (PyExc_ValueError, "%s: %s is on a device the CPU cannot "
                  "read (DLPack device type %d, id %d): pass a CPU copy",
                  where, what, type, id);
    return -1;
}

static bool cuda_device (int type)
{
    return type == DL_CUDA || type == DL_CUDA_MANAGED;
}

/* Can libddp's collectives take a CUDA tensor on device id (in this
 * process's view)?  Under the NCCL backend, on its device.  0, or -1 with
 * a ValueError that says what to do. */
static int cuda_usable (int id, const char *where, const char *what)
{
    int mine = ddp_cuda_device ();

    if (mine < 0) {
        PyErr_Format (PyExc_ValueError, "%s: %s is a CUDA tensor (cuda:%d), "
                      "but this job uses libddp's %s backend, which moves "
                      "host memory: run with the NCCL backend (srun "
                      "--ddp=nccl, DDP_BACKEND=nccl), or pass x.cpu() (and "
                      "copy the result back)", where, what, id,
                      ddp_backend_name ());
        return -1;
    }
    if (id != mine) {
        PyErr_Format (PyExc_ValueError, "%s: %s is on cuda:%d, but libddp's "
                      "NCCL communicator is on cuda:%d: move it there "
                      "(x.to(\"cuda:%d\"))", where, what, id, mine, mine);
        return -1;
    }
    return 0;
}

static bool cpu_device (int type)
{
    return type == DL_CPU || type == DL_CUDA_HOST;
}

/* Call export, x's method name, without arguments; a new reference, or
 * NULL with a ValueError set that says what failed, caused by what it
 * raised. */
static PyObject *call_export (PyObject *x, PyObject *export, const char *name,
                              const char *where, const char *what)
{
    PyObject *r = PyObject_CallNoArgs (export), *cause, *exc, *dtype;

    if (r || !(cause = pyddp_fetch_exception ()))
        return r;
    /* A torch tensor's dtype names what DLPack could not take (bool). */
    if (!(dtype = PyObject_GetAttrString (x, "dtype"))) {
        PyErr_Clear ();
        dtype = PyUnicode_FromString ("?");
    }
    PyErr_Format (PyExc_ValueError, "%s: %s (a %s, dtype %S) cannot lend "
                  "its memory: %s() raised %s: %S", where, what,
                  Py_TYPE (x)->tp_name, dtype ? dtype : Py_None, name,
                  Py_TYPE (cause)->tp_name, cause);
    Py_XDECREF (dtype);
    if ((exc = pyddp_fetch_exception ())) {
        PyException_SetCause (exc, cause);      /* steals cause */
        PyErr_SetObject ((PyObject *) Py_TYPE (exc), exc);
        Py_DECREF (exc);
    }
    else
        Py_DECREF (cause);
    return NULL;
}

/* The tensor in d's capsule, or NULL with a ValueError set. */
static const struct dl_tensor *capsule_tensor (struct pyddp_data *d,
                                               const char *where,
                                               const char *what)
{
    struct dl_managed_tensor *m;

    if (!PyCapsule_IsValid (d->capsule, "dltensor")) {
        PyErr_Format (PyExc_ValueError, "%s: %s.__dlpack__() returned a %s, "
                      "not a \"dltensor\" capsule", where, what,
                      Py_TYPE (d->capsule)->tp_name);
        return NULL;
    }
    m = PyCapsule_GetPointer (d->capsule, "dltensor");
    return &m->dl_tensor;
}

/* Export a CUDA tensor again, with libddp's stream as the consumer's
 * (__dlpack__(stream=S)): the producer makes S wait for the work it has
 * queued on the tensor (torch: its current stream).  d->capsule is
 * replaced.  0, or -1 with an exception set. */
static int cuda_export (PyObject *export, struct pyddp_data *d,
                        const char *where, const char *what)
{
    PyObject *args, *kw, *r;
    /* DLPack: 1 is CUDA's legacy default stream (NULL). */
    uintptr_t s = (uintptr_t) ddp_cuda_stream ();

    Py_CLEAR (d->capsule);
    args = PyTuple_New (0);
    kw = Py_BuildValue ("{s:K}", "stream",
                        (unsigned long long) (s ? s : 1));
    r = args && kw ? PyObject_Call (export, args, kw) : NULL;
    Py_XDECREF (args);
    Py_XDECREF (kw);
    if (!r) {
        PyObject *cause = pyddp_fetch_exception ();
        PyErr_Format (PyExc_ValueError, "%s: %s (a CUDA tensor) cannot be "
                      "ordered on libddp's stream: __dlpack__(stream=) "
                      "raised %s: %S", where, what,
                      cause ? Py_TYPE (cause)->tp_name : "?",
                      cause ? cause : Py_None);
        Py_XDECREF (cause);
        return -1;
    }
    d->capsule = r;
    return 0;
}

/* d from export(), x.__dlpack__; 0, or -1 with an exception set. */
static int from_dlpack (PyObject *x, PyObject *export, struct pyddp_data *d,
                        const char *where, const char *what)
{
    const struct dl_tensor *t;
    int dt;

    /* No __dlpack_device__() first (4 us a call in torch 1.13, more than
     * the rest of a small all_reduce): the export says where the memory
     * is, and __dlpack__() without a stream orders nothing on a GPU: a
     * CUDA tensor is exported again, with libddp's stream. */
    if (!(d->capsule = call_export (x, export, "__dlpack__", where, what))
        || !(t = capsule_tensor (d, where, what)))
        return -1;
    if (cuda_device (t->device.device_type)) {
        if (cuda_usable (t->device.device_id, where, what) < 0
            || cuda_export (export, d, where, what) < 0
            || !(t = capsule_tensor (d, where, what)))
            return -1;
        d->cuda = true;
    }
    else if (!cpu_device (t->device.device_type))
        return refuse_device (t->device.device_type, t->device.device_id,
                              where, what);
    if ((dt = dlpack_dtype (t->dtype, where, what)) < 0)
        return -1;
    if (t->ndim < 0 || t->ndim > PYDDP_MAX_DIMS) {
        PyErr_Format (PyExc_ValueError, "%s: %s has %d dimensions (at most "
                      "%d)", where, what, (int) t->ndim, PYDDP_MAX_DIMS);
        return -1;
    }
    d->dtype = (ddp_dtype_t) dt;
    d->itemsize = ddp_dtype_size (d->dtype);
    d->base = (char *) t->data + t->byte_offset;
    d->ndim = t->ndim;
    d->writable = true;         /* DLPack 0.x has no read-only flag */
    for (int i = d->ndim - 1; i >= 0; i--) {
        d->shape[i] = (Py_ssize_t) t->shape[i];
        if (t->strides)
            d->strides[i] = (Py_ssize_t) t->strides[i]
                            * (Py_ssize_t) d->itemsize;
        else
            d->strides[i] = i == d->ndim - 1
                ? (Py_ssize_t) d->itemsize
                : d->strides[i + 1] * d->shape[i + 1];
    }
    return 0;
}

/* ---- Layout ---------------------------------------------------------------- */

/* Is d one C-contiguous block?  (Dimensions of extent 1 have any stride.) */
static bool contiguous (const struct pyddp_data *d)
{
    Py_ssize_t s = (Py_ssize_t) d->itemsize;

    if (d->count == 0)
        return true;
    for (int i = d->ndim - 1; i >= 0; i--) {
        if (d->shape[i] != 1 && d->strides[i] != s)
            return false;
        s *= d->shape[i];
    }
    return true;
}

/* Do two elements of d share memory (a stride of 0, or dimensions that
 * interleave)?  Tested as: sorted by the size of their strides, each
 * dimension steps past the span of the ones below it (a sufficient
 * condition for distinct elements; layouts it rejects are exotic). */
static bool overlapping (const struct pyddp_data *d)
{
    Py_ssize_t st[PYDDP_MAX_DIMS], ext[PYDDP_MAX_DIMS], span;
    int n = 0;

    for (int i = 0; i < d->ndim; i++) {
        Py_ssize_t s = d->strides[i] < 0 ? -d->strides[i] : d->strides[i];
        int k;
        if (d->shape[i] <= 1)
            continue;
        for (k = n; k > 0 && st[k - 1] > s; k--) {
            st[k] = st[k - 1];
            ext[k] = ext[k - 1];
        }
        st[k] = s;
        ext[k] = d->shape[i];
        n++;
    }
    span = (Py_ssize_t) d->itemsize;    /* bytes the lower dimensions span */
    for (int k = 0; k < n; k++) {
        if (st[k] < span)
            return true;
        span += st[k] * (ext[k] - 1);
    }
    return false;
}

/* Copy between d's strided elements and the contiguous block flat, in
 * row-major order: into flat when gather, else from it. */
static void strided_copy (const struct pyddp_data *d, char *flat, bool gather)
{
    Py_ssize_t idx[PYDDP_MAX_DIMS] = { 0 };
    const int last = d->ndim - 1;
    const size_t is = d->itemsize;
    char *p = d->base;

    for (size_t k = 0; k < d->count; k++) {
        if (gather)
            memcpy (flat + k * is, p, is);
        else
            memcpy (p, flat + k * is, is);
        /* Next element: the odometer over the dimensions. */
        for (int i = last; i >= 0; i--) {
            p += d->strides[i];
            if (++idx[i] < d->shape[i])
                break;
            p -= d->strides[i] * d->shape[i];
            idx[i] = 0;
        }
    }
}

/* ---- The interface ---------------------------------------------------------- */

/* x.__dlpack__ (a new reference); NULL, with an exception set unless x
 * has no such attribute. */
static PyObject *dlpack_method (PyObject *x)
{
    static PyObject *name;      /* interned: looked up on every call */
    PyObject *m;

    if (!name && !(name = PyUnicode_InternFromString ("__dlpack__")))
        return NULL;
    if (!(m = PyObject_GetAttr (x, name))
        && PyErr_ExceptionMatches (PyExc_AttributeError))
        PyErr_Clear ();
    return m;
}

int pyddp_data_get (PyObject *x, struct pyddp_data *d, unsigned flags,
                    const char *where, const char *what)
{
    PyObject *export;
    size_t count = 1;
    int rc;

    memset (d, 0, sizeof (*d));
    d->obj = x;
    if (PyObject_CheckBuffer (x))
        rc = from_buffer (x, d, where, what);
    else if ((export = dlpack_method (x))) {
        rc = from_dlpack (x, export, d, where, what);
        Py_DECREF (export);
    }
    else
        return PyErr_Occurred () ? -1 : 1;
    if (rc < 0)
        goto fail;
    for (int i = 0; i < d->ndim; i++) {
        if (d->shape[i] < 0) {
            PyErr_Format (PyExc_ValueError, "%s: %s has a negative extent",
                          where, what);
            goto fail;
        }
        count *= (size_t) d->shape[i];
    }
    d->count = count;
    d->contiguous = contiguous (d);
    if (d->cuda && !d->contiguous) {
        PyErr_Format (PyExc_ValueError, "%s: %s is a CUDA tensor that is "
                      "not contiguous (a transposed or sliced view): pass "
                      "x.contiguous() (and copy the result back)", where,
                      what);
        goto fail;
    }
    if ((flags & PYDDP_DATA_WRITE) && !d->writable) {
        PyErr_Format (PyExc_ValueError, "%s: %s (a %s) is read-only: the "
                      "result is written into it, pass a writable one",
                      where, what, Py_TYPE (x)->tp_name);
        goto fail;
    }
    if (!d->contiguous && d->writable
        && (flags & (PYDDP_DATA_WRITE | PYDDP_DATA_UPDATE)) && overlapping (d)) {
        PyErr_Format (PyExc_ValueError, "%s: %s (a %s) has elements that "
                      "share memory (an expanded or broadcast view): the "
                      "result cannot be written back to it; pass a copy "
                      "(x.clone(), x.copy())", where, what,
                      Py_TYPE (x)->tp_name);
        goto fail;
    }
    return 0;
fail:
    pyddp_data_release (d);
    return -1;
}

void *pyddp_data_buf (struct pyddp_data *d, bool read)
{
    static char none[1];        /* no element (an empty tensor's NULL) */

    if (d->count == 0)
        return none;
    if (d->contiguous)
        return d->base;
    if (!d->tmp) {
        if (!(d->tmp = PyMem_Malloc (d->count * d->itemsize))) {
            PyErr_NoMemory ();
            return NULL;
        }
        if (read)
            strided_copy (d, d->tmp, true);
    }
    return d->tmp;
}

void pyddp_data_write_back (struct pyddp_data *d)
{
    if (!d->contiguous && d->tmp)
        strided_copy (d, d->tmp, false);
}

void pyddp_data_release (struct pyddp_data *d)
{
    PyMem_Free (d->tmp);
    d->tmp = NULL;
    if (d->have_view)
        PyBuffer_Release (&d->view);
    d->have_view = false;
    Py_CLEAR (d->capsule);
}

/* vi: ts=4 sw=4 expandtab
 */
