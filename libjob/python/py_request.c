/* py_request.c - ddp.Request, a collective started with async_op=True
 * (ddp.h: "Nonblocking collectives"): the libddp request, the memory it
 * works on and the objects that own it, held until it completed.
 *
 * The objects a request reads and writes stay alive and lent while it is
 * in flight: the request holds a reference to each and keeps their
 * struct pyddp_data (a buffer's Py_buffer, a tensor's DLPack capsule, a
 * strided one's contiguous copy) until libddp says it completed; then a
 * strided object's copy is written back and everything is given back.
 * wait() and test() complete it (wait() with the GIL released, neither
 * holding pyddp_lib_lock: see complete()); a request dropped before it
 * completed is waited for in its destructor, so the library never writes
 * into freed memory.
 *
 * Every request not yet completed is on one list (GIL held), so that
 * Group.free() and finalize() can complete those of a communicator before
 * libddp frees it (pyddp_requests_complete).  Calls only py_data.c,
 * py_errors.c and py_wait.c.
 */
#include "pyddp.h"

#include <sched.h>
#include <stdio.h>
#include <string.h>

struct request {
    PyObject_HEAD
    ddp_request_t *req;         /* libddp's; NULL while a thread waits on it,
                                 * and once completed */
    ddp_comm_t *comm;           /* the communicator it runs on (NULL: world) */
    PyObject *group;            /* the ddp.Group (a reference), or NULL */
    const char *where;          /* "ddp.all_reduce" */
    const char *also;           /* the EMISMATCH words (pyddp_fail_data),
                                 * NULL for a barrier */
    struct pyddp_data d[2];     /* the memory lent to libddp */
    int nd;                     /* d[0 .. nd-1] hold references */
    unsigned write_back;        /* bit i: d[i] is written back on success */
    PyObject *result;           /* what wait() returns */
    pyddp_finish_fn finish;     /* makes result at completion, or NULL */
    PyObject *exc;              /* what finish raised */
    bool started, completed, busy;
    int rc;
    char why[512];              /* the failure's words */
    struct request *prev, *next;        /* the list of those in flight */
};

static struct request *in_flight;

static void link_in (struct request *r)
{
    r->prev = NULL;
    r->next = in_flight;
    if (in_flight)
        in_flight->prev = r;
    in_flight = r;
}

static void unlink_out (struct request *r)
{
    if (r->prev)
        r->prev->next = r->next;
    else if (in_flight == r)
        in_flight = r->next;
    if (r->next)
        r->next->prev = r->prev;
    r->prev = r->next = NULL;
}

static void release_data (struct request *r)
{
    for (int i = 0; i < 2; i++)
        pyddp_data_release (&r->d[i]);
}

/* r completed with rc: write back, make the result, give the memory back.
 * want_result false (a destructor): no Python code runs. */
static void finished (struct request *r, int rc, bool want_result)
{
    r->rc = rc;
    if (rc < 0)
        snprintf (r->why, sizeof (r->why), "%s", ddp_last_error ());
    else {
        for (int i = 0; i < r->nd; i++)
            if (r->write_back & (1u << i))
                pyddp_data_write_back (&r->d[i]);
        if (r->finish && want_result) {
            PyObject *res = r->finish (&r->d[0], r->result);
            if (!res)
                r->exc = pyddp_fetch_exception ();
            Py_XSETREF (r->result, res);
        }
    }
    release_data (r);
    r->completed = true;
    unlink_out (r);
}

/* Complete r if it has (block: wait until it has).  1 when completed, 0
 * when not yet (test).  Neither takes pyddp_lib_lock (ddp.h: a request
 * may be waited for on any thread while another uses its communicator),
 * so a thread blocked here keeps no other out of libddp.  Another thread
 * already waiting on it: wait for that thread (the GIL released in
 * between). */
static int complete (struct request *r, bool block, bool want_result)
{
    ddp_request_t *q;
    bool done = true;
    int rc;

    while (r->busy && !r->completed) {
        if (!block)
            return 0;
        Py_BEGIN_ALLOW_THREADS
        sched_yield ();
        Py_END_ALLOW_THREADS
    }
    if (r->completed)
        return 1;
    q = r->req;
    r->req = NULL;
    r->busy = true;
    if (block)
        DDP_CALL_BESIDE (rc, ddp_wait (&q));
    else
        rc = ddp_test (&q, &done);      /* never blocks: the GIL kept */
    r->busy = false;
    if (!done) {
        r->req = q;
        return 0;
    }
    finished (r, rc, want_result);
    return 1;
}

PyObject *pyddp_request_result (PyObject *self)
{
    struct request *r = (struct request *) self;

    if (complete (r, true, true) < 0)
        return NULL;
    if (r->rc < 0) {
        if (PyErr_CheckSignals () < 0)
            return NULL;
        return pyddp_fail_data (r->rc, r->where, r->also, r->why);
    }
    if (r->exc) {
        PyErr_SetObject ((PyObject *) Py_TYPE (r->exc), r->exc);
        return NULL;
    }
    return Py_NewRef (r->result ? r->result : Py_None);
}

PyDoc_STRVAR (wait_doc,
"wait()\n--\n\n"
"Wait until the collective completed (the GIL released) and return what\n"
"the blocking call returns (x, out, or None).  Raises what the blocking\n"
"call raises (ddp.PeerError, ddp.TimeoutError, ddp.Error with .code),\n"
"again on every later wait().  Bounded by DDP_TIMEOUT as a blocking call.");

static PyObject *py_wait (PyObject *self, PyObject *unused)
{
    (void) unused;
    return pyddp_request_result (self);
}

