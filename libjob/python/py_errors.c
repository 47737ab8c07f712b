/* py_errors.c - the exceptions of ddp._ddp: the classes ddp.Error,
 * PeerError, TimeoutError and RemoteError, raising them for libddp's
 * return codes (with what ddp_last_error() recorded, and the first sticky
 * fault repeated), and sharing what a callback raised among the ranks in
 * one more collective (pyddp_share_failure).
 */
#include "pyddp.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MSG_MAX 4096            /* bytes of a shared exception message */

static PyObject *Error, *PeerError, *TimeoutErr, *RemoteError;

/* The first sticky fault's message (it names the rank): later calls fail
 * with "an earlier failure broke the job" and repeat it. */
static char first_fault[512];

static bool sticky (int rc)
{
    return rc == DDP_EPEER || rc == DDP_ETIMEDOUT || rc == DDP_ETRANSPORT;
}

/* A helper's failure every rank knows about, so that all of them can take
 * part in pyddp_share_failure(): a callback here (EUSER), on another rank
 * (EREMOTE), or a bad argument or allocation here (EINVAL, ENOMEM) that
 * the helper reported to the others as EREMOTE. */
static bool shareable (int rc)
{
    return rc == DDP_EUSER || rc == DDP_EREMOTE || rc == DDP_EINVAL
           || rc == DDP_ENOMEM;
}

static PyObject *error_class (int rc)
{
    switch (rc) {
    case DDP_EPEER: return PeerError;
    case DDP_ETIMEDOUT: return TimeoutErr;
    case DDP_EREMOTE: return RemoteError;
    }
    return Error;
}

/* Set attribute name of exc to v (a new reference, stolen); false with an
 * exception set if that failed. */
static bool set_attr (PyObject *exc, const char *name, PyObject *v)
{
    int rc = v ? PyObject_SetAttrString (exc, name, v) : -1;

    Py_XDECREF (v);
    return rc == 0;
}

/* Raise cls(msg) with .code = rc and .where; returns NULL. */
static PyObject *raise_error (PyObject *cls, int rc, const char *where,
                              const char *msg)
{
    PyObject *exc = PyObject_CallFunction (cls, "s", msg);

    if (!exc)
        return NULL;
    if (set_attr (exc, "code", PyLong_FromLong (rc))
        && set_attr (exc, "where", PyUnicode_FromString (where)))
        PyErr_SetObject (cls, exc);
    Py_DECREF (exc);
    return NULL;
}

/* Raise the exception for libddp's rc in 'where', with detail (why, from
 * ddp_last_error; may be NULL or "").  A signal that came during the call
 * (KeyboardInterrupt) wins.  Returns NULL. */
PyObject *pyddp_fail (int rc, const char *where, const char *detail)
{
    char msg[1024];

    if (PyErr_CheckSignals () < 0)
        return NULL;
    if (!detail)
        detail = "";
    if (sticky (rc)) {
        if (!first_fault[0] && detail[0])
            snprintf (first_fault, sizeof (first_fault), "%s", detail);
        if (first_fault[0])
            detail = first_fault;
    }
    if (rc == DDP_ENOINIT)
        detail = "libddp was finalized; call ddp.init() again";
    snprintf (msg, sizeof (msg), "%s: %s%s%s", where, ddp_strerror (rc),
              detail[0] ? ": " : "", detail);
    return raise_error (error_class (rc), rc, where, msg);
}

/* fail() for a call this thread just made.  ddp_last_error() is what the
 * core recorded (init, the collectives and their faults); the helpers log
 * their own argument errors and leave it as it was, so it is only read for
 * the codes the core gives. */
PyObject *pyddp_fail_here (int rc, const char *where)
{
    bool core = rc != DDP_EINVAL && rc != DDP_ENOMEM && rc != DDP_EUSER
                && rc != DDP_EREMOTE && rc != DDP_EMISMATCH;

    return pyddp_fail (rc, where, core ? ddp_last_error () : "");
}

PyObject *pyddp_fail_data (int rc, const char *where, const char *also,
                           const char *detail)
{
    char msg[900];

    if (!detail)
        detail = "";
    if (rc != DDP_EMISMATCH || !also)
        return pyddp_fail (rc, where, detail);
    snprintf (msg, sizeof (msg), "the ranks passed different data: every "
              "rank must pass the same dtype and number of elements%s%s%s",
              also ? also : "", detail[0] ? "; " : "", detail);
    return pyddp_fail (rc, where, msg);
}

