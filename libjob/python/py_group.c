/* py_group.c - ddp.Group, a communicator of libddp (ddp.h:
 * "Communicators: groups of ranks") other than the world: split() makes
 * them (ddp_comm_split), the collectives take one as group=
 * (pyddp_group_comm), free() or finalize() ends them.
 *
 * A Group that finalize() ends (ddp_finalize frees every group) is marked
 * freed first, with its requests completed (pyddp_requests_complete), so
 * that nothing reaches a communicator libddp has released: every live
 * Group is on one list (GIL held).  A Group dropped without free() keeps
 * its communicator until finalize (freeing is collective: a destructor
 * cannot make it).  Calls py_request.c and the files below it.
 */
#include "pyddp.h"

#include <limits.h>
#include <stdio.h>
#include <string.h>

struct group {
    PyObject_HEAD
    ddp_comm_t *comm;           /* NULL once freed */
    int rank, size;
    PyObject *ranks;            /* tuple: the world rank of each rank */
    struct group *prev, *next;  /* the list of live groups */
};

static struct group *live;
static PyTypeObject group_type;

static void link_in (struct group *g)
{
    g->prev = NULL;
    g->next = live;
    if (live)
        live->prev = g;
    live = g;
}

static void unlink_out (struct group *g)
{
    if (g->prev)
        g->prev->next = g->next;
    else if (live == g)
        live = g->next;
    if (g->next)
        g->next->prev = g->prev;
    g->prev = g->next = NULL;
}

int pyddp_group_comm (PyObject *group, ddp_comm_t **comm, const char *where)
{
    struct group *g = (struct group *) group;

    *comm = NULL;
    if (!group || group == Py_None)
        return 0;
    if (!PyObject_TypeCheck (group, &group_type)) {
        PyErr_Format (PyExc_TypeError, "%s: group must be a ddp.Group (from "
                      "ddp.split() or ddp.new_group()) or None for the "
                      "world, not %s", where, Py_TYPE (group)->tp_name);
        return -1;
    }
    if (!g->comm) {
        PyErr_Format (PyExc_ValueError, "%s: the group was freed "
                      "(Group.free(), or finalize())", where);
        return -1;
    }
    *comm = g->comm;
    return 0;
}

/* finalize() is about to free every communicator. */
static void before_finalize (void)
{
    pyddp_requests_complete (NULL, true);
    for (struct group *g = live; g; g = g->next)
        g->comm = NULL;
}

/* A Group for comm (taken); NULL with an exception set (comm freed). */
static PyObject *group_new (ddp_comm_t *comm)
{
    struct group *g = PyObject_New (struct group, &group_type);
    int rc;

    if (!g)
        goto fail;
    g->comm = comm;
    g->rank = ddp_comm_rank (comm);
    g->size = ddp_comm_size (comm);
    g->prev = g->next = NULL;
    if (!(g->ranks = PyTuple_New (g->size))) {
        g->comm = NULL;
        Py_DECREF (g);
        goto fail;
    }
    link_in (g);
    for (int r = 0; r < g->size; r++) {
        PyObject *w = PyLong_FromLong (ddp_comm_world_rank (comm, r));
        if (!w) {
            Py_DECREF (g);      /* keeps comm: finalize frees it */
            return NULL;
        }
        PyTuple_SET_ITEM (g->ranks, r, w);
    }
    return (PyObject *) g;
fail:
    DDP_CALL (rc, ddp_comm_free (&comm));
    (void) rc;
    return NULL;
}

/* split over parent (None: the world). */
static PyObject *split (PyObject *parent, int colour, int key)
{
    static const char where[] = "ddp.split";
    ddp_comm_t *pc, *nc = NULL;
    int rc;

    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0
        || pyddp_group_comm (parent, &pc, where) < 0)
        return NULL;
    DDP_CALL (rc, ddp_comm_split (pc, colour, key, &nc));
    if (rc < 0) {
        if (rc == DDP_EINVAL)   /* this rank took part as UNDEFINED */
            return pyddp_fail (rc, where, ddp_last_error ());
        return pyddp_fail_here (rc, where);
    }
    if (!nc)
        Py_RETURN_NONE;
    return group_new (nc);
}

