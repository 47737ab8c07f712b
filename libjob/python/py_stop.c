/* py_stop.c - the agreed stop and the restart count of ddp._ddp, over
 * libddp's stop.c: stop_signals(), stop_requested(), should_stop() (a
 * collective: every rank gets the same answer) and restart_count() (Slurm's
 * requeues).
 */
#include "pyddp.h"

#include <stdlib.h>
#include <string.h>

static bool stop_installed;             /* ddp_stop_signals() was called */

static const char *env_or (const char *name, const char *dflt)
{
    const char *v = getenv (name);

    return v ? v : dflt;
}

PyDoc_STRVAR (stop_signals_doc,
"stop_signals(signals=None)\n--\n\n"
"Catch the signals that ask the job to stop, for should_stop(): a\n"
"comma-separated list of names or numbers ('TERM,USR1'), 'none' to put back\n"
"what the program had, or None for DDP_STOP_SIGNALS, else 'TERM,USR1,USR2'.\n"
"The first such signal is only recorded; a second one ends the process.\n"
"should_stop() calls stop_signals() itself the first time, if the program\n"
"has not.  Raises ValueError naming a bad word (KILL, SEGV, 'FOO').");

static PyObject *py_stop_signals (PyObject *self, PyObject *args)
{
    const char *spec = NULL;
    int rc;

    (void) self;
    if (!PyArg_ParseTuple (args, "|z", &spec))
        return NULL;
    rc = ddp_stop_signals (spec);
    if (rc < 0)     /* libddp logged which word and why */
        return PyErr_Format (PyExc_ValueError, "ddp.stop_signals: libddp "
                             "refused the list \"%s\" (%s; the reason is "
                             "logged above): give signal names or numbers "
                             "separated by commas, or 'none'",
                             spec ? spec : env_or ("DDP_STOP_SIGNALS", ""),
                             ddp_strerror (rc));
    stop_installed = !spec || strcmp (spec, "none") != 0;
    Py_RETURN_NONE;
}

PyDoc_STRVAR (stop_requested_doc,
"stop_requested()\n--\n\n"
"The first stop signal this process received (a number), or 0.  Only this\n"
"process's knowledge: decide with should_stop(), which asks every rank.");

static PyObject *py_stop_requested (PyObject *self, PyObject *unused)
{
    (void) self;
    (void) unused;
    return PyLong_FromLong (ddp_stop_requested ());
}

PyDoc_STRVAR (should_stop_doc,
"should_stop()\n--\n\n"
"Collective: True on every rank if any rank received a stop signal (SIGTERM\n"
"from scancel, preemption or requeue; SIGUSR1/SIGUSR2 from\n"
"--signal=USR1@SECONDS before the time limit) before it entered this call,\n"
"False on every rank otherwise.  Call it at the same point on every rank,\n"
"once per step, and leave the loop together when it says so: save a\n"
"checkpoint, exit, and resume on requeue (restart_count() > 0).  One\n"
"8-byte all-reduce.  The first call installs the stop signals\n"
"(stop_signals()) unless the program did.");

static PyObject *py_should_stop (PyObject *self, PyObject *unused)
{
    static const char where[] = "ddp.should_stop";
    bool stop = false;
    int rc;

    (void) self;
    (void) unused;
    if (pyddp_ensure_init () < 0 || pyddp_refuse_local (where) < 0)
        return NULL;
    if (!stop_installed) {
        if ((rc = ddp_stop_signals (NULL)) < 0)
            return PyErr_Format (PyExc_ValueError, "%s: libddp refused "
                                 "DDP_STOP_SIGNALS=\"%s\" (the reason is "
                                 "logged above)", where,
                                 env_or ("DDP_STOP_SIGNALS", ""));
        stop_installed = true;
    }
    DDP_CALL (rc, ddp_should_stop (&stop));
    if (rc < 0)
        return pyddp_fail_here (rc, where);
    return PyBool_FromLong (stop);
}

PyDoc_STRVAR (restart_count_doc,
"restart_count()\n--\n\n"
"How many times Slurm has requeued this job (SLURM_RESTART_COUNT; 0 on a\n"
"first run or outside Slurm): above 0, resume from the checkpoint.  Needs\n"
"no init.  Raises ValueError if SLURM_RESTART_COUNT is not a whole number.");

static PyObject *py_restart_count (PyObject *self, PyObject *unused)
{
    int n;

    (void) self;
    (void) unused;
    if ((n = ddp_restart_count ()) < 0)
        return PyErr_Format (PyExc_ValueError, "ddp.restart_count: "
                             "SLURM_RESTART_COUNT='%s' is not a whole number "
                             "(Slurm sets it in a requeued job; unset it "
                             "otherwise)", env_or ("SLURM_RESTART_COUNT", ""));
    return PyLong_FromLong (n);
}

PyMethodDef pyddp_stop_methods[] = {
    { "stop_signals", py_stop_signals, METH_VARARGS, stop_signals_doc },
    NOARGS (stop_requested),
    NOARGS (should_stop),
    NOARGS (restart_count),
    { NULL, NULL, 0, NULL }
};

/* vi: ts=4 sw=4 expandtab
 */