PyObject *pyddp_fetch_exception (void)
{
#if PY_VERSION_HEX >= 0x030C0000
    return PyErr_GetRaisedException ();
#else
    PyObject *t, *v, *tb;

    PyErr_Fetch (&t, &v, &tb);
    PyErr_NormalizeException (&t, &v, &tb);
    if (v && tb)
        PyException_SetTraceback (v, tb);
    Py_XDECREF (t);
    Py_XDECREF (tb);
    return v;
#endif
}

/* Raise exc again (stolen). */
static void restore_exception (PyObject *exc)
{
#if PY_VERSION_HEX >= 0x030C0000
    PyErr_SetRaisedException (exc);
#else
    PyObject *t = (PyObject *) Py_TYPE (exc);

    Py_INCREF (t);
    PyErr_Restore (t, exc, PyException_GetTraceback (exc));
#endif
}

void pyddp_raise_exception (PyObject *exc)
{
    restore_exception (exc);
}

/* "Type\nmessage" of exc, UTF-8, in a new bytes object (at most MSG_MAX
 * bytes of message); a type outside builtins is named module.qualname. */
static PyObject *describe_exception (PyObject *exc)
{
    PyObject *type = (PyObject *) Py_TYPE (exc), *mod, *qual, *text, *r;

    mod = PyObject_GetAttrString (type, "__module__");
    qual = PyObject_GetAttrString (type, "__qualname__");
    text = PyObject_Str (exc);
    PyErr_Clear ();     /* a broken __str__ still gets reported */
    if (mod && qual && PyUnicode_Check (mod)
        && PyUnicode_CompareWithASCIIString (mod, "builtins") != 0)
        r = PyUnicode_FromFormat ("%U.%U", mod, qual);
    else if (qual)
        r = PyUnicode_FromFormat ("%S", qual);
    else
        r = PyUnicode_FromString (Py_TYPE (exc)->tp_name);
    Py_XDECREF (mod);
    Py_XDECREF (qual);
    if (r && text) {
        PyObject *full = PyUnicode_FromFormat ("%U\n%U", r, text);
        Py_SETREF (r, full);
    }
    Py_XDECREF (text);
    if (!r) {
        PyErr_Clear ();
        return PyBytes_FromString ("Exception\n(no message)");
    }
    text = PyUnicode_AsEncodedString (r, "utf-8", "replace");
    Py_DECREF (r);
    if (text && PyBytes_GET_SIZE (text) > MSG_MAX)
        Py_SETREF (text, PyBytes_FromStringAndSize (PyBytes_AS_STRING (text),
                                                    MSG_MAX));
    return text;
}

/* Raise RemoteError for rank r's description "Type\nmessage" (len bytes);
 * others: how many more ranks failed.  Returns NULL. */
static PyObject *raise_remote (const char *where, int r, const char *d,
                               size_t len, int others)
{
    const char *nl = memchr (d, '\n', len);
    size_t tlen = nl ? (size_t) (nl - d) : len;
    PyObject *type = PyUnicode_DecodeUTF8 (d, (Py_ssize_t) tlen, "replace");
    PyObject *text = nl ? PyUnicode_DecodeUTF8 (nl + 1,
                                                (Py_ssize_t) (len - tlen - 1),
                                                "replace")
                        : PyUnicode_FromString ("");
    PyObject *msg = NULL, *exc = NULL;

    if (!type || !text)
        goto out;
    msg = PyUnicode_FromFormat ("%s: rank %d raised %U%s%U%s", where, r, type,
                                PyUnicode_GET_LENGTH (text) ? ": " : "", text,
                                others == 0 ? "" : " (and other ranks too)");
    if (!msg || !(exc = PyObject_CallOneArg (RemoteError, msg)))
        goto out;
    if (set_attr (exc, "code", PyLong_FromLong (DDP_EREMOTE))
        && set_attr (exc, "where", PyUnicode_FromString (where))
        && set_attr (exc, "rank", PyLong_FromLong (r))
        && set_attr (exc, "type_name", Py_NewRef (type))
        && set_attr (exc, "remote_message", Py_NewRef (text)))
        PyErr_SetObject (RemoteError, exc);
out:
    Py_XDECREF (type);
    Py_XDECREF (text);
    Py_XDECREF (msg);
    Py_XDECREF (exc);
    return NULL;
}