PyDoc_STRVAR (split_doc,
"split(colour, key=0, group=None)\n--\n\n"
"Split group (None: the world) into groups: the ranks that pass the same\n"
"colour (an int >= 0) form one new ddp.Group, ordered by key, then by\n"
"their rank in group; a rank that passes ddp.UNDEFINED joins none and\n"
"gets None (MPI_Comm_split, ncclCommSplit).  Collective: every rank of\n"
"group calls it, in the same order as its other calls there.  A negative\n"
"colour other than UNDEFINED raises ddp.Error (EINVAL) on this rank,\n"
"which still takes part as UNDEFINED (the others get their groups).\n"
"Disjoint groups run at the same time; a rank may be in many.  Free a\n"
"group with free() (collective; or with a with-block), or finalize()\n"
"frees it.");

static PyObject *py_split (PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "colour", "key", "group", NULL };
    PyObject *parent = Py_None;
    int colour, key = 0;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "i|iO:split", kwlist, &colour,
                                      &key, &parent))
        return NULL;
    return split (parent, colour, key);
}

/* ---- create_group: the members alone --------------------------------------- */

/* The caller's all-gather: a Python callable given this member's bytes,
 * returning every member's, in the order of ranks (n of them). */
struct pygather {
    PyObject *fn;
    PyObject *exc;      /* what the callable raised (or its result's error) */
    int n;
};

/* Copy r, the callable's result, into all (n * len bytes): one bytes-like
 * object of n * len bytes, or a sequence of n of len bytes each.  Returns
 * 0, or -1 with an exception set. */
static int take_gathered (const struct pygather *g, PyObject *r, char *all,
                          size_t len)
{
    static const char where[] = "ddp.create_group";
    Py_buffer b;
    PyObject *seq;

    if (PyObject_CheckBuffer (r)) {
        if (PyObject_GetBuffer (r, &b, PyBUF_SIMPLE) < 0)
            return -1;
        if ((size_t) b.len != (size_t) g->n * len) {
            PyErr_Format (PyExc_ValueError, "%s: the all-gather returned %zd "
                          "bytes, not the %d members' %zu each", where, b.len,
                          g->n, len);
            PyBuffer_Release (&b);
            return -1;
        }
        memcpy (all, b.buf, (size_t) b.len);
        PyBuffer_Release (&b);
        return 0;
    }
    if (!(seq = PySequence_Fast (r, "")) || PySequence_Fast_GET_SIZE (seq)
                                                != g->n) {
        PyErr_Clear ();
        PyErr_Format (PyExc_TypeError, "%s: the all-gather must return the "
                      "members' bytes in the order of ranks: a list of %d "
                      "bytes objects (or one of %d x %zu bytes), not %s",
                      where, g->n, g->n, len, Py_TYPE (r)->tp_name);
        Py_XDECREF (seq);
        return -1;
    }
    for (int i = 0; i < g->n; i++) {
        PyObject *item = PySequence_Fast_GET_ITEM (seq, i);
        int bad;

        if (PyObject_GetBuffer (item, &b, PyBUF_SIMPLE) < 0) {
            Py_DECREF (seq);
            return -1;
        }
        if (!(bad = (size_t) b.len != len))
            memcpy (all + (size_t) i * len, b.buf, len);
        PyBuffer_Release (&b);
        if (bad) {
            PyErr_Format (PyExc_ValueError, "%s: the all-gather's item %d "
                          "has %zd bytes, not %zu", where, i, b.len, len);
            Py_DECREF (seq);
            return -1;
        }
    }
    Py_DECREF (seq);
    return 0;
}

/* A ddp_allgather_fn: called by libddp on this thread, without the GIL.
 * After a failure it fails at once (libddp then ends the creation). */