PyDoc_STRVAR (test_doc,
"test()\n--\n\n"
"True once the collective completed (successfully or not: wait() says\n"
"which), False while it runs.  Never blocks; never raises the\n"
"collective's failure.");

static PyObject *py_test (PyObject *self, PyObject *unused)
{
    (void) unused;
    return PyBool_FromLong (complete ((struct request *) self, false, true));
}

static PyObject *get_where (PyObject *self, void *closure)
{
    (void) closure;
    return PyUnicode_FromString (((struct request *) self)->where);
}

static PyObject *get_group (PyObject *self, void *closure)
{
    struct request *r = (struct request *) self;

    (void) closure;
    return Py_NewRef (r->group ? r->group : Py_None);
}

static PyObject *request_repr (PyObject *self)
{
    struct request *r = (struct request *) self;

    return PyUnicode_FromFormat ("<ddp.Request %s %s>", r->where,
                                 !r->completed ? "in flight"
                                 : r->rc < 0 ? "failed" : "completed");
}

static void request_dealloc (PyObject *self)
{
    struct request *r = (struct request *) self;
    PyObject *exc;

    /* Dropped in flight: wait for it (its memory is the library's until
     * then); its failure, if any, is sticky on the communicator and the
     * next call there raises it.  Off the list first: the wait releases
     * the GIL, and pyddp_requests_complete must not find (and take a
     * reference to) a request being freed.  (A program that frees the
     * group in another thread meanwhile breaks the one-thread-per-
     * communicator rule of ddp.h.) */
    unlink_out (r);
    exc = pyddp_fetch_exception ();
    if (r->started && !r->completed)
        complete (r, true, false);
    if (exc) {
        PyErr_SetObject ((PyObject *) Py_TYPE (exc), exc);
        Py_DECREF (exc);
    }
    release_data (r);
    if (r->started)
        for (int i = 0; i < r->nd; i++)
            Py_XDECREF (r->d[i].obj);
    Py_XDECREF (r->group);
    Py_XDECREF (r->result);
    Py_XDECREF (r->exc);
    Py_TYPE (self)->tp_free (self);
}

static PyMethodDef request_methods[] = {
    { "wait", py_wait, METH_NOARGS, wait_doc },
    { "test", py_test, METH_NOARGS, test_doc },
    { "is_completed", py_test, METH_NOARGS,
      "is_completed()\n--\n\nAs test() (torch.distributed's name)." },
    { NULL, NULL, 0, NULL }
};

static PyGetSetDef request_getset[] = {
    { "where", get_where, NULL, "The call that started it ('ddp.all_reduce').",
      NULL },
    { "group", get_group, NULL, "The ddp.Group it runs on (None: the world).",
      NULL },
    { NULL, NULL, NULL, NULL, NULL }
};

PyDoc_STRVAR (request_doc,
"A collective in flight, returned by the collectives called with\n"
"async_op=True (torch.distributed's Work): wait(), test(), is_completed().\n"
"\n"
"It runs on a thread of libddp while the program computes; the objects\n"
"it reads and writes belong to it until it completed: do not touch them\n"
"(the request keeps them alive).  Requests on a group (or the world) run\n"
"and complete in the order they were started, and a blocking call there\n"
"waits for them first.  A request dropped without wait() is waited for\n"
"when it is freed.");

static PyTypeObject request_type = {
    PyVarObject_HEAD_INIT (NULL, 0)
    .tp_name = "ddp.Request",
    .tp_basicsize = sizeof (struct request),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = request_doc,
    .tp_dealloc = request_dealloc,
    .tp_repr = request_repr,
    .tp_methods = request_methods,
    .tp_getset = request_getset,
};

PyObject *pyddp_request_new (const char *where, ddp_comm_t *comm,
                             PyObject *group)
{
    struct request *r = PyObject_New (struct request, &request_type);

    if (!r)
        return NULL;
    memset ((char *) r + sizeof (PyObject), 0,
            sizeof (*r) - sizeof (PyObject));
    r->where = where;
    r->comm = comm;
    r->group = group ? Py_NewRef (group) : NULL;
    return (PyObject *) r;
}

struct pyddp_data *pyddp_request_data (PyObject *self)
{
    return ((struct request *) self)->d;
}

PyObject *pyddp_request_start (PyObject *self, ddp_request_t *req, int nd,
                               unsigned write_back, PyObject *result,
                               pyddp_finish_fn finish, const char *also)
{
    struct request *r = (struct request *) self;

    r->req = req;
    r->nd = nd;
    for (int i = 0; i < nd; i++)
        Py_INCREF (r->d[i].obj);
    r->write_back = write_back;
    r->result = result ? Py_NewRef (result) : NULL;
    r->finish = finish;
    r->also = also;
    r->started = true;
    if (req)
        link_in (r);
    else                        /* nothing to run (a local block) */
        finished (r, 0, true);
    return self;
}

void pyddp_requests_complete (ddp_comm_t *comm, bool all)
{
    for (;;) {
        struct request *r = in_flight;

        while (r && !all && r->comm != comm)
            r = r->next;
        if (!r)
            return;
        Py_INCREF (r);
        complete (r, true, true);
        unlink_out (r);         /* done, even if another thread finishes */
        Py_DECREF (r);
    }
}

int pyddp_request_init (PyObject *m)
{
    if (PyType_Ready (&request_type) < 0)
        return -1;
    Py_INCREF (&request_type);
    if (PyModule_AddObject (m, "Request", (PyObject *) &request_type) < 0) {
        Py_DECREF (&request_type);
        return -1;
    }
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