/* A helper returned rc < 0.  If every rank knows it failed (shareable),
 * all of them exchange what went wrong in one allgather: the rank whose
 * Python code raised 'mine' (stolen; NULL if none here) gets it back, the
 * others a RemoteError naming the lowest such rank, its exception's type
 * and message.  Otherwise, or if the exchange fails, the error of rc (or of
 * the exchange).  Returns NULL.  With keep_mine, 'mine' is not raised again
 * (the caller lets it propagate itself) and NULL is returned without an
 * exception set. */
PyObject *pyddp_share_failure (int rc, const char *where, PyObject *mine,
                               bool keep_mine, const char *detail)
{
    PyObject *desc = NULL;
    void *out = NULL;
    size_t *lens = NULL, off = 0, first_off = 0;
    const char *buf = "";
    Py_ssize_t len = 0;
    int xrc, first = -1, others = 0;

    if (!shareable (rc) || pyddp_local_depth > 0) {
        if (mine && !keep_mine) {
            restore_exception (mine);
            return NULL;
        }
        Py_XDECREF (mine);
        return keep_mine && mine ? NULL : pyddp_fail (rc, where, detail);
    }
    if (mine) {
        if (!(desc = describe_exception (mine)))
            PyErr_Clear ();
        else {
            buf = PyBytes_AS_STRING (desc);
            len = PyBytes_GET_SIZE (desc);
        }
    }
    DDP_CALL (xrc, ddp_allgatherv_bytes (buf, (size_t) len, &out, &lens));
    if (xrc < 0)
        detail = ddp_last_error ();
    Py_XDECREF (desc);
    if (mine) {
        free (out);
        free (lens);
        if (keep_mine) {
            Py_DECREF (mine);
            return NULL;
        }
        restore_exception (mine);
        return NULL;
    }
    if (xrc < 0)
        return pyddp_fail (xrc, where, detail);
    for (int r = 0; r < ddp_world_size (); r++) {
        if (lens[r] > 0 && first < 0) {
            first = r;
            first_off = off;
        }
        else if (lens[r] > 0)
            others++;
        off += lens[r];
    }
    if (first >= 0)
        raise_remote (where, first, (const char *) out + first_off,
                      lens[first], others);
    else
        pyddp_fail (rc, where, detail);
    free (out);
    free (lens);
    return NULL;
}

void pyddp_forget_fault (void)
{
    first_fault[0] = '\0';
}

PyObject *pyddp_raise (int rc, const char *where, const char *msg)
{
    return raise_error (error_class (rc), rc, where, msg);
}

/* ---- The classes ------------------------------------------------------- */

/* A new exception class ddp.NAME with doc, .code None by default. */
static PyObject *new_error (PyObject *mod, const char *name, const char *doc,
                            PyObject *base)
{
    char full[64];
    PyObject *dict = Py_BuildValue ("{sOsOsOsOsO}", "code", Py_None, "where",
                                    Py_None, "rank", Py_None, "type_name",
                                    Py_None, "remote_message", Py_None), *cls;

    if (!dict)
        return NULL;
    snprintf (full, sizeof (full), "ddp.%s", name);
    cls = PyErr_NewExceptionWithDoc (full, doc, base, dict);
    Py_DECREF (dict);
    if (cls && PyModule_AddObject (mod, name, Py_NewRef (cls)) < 0) {
        Py_DECREF (cls);
        Py_CLEAR (cls);
    }
    return cls;
}

int pyddp_errors_init (PyObject *m)
{
    if (!(Error = new_error (m, "Error",
            "A libddp call failed.  .code is the DDP_E* value (ddp.EPEER ...),\n"
            ".where the call ('ddp.barrier'); str() says what happened.",
            NULL))
        || !(PeerError = new_error (m, "PeerError",
            "A rank died or aborted (DDP_EPEER); the message names it.  Every\n"
            "later collective fails the same way: end the program.",
            Error))
        || !(TimeoutErr = new_error (m, "TimeoutError",
            "A rank did not arrive within DDP_TIMEOUT (DDP_ETIMEDOUT); the\n"
            "message names it and the call.  Every later collective fails.",
            Error))
        || !(RemoteError = new_error (m, "RemoteError",
            "Work failed on another rank (DDP_EREMOTE): run_on_main's func on\n"
            "main, a main_only() or rank0_first() block, a compute function.\n"
            ".rank is the rank that raised, .type_name its exception's type\n"
            "('FileNotFoundError', 'mypkg.MyError'), .remote_message its\n"
            "message (None where libddp itself failed there).  The rank\n"
            "that raised gets its own exception back.",
            Error)))
        return -1;
    return 0;
}

/* vi: ts=4 sw=4 expandtab
 */