static int gather_trampoline (void *arg, const void *mine, void *all,
                              size_t len)
{
    PyGILState_STATE st = PyGILState_Ensure ();
    struct pygather *g = arg;
    int was = pyddp_wait_suspend (), rc = 1;

    if (!g->exc) {
        PyObject *r = PyObject_CallFunction (g->fn, "y#", (const char *) mine,
                                             (Py_ssize_t) len);
        if (r && take_gathered (g, r, all, len) == 0)
            rc = 0;
        Py_XDECREF (r);
        if (rc)
            Py_XSETREF (g->exc, pyddp_fetch_exception ());
    }
    pyddp_wait_end (was);
    PyGILState_Release (st);
    return rc;
}

/* ranks (a sequence of ints) as a malloc'd array of *n; NULL with an
 * exception set. */
static int *rank_list (PyObject *ranks, int *n, const char *where)
{
    PyObject *seq = PySequence_Fast (ranks, "");
    int *r = NULL;

    if (!seq) {
        PyErr_Clear ();
        PyErr_Format (PyExc_TypeError, "%s: ranks must be a sequence of "
                      "ints, not %s", where, Py_TYPE (ranks)->tp_name);
        return NULL;
    }
    *n = (int) PySequence_Fast_GET_SIZE (seq);
    if (!(r = PyMem_Calloc ((size_t) *n + 1, sizeof (int)))) {
        PyErr_NoMemory ();
        goto out;
    }
    for (int i = 0; i < *n; i++) {
        long v = PyLong_AsLong (PySequence_Fast_GET_ITEM (seq, i));

        if (v == -1 && PyErr_Occurred ()) {
            PyErr_Format (PyExc_TypeError, "%s: ranks[%d] is not an int",
                          where, i);
            PyMem_Free (r);
            r = NULL;
            goto out;
        }
        r[i] = v < INT_MIN ? INT_MIN : v > INT_MAX ? INT_MAX : (int) v;
    }
out:
    Py_DECREF (seq);
    return r;
}

PyDoc_STRVAR (create_group_doc,
"create_group(ranks, allgather, group=None)\n--\n\n"
"A ddp.Group of the ranks in ranks (ranks of group; None: the world),\n"
"its rank g being ranks[g], made by those ranks alone\n"
"(MPI_Comm_create_group; torch's new_group(use_local_synchronization=\n"
"True)): the other ranks do not call it.  Every member passes the same\n"
"ranks in the same order, and allgather, a callable that reaches the\n"
"others: allgather(data) gets this member's bytes and returns every\n"
"member's (a list in the order of ranks, or their concatenation); it is\n"
"called several times, each call must bring that call's bytes (a store's\n"
"keys that count the calls), and its waits are the only waits of the\n"
"set-up: bound them.  What it raises is raised here; lists that differ\n"
"between members raise ddp.Error (EMISMATCH) on every member.");

static PyObject *py_create_group (PyObject *self, PyObject *args,
                                  PyObject *kw)
{
    static char *kwlist[] = { "ranks", "allgather", "group", NULL };
    static const char where[] = "ddp.create_group";
    PyObject *ranks, *parent = Py_None;
    struct pygather g = { NULL, NULL, 0 };
    ddp_comm_t *pc, *nc = NULL;
    int *r, rc;

    (void) self;
    if (!PyArg_ParseTupleAndKeywords (args, kw, "OO|O:create_group", kwlist,
                                      &ranks, &g.fn, &parent))
        return NULL;
    if (!PyCallable_Check (g.fn))
        return PyErr_Format (PyExc_TypeError, "%s: allgather must be "
                             "callable, not %s", where,
                             Py_TYPE (g.fn)->tp_name);
    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0
        || pyddp_group_comm (parent, &pc, where) < 0
        || !(r = rank_list (ranks, &g.n, where)))
        return NULL;
    DDP_CALL (rc, ddp_comm_create_group (pc, r, g.n, gather_trampoline, &g,
                                         &nc));
    PyMem_Free (r);
    if (g.exc) {
        if (nc) {
            DDP_CALL (rc, ddp_comm_free (&nc));
        }
        pyddp_raise_exception (g.exc);
        return NULL;
    }
    if (rc < 0)
        return pyddp_fail (rc, where, ddp_last_error ());
    return group_new (nc);
}

/* ---- The Group type ------------------------------------------------------ */

PyDoc_STRVAR (gsplit_doc,
"split(colour, key=0)\n--\n\n"
"ddp.split(colour, key, group=self): split this group further.");

static PyObject *group_split (PyObject *self, PyObject *args, PyObject *kw)
{
    static char *kwlist[] = { "colour", "key", NULL };
    int colour, key = 0;

    if (!PyArg_ParseTupleAndKeywords (args, kw, "i|i:split", kwlist, &colour,
                                      &key))
        return NULL;
    return split (self, colour, key);
}

PyDoc_STRVAR (free_doc,
"free()\n--\n\n"
"Collective over the group: complete its requests, a final barrier (its\n"
"faults are not reported), then release it.  The group cannot be used\n"
"afterwards (ValueError); freeing again does nothing.");

static PyObject *group_free (PyObject *self, PyObject *unused)
{
    static const char where[] = "ddp.Group.free";
    struct group *g = (struct group *) self;
    ddp_comm_t *c = g->comm;
    int rc;

    (void) unused;
    if (!c)
        Py_RETURN_NONE;
    if (pyddp_refuse_local (where) < 0)
        return NULL;
    pyddp_requests_complete (c, false);
    g->comm = NULL;
    DDP_CALL (rc, ddp_comm_free (&c));
    if (rc < 0)
        return pyddp_fail (rc, where, ddp_last_error ());
    Py_RETURN_NONE;
}

static PyObject *group_enter (PyObject *self, PyObject *unused)
{
    (void) unused;
    return Py_NewRef (self);
}

static PyObject *group_exit (PyObject *self, PyObject *args)
{
    PyObject *r;

    (void) args;
    if (!(r = group_free (self, NULL)))
        return NULL;
    Py_DECREF (r);
    Py_RETURN_FALSE;
}

/* A rank of the group, 0 .. size-1; -1 with an exception set. */
static int group_index (struct group *g, PyObject *o, const char *where,
                        const char *what, int limit)
{
    int over = 0;
    long v;

    if (!PyLong_Check (o)) {
        PyErr_Format (PyExc_TypeError, "%s: %s must be an int, not %s", where,
                      what, Py_TYPE (o)->tp_name);
        return -1;
    }
    v = PyLong_AsLongAndOverflow (o, &over);
    if (v == -1 && PyErr_Occurred ())
        return -1;
    if (over || v < 0 || v >= limit) {
        PyErr_Format (PyExc_ValueError, "%s: %s=%R is not in 0 .. %d", where,
                      what, o, limit - 1);
        return -1;
    }
    (void) g;
    return (int) v;
}

PyDoc_STRVAR (world_rank_doc,
"world_rank(r)\n--\n\n"
"The world rank of the group's rank r (ranks[r]); ValueError if r is not\n"
"in 0 .. size-1.");

static PyObject *group_world_rank (PyObject *self, PyObject *o)
{
    struct group *g = (struct group *) self;
    int r = group_index (g, o, "ddp.Group.world_rank", "r", g->size);

    if (r < 0)
        return NULL;
    return Py_NewRef (PyTuple_GET_ITEM (g->ranks, r));
}

PyDoc_STRVAR (group_rank_doc,
"group_rank(world_rank)\n--\n\n"
"The rank in the group of the world's rank world_rank\n"
"(torch.distributed.get_group_rank); ValueError if it is not a member.");

static PyObject *group_group_rank (PyObject *self, PyObject *o)
{
    static const char where[] = "ddp.Group.group_rank";
    struct group *g = (struct group *) self;
    int w = group_index (g, o, where, "world_rank", ddp_world_size ());

    if (w < 0)
        return NULL;
    for (int r = 0; r < g->size; r++)
        if (PyLong_AsLong (PyTuple_GET_ITEM (g->ranks, r)) == w)
            return PyLong_FromLong (r);
    return PyErr_Format (PyExc_ValueError, "%s: world rank %d is not in the "
                         "group (ranks %R)", where, w, g->ranks);
}

static PyObject *get_rank (PyObject *self, void *c)
{
    (void) c;
    return PyLong_FromLong (((struct group *) self)->rank);
}

static PyObject *get_size (PyObject *self, void *c)
{
    (void) c;
    return PyLong_FromLong (((struct group *) self)->size);
}

static PyObject *get_ranks (PyObject *self, void *c)
{
    (void) c;
    return Py_NewRef (((struct group *) self)->ranks);
}

static PyObject *get_freed (PyObject *self, void *c)
{
    (void) c;
    return PyBool_FromLong (((struct group *) self)->comm == NULL);
}

static PyObject *group_repr (PyObject *self)
{
    struct group *g = (struct group *) self;

    return PyUnicode_FromFormat ("<ddp.Group rank %d of %d, world ranks "
                                 "%R%s>", g->rank, g->size, g->ranks,
                                 g->comm ? "" : ", freed");
}

static void group_dealloc (PyObject *self)
{
    struct group *g = (struct group *) self;

    unlink_out (g);
    Py_XDECREF (g->ranks);
    Py_TYPE (self)->tp_free (self);
}

static PyMethodDef group_methods[] = {
    { "free", group_free, METH_NOARGS, free_doc },
    { "split", (PyCFunction) (void (*) (void)) group_split,
      METH_VARARGS | METH_KEYWORDS, gsplit_doc },
    { "world_rank", group_world_rank, METH_O, world_rank_doc },
    { "group_rank", group_group_rank, METH_O, group_rank_doc },
    { "__enter__", group_enter, METH_NOARGS, NULL },
    { "__exit__", group_exit, METH_VARARGS, NULL },
    { NULL, NULL, 0, NULL }
};

static PyGetSetDef group_getset[] = {
    { "rank", get_rank, NULL, "This rank's rank in the group, 0 .. size-1.",
      NULL },
    { "size", get_size, NULL, "The number of ranks in the group.", NULL },
    { "ranks", get_ranks, NULL, "The world rank of each rank of the group "
      "(a tuple, group rank order).", NULL },
    { "freed", get_freed, NULL, "True once free() or finalize() released "
      "it.", NULL },
    { NULL, NULL, NULL, NULL, NULL }
};

PyDoc_STRVAR (group_doc,
"A group of ranks that make collectives together (a libddp communicator),\n"
"from ddp.split() or ddp.new_group(): .rank, .size, .ranks (their world\n"
"ranks), world_rank(r), group_rank(world_rank), split(), free() (also at\n"
"the end of a with-block).  Every collective takes it as group=; its\n"
"src, dst and the order of gathers and reduce_scatter are ranks of the\n"
"group, 'avg' divides by its size.  A rank that dies fails the calls of\n"
"every group it is in; the other groups go on.");

static PyTypeObject group_type = {
    PyVarObject_HEAD_INIT (NULL, 0)
    .tp_name = "ddp.Group",
    .tp_basicsize = sizeof (struct group),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = group_doc,
    .tp_dealloc = group_dealloc,
    .tp_repr = group_repr,
    .tp_methods = group_methods,
    .tp_getset = group_getset,
};

PyMethodDef pyddp_group_methods[] = {
    { "split", (PyCFunction) (void (*) (void)) py_split,
      METH_VARARGS | METH_KEYWORDS, split_doc },
    { "create_group", (PyCFunction) (void (*) (void)) py_create_group,
      METH_VARARGS | METH_KEYWORDS, create_group_doc },
    { NULL, NULL, 0, NULL }
};

int pyddp_group_init (PyObject *m)
{
    if (PyType_Ready (&group_type) < 0)
        return -1;
    Py_INCREF (&group_type);
    if (PyModule_AddObject (m, "Group", (PyObject *) &group_type) < 0) {
        Py_DECREF (&group_type);
        return -1;
    }
    pyddp_before_finalize = before_finalize;
    return PyModule_AddIntConstant (m, "UNDEFINED", DDP_UNDEFINED);
}

/* vi: ts=4 sw=4 expandtab
 */
