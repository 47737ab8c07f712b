/* slurmstepd.c - the plugin in slurmstepd (remote context).
 *
 * init_post_opt (once per node and step, as root, before any task and
 * before slurmstepd drops its privileges): decide whether the
 * step runs with ddp, and compute what all its tasks share: MASTER_ADDR (the
 * first node of SLURM_STEP_NODELIST, which runs rank 0 for block and cyclic
 * distributions, resolved to an address), MASTER_PORT (Slurm's reserved
 * port, else one derived from the job and step ids; node 0 claims it for
 * the step, see take_port), the step's layout (its busiest node, for
 * --ddp=auto), srun's plan for auto (sp_plan.h), whether the command is
 * torchrun, and the restart count.  Errors there do not fail a step in
 * Slurm, so they are kept and reported by task_init.
 *
 * task_init (per task, as the user, before exec): the rank variables, the
 * backend, the task's GPU and, with the site's socket_ifname, the
 * interface variables the job has not set.  An error fails the task's
 * launch.
 *
 * exit (slurm_spank_exit, once the step's tasks are gone): give the claim
 * on MASTER_PORT back.
 *
 * Everything read from the job environment is untrusted and parsed strictly
 * (sp_*.c); nothing here runs a program.  The one file it writes is the
 * claim: a lock file of root's, SP_PORT_DIR_PARENT/SP_PORT_DIR_NAME/
 * net-INODE/PORT (sp_port_lock), flocked by this slurmstepd, where no
 * other user can make, take or block one: that is why it runs in
 * init_post_opt, as root, not in user_init.  Its one connection is to
 * srun's relay of a multi-node step's port (sp_relay.h): the first node
 * says the port it took, the others ask for it.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <sched.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "slurmstepd.h"
#include "sp_addr.h"
#include "sp_args.h"
#include "sp_drain.h"
#include "sp_err.h"
#include "sp_gpus.h"
#include "sp_hostlist.h"
#include "sp_ifname.h"
#include "sp_layout.h"
#include "sp_plan.h"
#include "sp_port.h"
#include "sp_relay.h"
#include "sp_strint.h"
#include "sp_torchrun.h"

/* The step this slurmstepd runs, from init_post_opt for its tasks. */
static struct {
    bool active;                  /* this step runs with ddp */
    struct sp_effective request;  /* backend and binding */
    char error[SP_ERRLEN];        /* set: fail every task with it */
    char master_host[256];        /* the step's first node */
    char master_addr[NI_MAXHOST]; /* its address */
    int master_port;
    bool resv_port;               /* master_port is one Slurm reserved */
    unsigned long max_local;      /* tasks on the step's busiest node */
    struct sp_plan plan;          /* srun's plan for auto */
    bool driver;                  /* this node has an NVIDIA driver */
    bool torchrun;                /* the step's command is torchrun */
    unsigned restarts;            /* SLURM_RESTART_COUNT */
    char gpus[SP_GPU_LIST_MAXLEN + 1]; /* the step's CUDA_VISIBLE_DEVICES
                                          on this node before Slurm binds
                                          its tasks ("" if none) */
    uid_t uid;                    /* the step's user (S_JOB_UID) */
    char relay[SP_RELAY_SPEC_MAX + 1]; /* SP_RELAY_ENV, or "" */
    char relay_host[256];         /* srun's address, for the relay */
} step;

/* The step's claim on MASTER_PORT (sp_port_lock), held by its first node's
 * slurmstepd from init_post_opt to slurm_spank_exit, or -1; CLAIM_PID is
 * the process that made it, STEPD_PID the one slurm_spank_init ran in.
 * They differ when Slurm runs the plugin in a short-lived child (Slurm >=
 * 24.05 with SlurmdParameters=contain_spank: a clone sharing memory, not
 * the descriptor table): the claim then ends with that child and the
 * descriptor number means nothing here.  Not in STEP, which
 * sp_slurmstepd_post_opt clears before it releases the claim of an earlier
 * step. */
static int claim_fd = -1;
static pid_t claim_pid, stepd_pid;

/* Keep an error that fails every task of the step.  Returns -1. */
static __attribute__ ((format (printf, 1, 2)))
int step_error (const char *fmt, ...)
{
    va_list ap;

    va_start (ap, fmt);
    vsnprintf (step.error, sizeof (step.error), fmt, ap);
    va_end (ap);
    return -1;
}

/* Read variable NAME of the job's environment into BUF (LEN bytes).
 * Returns 1 when set, 0 when unset, or -1 after step_error(). */
static int job_env (spank_t sp, const char *name, char *buf, int len)
{
    spank_err_t rc = spank_getenv (sp, name, buf, len);

    if (rc == ESPANK_SUCCESS)
        return 1;
    if (rc == ESPANK_ENV_NOEXIST)
        return 0;
    if (rc == ESPANK_NOSPACE)
        return step_error ("ddp: %s is longer than %d characters", name,
                           len - 1);
    return step_error ("ddp: cannot read %s: %s", name, spank_strerror (rc));
}

/* Is variable NAME of the job's (or task's) environment set and not empty
 * (libddp's ddpi_env_given)?  A value too long to read counts as given. */
static bool env_given (spank_t sp, const char *name)
{
    char buf[2];
    spank_err_t rc = spank_getenv (sp, name, buf, sizeof (buf));

    return (rc == ESPANK_SUCCESS && buf[0]) || rc == ESPANK_NOSPACE;
}

/* MASTER_ADDR from SLURM_STEP_NODELIST, checked against the node count;
 * for a multi-node step no loopback address unless srun's own address is
 * a loopback one.  The step's selector (the job's DDP_SOCKET_IFNAME, else
 * the site's socket_ifname: sp_ifname_effective) picks it where it can
 * (sp_master_addr: on the first node one of its interfaces' addresses,
 * on the others the first node's address on a subnet it lets in). */
static int find_master (spank_t sp, uint32_t nnodes, uint32_t nodeid)
{
    static char list[SP_HOSTLIST_MAXLEN + 1];
    char err[SP_ERRLEN], ifsel[256] = "", launch[64] = "";
    struct sp_ifname_job job = { NULL, NULL, NULL };
    int rc;

    if ((rc = job_env (sp, "SLURM_STEP_NODELIST", list, sizeof (list))) <= 0)
        return rc < 0 ? -1 : step_error ("ddp: SLURM_STEP_NODELIST is not "
                                         "set: cannot tell the first node");
    if (sp_hostlist_master (list, nnodes, step.master_host,
                            sizeof (step.master_host), err, sizeof (err)) < 0)
        return step_error ("%s", err);
    /* srun's own address, which the tasks of every node reach (srun
     * sets it in the environment it sends; slurmstepd adds the other
     * later). */
    if ((rc = job_env (sp, "DDP_SOCKET_IFNAME", ifsel, sizeof (ifsel))) < 0)
        return -1;
    job.ddp = rc == 1 ? ifsel : NULL;
    job.host_addr = env_given (sp, "DDP_HOST_ADDR") ? "given" : NULL;
    if ((rc = job_env (sp, "SLURM_SRUN_COMM_HOST", launch,
                       sizeof (launch))) < 0
        || (rc == 0 && job_env (sp, "SLURM_LAUNCH_NODE_IPADDR", launch,
                                sizeof (launch)) < 0))
        return -1;
    if (sp_master_addr (step.master_host, nnodes, nodeid == 0, launch,
                        sp_ifname_effective (sp_args_conf ()->socket_ifname,
                                             &job),
                        step.master_addr, sizeof (step.master_addr), err,
                        sizeof (err)) < 0)
        return step_error ("%s", err);
    return 0;
}

/* MASTER_PORT: the last of Slurm's reserved ports when the step has them
 * (srun --resv-ports, MpiParams=ports=), else derived from the ids. */
static int find_port (spank_t sp, uint32_t jobid, uint32_t stepid)
{
    const struct sp_conf *conf = sp_args_conf ();
    char buf[1024];
    int rc;

    if ((rc = job_env (sp, "SLURM_STEP_RESV_PORTS", buf, sizeof (buf))) < 0)
        return -1;
    if (rc == 1) {
        if ((step.master_port = sp_port_resv_last (buf)) < 0)
            return step_error ("ddp: SLURM_STEP_RESV_PORTS is not a list of "
                               "ports: '%.64s'", buf);
        step.resv_port = true;
        return 0;
    }
    step.master_port = sp_port_derive (jobid, stepid, conf->port_lo,
                                       conf->port_hi);
    if (step.master_port < 0)
        return step_error ("ddp: no MASTER_PORT in range %u-%u",
                           conf->port_lo, conf->port_hi);
    return 0;
}

/* How long the first node waits for srun's relay to take its port, and
 * the other nodes for the first node's port. */
#define RELAY_PUT_MS 10000
#define RELAY_GET_MS 60000

/* The relay of a multi-node step's port (sp_relay.h): srun's address
 * (SLURM_SRUN_COMM_HOST, else SLURM_LAUNCH_NODE_IPADDR) and SP_RELAY_ENV,
 * kept in STEP; none (relay[0] '\0') for one node or when srun gave none.
 * Returns 0, or -1 after step_error(). */
static int find_relay (spank_t sp, uint32_t nnodes)
{
    int rc;

    if (nnodes < 2)
        return 0;
    if ((rc = job_env (sp, SP_RELAY_ENV, step.relay, sizeof (step.relay)))
        <= 0)
        return rc;
    if ((rc = job_env (sp, "SLURM_SRUN_COMM_HOST", step.relay_host,
                       sizeof (step.relay_host))) < 0
        || (rc == 0 && (rc = job_env (sp, "SLURM_LAUNCH_NODE_IPADDR",
                                      step.relay_host,
                                      sizeof (step.relay_host))) < 0))
        return -1;
    if (rc == 0)
        return step_error ("ddp: %s is set but not srun's address "
                           "(SLURM_SRUN_COMM_HOST)", SP_RELAY_ENV);
    return 0;
}

/* Does this step learn its port through srun's relay?  (A multi-node step
 * with a derived port whose srun started one.) */
static bool relayed (void)
{
    return step.relay[0] && !step.resv_port;
}

/* On the first node, once it has a port (RC 0) or has failed (RC -1): tell
 * the other nodes through the relay, 0 for none.  Returns RC, or -1 after
 * step_error() when the relay cannot be told. */
static int tell_port (int rc)
{
    int port = rc == 0 ? step.master_port : 0;

    if (!relayed ()
        || sp_relay_put (step.relay_host, step.relay, port, RELAY_PUT_MS) == 0
        || rc < 0)
        return rc;
    return step_error ("ddp: cannot tell the step's other nodes its "
                       "MASTER_PORT (%d) through srun's relay at %s: %s",
                       port, step.relay_host, strerror (errno));
}

/* On another node: learn the port the first node took.  Returns 0, or -1
 * after step_error(). */
static int learn_port (void)
{
    int port;

    if (!relayed ())
        return 0;
    port = sp_relay_get (step.relay_host, step.relay, RELAY_GET_MS);
    if (port > 0) {
        step.master_port = port;
        return 0;
    }
    if (port == 0)
        return step_error ("ddp: the step's first node, %s, found no "
                           "MASTER_PORT for it (its tasks say why)",
                           step.master_host);
    return step_error ("ddp: cannot learn the step's MASTER_PORT from its "
                       "first node, %s, through srun's relay at %s: %s",
                       step.master_host, step.relay_host, strerror (errno));
}

/* Does a TCP socket listen on PORT on this node?  Sets *UID to its owner.
 * (An unreadable table counts as no: the check is advice, the claim is
 * the rule.) */
static bool port_listener (unsigned port, long *uid)
{
    return sp_port_listener ("/proc/net/tcp", port, uid) == 1
           || sp_port_listener ("/proc/net/tcp6", port, uid) == 1;
}

/* Close FD (when >= 0) keeping errno. */
static void close_keep_errno (int fd)
{
    int e = errno;

    if (fd >= 0)
        close (fd);
    errno = e;
}

/* The claim directory of this node's network namespace, checked (see
 * sp_port_dir): SP_PORT_DIR_PARENT/SP_PORT_DIR_NAME/net-INODE, each level
 * opened without following a link.  Made by root, the only one who may
 * write there.  Returns a descriptor or -1 with errno set. */
static int open_claim_dir (void)
{
    char name[32];
    struct stat st;
    int root, run = -1, base = -1, dir = -1;

    if ((root = open ("/", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0)
        return -1;
    if ((run = sp_port_dir (root, SP_PORT_DIR_PARENT + 1)) >= 0
        && (base = sp_port_dir (run, SP_PORT_DIR_NAME)) >= 0) {
        if (stat ("/proc/self/ns/net", &st) < 0)
            st.st_ino = 0;
        snprintf (name, sizeof (name), SP_PORT_NETNS_FMT,
                  (unsigned long long) st.st_ino);
        dir = sp_port_dir (base, name);
    }
    close_keep_errno (root);
    close_keep_errno (run);
    close_keep_errno (base);
    return dir;
}

/* What try_port found on the ports it could not take. */
struct port_try {
    int dir;                    /* the claim directory */
    char owner[96];             /* what this step writes in its claim */
    unsigned claimed, listened; /* ports held by steps, by listeners */
    char holder[96];            /* the first step holding one */
    long uids[4];               /* the first distinct listeners' uids */
    unsigned nuids;
};

/* Note UID among T's listeners. */
static void note_uid (struct port_try *t, long uid)
{
    unsigned i;

    for (i = 0; i < t->nuids; i++)
        if (t->uids[i] == uid)
            return;
    if (t->nuids < sizeof (t->uids) / sizeof (t->uids[0]))
        t->uids[t->nuids++] = uid;
}

/* sp_port_walk's TRY_PORT: claim PORT for this step (a lock file of
 * root's, sp_port_lock) and check that nothing listens there; keep the
 * claim in claim_fd.  ARG, a struct port_try, counts who holds the ports
 * taken.  Returns 0 (ours), 1 (taken) or -1 (errno set). */
static int try_port (unsigned port, void *arg)
{
    struct port_try *t = arg;
    char holder[sizeof (t->holder)];
    long uid = -1;
    int fd;

    fd = sp_port_lock (t->dir, port, t->owner, holder, sizeof (holder));
    if (fd < 0) {
        if (errno != EADDRINUSE)
            return -1;
        if (t->claimed++ == 0)
            snprintf (t->holder, sizeof (t->holder), "%s",
                      holder[0] ? holder : "another step");
        return 1;
    }
    if (port_listener (port, &uid)) {
        close (fd);
        t->listened++;
        note_uid (t, uid);
        return 1;
    }
    claim_fd = fd;
    claim_pid = getpid ();
    return 0;
}

/* What the admin and the user can do about a taken port (message tail). */
#define PORT_ADVICE "Use Slurm's reserved ports (srun --resv-ports; the " \
    "admin: MpiParams=ports=LO-HI), run the step again once a port is " \
    "free, or ask the admin for a wider port_range (now %u-%u) or one " \
    "that nobody else listens in"

/* Say in BUF (LEN bytes) who holds the ports T found taken: "N claimed by
 * other steps running there (the first: HOLDER), M with a listening
 * program of uid U[, U...]". */
static void describe_holders (const struct port_try *t, char *buf,
                              size_t len)
{
    size_t n = 0;
    unsigned i;

    buf[0] = '\0';
    if (t->claimed)
        n += (size_t) snprintf (buf, len, "%u claimed by other steps running "
                                "there (the first: %s)", t->claimed,
                                t->holder);
    if (t->listened && n < len) {
        n += (size_t) snprintf (buf + n, len - n, "%s%u with a listening "
                                "program of another user or step (uid",
                                t->claimed ? ", " : "", t->listened);
        for (i = 0; i < t->nuids && n < len; i++)
            n += (size_t) snprintf (buf + n, len - n, "%s %ld",
                                    i ? "," : "", t->uids[i]);
        if (n < len)
            snprintf (buf + n, len - n, ")");
    }
}

/* Fill *T for a walk of step STEPID of job JOBID; its claim directory is
 * opened.  Returns 0, or -1 after step_error(). */
static int port_try_init (struct port_try *t, uint32_t jobid,
                          uint32_t stepid)
{
    memset (t, 0, sizeof (*t));
    snprintf (t->owner, sizeof (t->owner), "job %" PRIu32 " step %" PRIu32
              " (uid %ld)", jobid, stepid, (long) step.uid);
    if ((t->dir = open_claim_dir ()) < 0)
        return step_error ("ddp: cannot open the claim directory %s/%s of "
                           "MASTER_PORT on %s: %s (it must be root's, "
                           "writable by root only)", SP_PORT_DIR_PARENT,
                           SP_PORT_DIR_NAME, step.master_host,
                           strerror (errno));
    return 0;
}

/* Walk from the derived port to the first one that no other step claims
 * and nothing listens on, at most TRIES ports: sp_port_walk with
 * try_port.  Returns 0, or -1 after step_error(). */
static int walk_port (uint32_t jobid, uint32_t stepid, unsigned tries)
{
    const struct sp_conf *conf = sp_args_conf ();
    char who[SP_ERRLEN / 2];
    struct port_try t;
    int port, rc = -1;

    if (port_try_init (&t, jobid, stepid) < 0)
        return -1;
    port = sp_port_walk (jobid, stepid, conf->port_lo, conf->port_hi, tries,
                         try_port, &t);
    if (port > 0) {
        step.master_port = port;
        rc = 0;
    }
    else if (errno != EADDRINUSE)
        step_error ("ddp: cannot claim a MASTER_PORT on %s: %s",
                    step.master_host, strerror (errno));
    else {
        describe_holders (&t, who, sizeof (who));
        step_error ("ddp: no free MASTER_PORT on %s, the step's first node: "
                    "of the %u ports of port_range tried, from this step's "
                    "own (%d) on, %s.  " PORT_ADVICE, step.master_host, tries,
                    step.master_port, who, conf->port_lo, conf->port_hi);
    }
    close (t.dir);
    return rc;
}

/* A reserved port is Slurm's choice: claim it, or refuse the step naming
 * who holds it.  Returns 0, or -1 after step_error(). */
static int take_resv_port (uint32_t jobid, uint32_t stepid)
{
    const struct sp_conf *conf = sp_args_conf ();
    char who[SP_ERRLEN / 2];
    struct port_try t;
    int rc;

    if (port_try_init (&t, jobid, stepid) < 0)
        return -1;
    rc = try_port ((unsigned) step.master_port, &t);
    close (t.dir);
    if (rc == 0)
        return 0;
    if (rc < 0)
        return step_error ("ddp: cannot claim MASTER_PORT %d on %s: %s",
                           step.master_port, step.master_host,
                           strerror (errno));
    describe_holders (&t, who, sizeof (who));
    return step_error ("ddp: MASTER_PORT %d, Slurm's reserved port of this "
                       "step, is taken on %s, the step's first node: %s.  "
                       PORT_ADVICE, step.master_port, step.master_host, who,
                       conf->port_lo, conf->port_hi);
}

/* On node 0, where rank 0 listens: claim MASTER_PORT for the step, so that
 * no other step running here gets it while this one runs, and check that
 * nothing listens there yet (a step or program there would make this
 * step's rendezvous fail or join the wrong one).  A derived port walks on
 * to a free one (a multi-node step then tells its other nodes which,
 * through srun: sp_relay.h); a reserved port is Slurm's choice and is
 * refused when taken.  Returns 0 or -1 after step_error(). */
static int take_port (uint32_t jobid, uint32_t stepid, uint32_t nnodes)
{
    const struct sp_conf *conf = sp_args_conf ();

    if (getpid () != stepd_pid)
        slurm_debug ("ddp: the plugin runs in a child of slurmstepd "
                     "(SlurmdParameters=contain_spank?): the claim on "
                     "MASTER_PORT ends with it, not with the step");
    if (step.resv_port)
        return take_resv_port (jobid, stepid);
    return walk_port (jobid, stepid, nnodes == 1 || relayed ()
                      ? conf->port_hi - conf->port_lo + 1 : 1);
}

/* Give the claim on MASTER_PORT back (when this process holds it). */
static void release_port (void)
{
    if (claim_fd >= 0 && claim_pid == getpid ())
        close (claim_fd);
    claim_fd = -1;
}

/* The step's tasks per node, checked against Slurm's own counts: a
 * heterogeneous step's layout covers all its components. */
static int find_layout (spank_t sp, uint32_t nnodes)
{
    char buf[4096];
    struct sp_layout l;
    uint32_t ntasks;
    int rc;

    if (spank_get_item (sp, S_JOB_TOTAL_TASK_COUNT, &ntasks) != ESPANK_SUCCESS)
        return step_error ("ddp: cannot get the step's task count from Slurm");
    rc = job_env (sp, "SLURM_STEP_TASKS_PER_NODE", buf, sizeof (buf));
    if (rc <= 0)
        return rc < 0 ? -1 : step_error ("ddp: SLURM_STEP_TASKS_PER_NODE is "
                                         "not set: cannot tell the step's "
                                         "layout");
    if (sp_layout_parse (buf, &l) < 0)
        return step_error ("ddp: SLURM_STEP_TASKS_PER_NODE is not a list of "
                           "task counts: '%.64s'", buf);
    if (l.nodes != nnodes || l.tasks != ntasks)
        return step_error ("ddp: this step has %" PRIu32 " tasks on %" PRIu32
                           " nodes, but its SLURM_STEP_TASKS_PER_NODE ('%.64s') "
                           "has %lu on %lu: a heterogeneous step (srun ... : "
                           "...)?  --ddp runs one homogeneous step; drop "
                           "--ddp and use --mpi=pmix (one PMIx world across "
                           "the components), or run one step", ntasks, nnodes,
                           buf, l.tasks, l.nodes);
    step.max_local = l.max;
    return 0;
}

/* srun's plan for --ddp=auto (SP_PLAN_ENV); none: the default (inherit). */
static int find_plan (spank_t sp)
{
    char buf[SP_PLAN_MAXLEN + 1];
    int rc;

    memset (&step.plan, 0, sizeof (step.plan));
    if ((rc = job_env (sp, SP_PLAN_ENV, buf, sizeof (buf))) <= 0)
        return rc;
    if (sp_plan_parse (buf, &step.plan) < 0)
        return step_error ("ddp: %s is not a plan the plugin wrote: '%s'",
                           SP_PLAN_ENV, buf);
    return 0;
}

/* SLURM_RESTART_COUNT (0 when unset: the job's first run). */
static int find_restarts (spank_t sp)
{
    char buf[32];
    unsigned long long n = 0;
    int rc;

    if ((rc = job_env (sp, "SLURM_RESTART_COUNT", buf, sizeof (buf))) < 0)
        return -1;
    if (rc == 1 && sp_parse_uint (buf, 0, 65535, &n) < 0)
        return step_error ("ddp: SLURM_RESTART_COUNT is not a count: '%s'",
                           buf);
    step.restarts = (unsigned) n;
    return 0;
}

/* Is the step's command torchrun (S_JOB_ARGV)? */
static void find_torchrun (spank_t sp)
{
    char **argv = NULL;
    int argc = 0;

    step.torchrun = spank_get_item (sp, S_JOB_ARGV, &argc, &argv)
                    == ESPANK_SUCCESS && sp_cmd_is_torchrun (argc, argv);
}

/* The step's GPU list on this node: CUDA_VISIBLE_DEVICES as the step's
 * environment has it before Slurm binds each task (srun --gpu-bind=none
 * then gives the tasks none).  Only a fallback, checked against
 * SLURM_GPUS_ON_NODE in sp_gpus_choose: unset, too long or unreadable
 * leaves it empty. */
static void find_gpus (spank_t sp)
{
    if (spank_getenv (sp, "CUDA_VISIBLE_DEVICES", step.gpus,
                      sizeof (step.gpus)) != ESPANK_SUCCESS)
        step.gpus[0] = '\0';
}

/* Does this node have an NVIDIA driver?  (Only asked under auto.) */
static bool nvidia_driver (void)
{
    struct stat st;

    return access ("/proc/driver/nvidia/version", F_OK) == 0
           || (stat ("/dev/nvidiactl", &st) == 0 && S_ISCHR (st.st_mode));
}

/* Everything the tasks of step STEPID share.  Returns 0, or -1 after
 * step_error(). */
static int find_step (spank_t sp, uint32_t stepid)
{
    uint32_t jobid, nnodes, nodeid;
    int rc;

    if (spank_get_item (sp, S_JOB_ID, &jobid) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_NNODES, &nnodes) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_NODEID, &nodeid) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_UID, &step.uid) != ESPANK_SUCCESS)
        return step_error ("ddp: cannot get the job id, user, node count and "
                           "node index from Slurm");
    rc = find_relay (sp, nnodes);
    if (rc == 0 && (find_layout (sp, nnodes) < 0
                    || find_port (sp, jobid, stepid) < 0
                    || find_master (sp, nnodes, nodeid) < 0
                    || find_plan (sp) < 0 || find_restarts (sp) < 0))
        rc = -1;
    if (rc == 0) {
        find_torchrun (sp);
        if (step.request.backend == SP_BACKEND_AUTO)
            step.driver = nvidia_driver ();
    }
    if (nodeid == 0) {
        if (rc == 0)
            rc = take_port (jobid, stepid, nnodes);
        return tell_port (rc);
    }
    return rc < 0 ? -1 : learn_port ();
}

/* This node's host name, for messages ("unknown" when it has none). */
static const char *node_name (void)
{
    static char host[256];

    if (gethostname (host, sizeof (host) - 1) < 0 || !host[0])
        snprintf (host, sizeof (host), "unknown");
    return host;
}

/* A step refused on this node before find_step: when this is its first
 * node and srun relays its port, say there is none (0), so that its other
 * nodes fail at once instead of waiting RELAY_GET_MS for it. */
static void tell_no_port (spank_t sp)
{
    char spec[SP_RELAY_SPEC_MAX + 1], host[256];
    uint32_t nnodes, nodeid;

    if (spank_get_item (sp, S_JOB_NNODES, &nnodes) == ESPANK_SUCCESS
        && spank_get_item (sp, S_JOB_NODEID, &nodeid) == ESPANK_SUCCESS
        && nnodes > 1 && nodeid == 0
        && spank_getenv (sp, SP_RELAY_ENV, spec, sizeof (spec))
           == ESPANK_SUCCESS
        && spank_getenv (sp, "SLURM_SRUN_COMM_HOST", host, sizeof (host))
           == ESPANK_SUCCESS)
        (void) sp_relay_put (host, spec, 0, RELAY_PUT_MS);
}

void sp_slurmstepd_init (void)
{
    stepd_pid = getpid ();
}

int sp_slurmstepd_post_opt (spank_t sp)
{
    uint32_t stepid;
    bool have_id;
    int ddp;

    memset (&step, 0, sizeof (step));
    release_port ();
    have_id = spank_get_item (sp, S_JOB_STEPID, &stepid) == ESPANK_SUCCESS;
    ddp = sp_args_step_ddp (have_id ? &stepid : NULL);
    if (ddp == 0)
        return 0;
    step.active = true;
    step.request = sp_args_effective ();
    if (sp_args_conf_error ())
        step_error ("%s (the plugstack.conf of node %s; srun's copy was "
                    "accepted): this node refuses --ddp steps until an "
                    "admin fixes it; steps without --ddp run",
                    sp_args_conf_error (), node_name ());
    else if (ddp < 0)
        step_error ("ddp: cannot get the step id from Slurm, so cannot tell "
                    "a ddp step from the batch or extern step; this step "
                    "asked for --ddp=%s and is not run without it",
                    sp_backend_name (step.request.backend));
    if (step.error[0])
        tell_no_port (sp);
    else
        (void) find_step (sp, stepid);
    return 0;
}

int sp_slurmstepd_user_init (spank_t sp)
{
    if (step.active)
        find_gpus (sp);
    return 0;
}

#define DRAIN_MS 2000      /* the longest a refused task waits for that */
#define FORWARD_NS 200000000L   /* then 200 ms for slurmstepd to send it */

/* Log MSG: in the task, slurmstepd's log goes to the task's stderr too, so
 * srun shows it to the user.  The task then waits (up to DRAIN_MS) until
 * slurmstepd has read MSG from the pipe: under kill-on-bad-exit, srun stops
 * reading output once a task elsewhere ends by its signal, and a reason
 * still in the pipe then never reaches the user (sp_drain.h).  Read is not
 * yet sent: slurmstepd forwards it to srun on its I/O connection, apart
 * from the exit message, so the task also gives that a moment (once seen
 * lost in a main-suite run, with the pipe already read). */
static int task_fail (const char *msg)
{
    struct timespec forward = { 0, FORWARD_NS };

    slurm_error ("%s", msg);
    fflush (stderr);
    if (sp_drain_pipe (STDERR_FILENO, DRAIN_MS) == 0)
        nanosleep (&forward, NULL);
    return -1;
}

/* Who a task is in its step (SPANK items). */
struct task_ids {
    uint32_t rank, size, nodeid, nnodes, local_tasks;
    int local_rank;
};

/* The task's ranks and counts from Slurm, range-checked.  Returns 0 or -1. */
static int get_ids (spank_t sp, struct task_ids *t)
{
    if (spank_get_item (sp, S_TASK_GLOBAL_ID, &t->rank) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_TOTAL_TASK_COUNT, &t->size)
           != ESPANK_SUCCESS
        || spank_get_item (sp, S_TASK_ID, &t->local_rank) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_LOCAL_TASK_COUNT, &t->local_tasks)
           != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_NODEID, &t->nodeid) != ESPANK_SUCCESS
        || spank_get_item (sp, S_JOB_NNODES, &t->nnodes) != ESPANK_SUCCESS)
        return -1;
    if (t->local_rank < 0 || (uint32_t) t->local_rank >= t->local_tasks
        || t->rank >= t->size || t->nodeid >= t->nnodes)
        return -1;
    return 0;
}

/* Set NAME=V in the task's environment.  Returns 0 or -1. */
static int set_u32 (spank_t sp, const char *name, uint32_t v)
{
    char buf[16];

    snprintf (buf, sizeof (buf), "%" PRIu32, v);
    return spank_setenv (sp, name, buf, 1) == ESPANK_SUCCESS ? 0 : -1;
}

static int set_str (spank_t sp, const char *name, const char *v)
{
    return spank_setenv (sp, name, v, 1) == ESPANK_SUCCESS ? 0 : -1;
}

/* The variables PyTorch's env:// reads (torch_env=yes), and for torchrun
 * the PET_* ones that stand for its --nnodes, --node-rank, --master-addr
 * and --master-port.  Returns 0, or -1 when any failed. */
static int set_torch_env (spank_t sp, const struct task_ids *t)
{
    int rc = 0;

    rc |= set_u32 (sp, "RANK", t->rank);
    rc |= set_u32 (sp, "WORLD_SIZE", t->size);
    rc |= set_u32 (sp, "LOCAL_RANK", (uint32_t) t->local_rank);
    rc |= set_u32 (sp, "LOCAL_WORLD_SIZE", t->local_tasks);
    rc |= set_u32 (sp, "NODE_RANK", t->nodeid);
    rc |= set_u32 (sp, "NNODES", t->nnodes);
    rc |= set_str (sp, "MASTER_ADDR", step.master_addr);
    rc |= set_u32 (sp, "MASTER_PORT", (uint32_t) step.master_port);
    if (step.torchrun) {
        rc |= set_u32 (sp, "PET_NNODES", t->nnodes);
        rc |= set_u32 (sp, "PET_NODE_RANK", t->nodeid);
        rc |= set_str (sp, "PET_MASTER_ADDR", step.master_addr);
        rc |= set_u32 (sp, "PET_MASTER_PORT", (uint32_t) step.master_port);
    }
    return rc;
}

/* What torchrun gives its workers beyond env:// (torch_env's elastic
 * group), as for a launch of one agent per node: the node is the group,
 * one role ("default") spans the step, the run id is the step's
 * (JOBID.STEPID) and Slurm's restart count the restarts.  Returns 0, or
 * -1 when any failed. */
static int set_elastic_env (spank_t sp, const struct task_ids *t)
{
    uint32_t jobid = 0, stepid = 0;
    char id[32];
    int rc = 0;

    (void) spank_get_item (sp, S_JOB_ID, &jobid);
    (void) spank_get_item (sp, S_JOB_STEPID, &stepid);
    snprintf (id, sizeof (id), "%" PRIu32 ".%" PRIu32, jobid, stepid);
    rc |= set_u32 (sp, "GROUP_RANK", t->nodeid);
    rc |= set_u32 (sp, "GROUP_WORLD_SIZE", t->nnodes);
    rc |= set_u32 (sp, "ROLE_RANK", t->rank);
    rc |= set_u32 (sp, "ROLE_WORLD_SIZE", t->size);
    rc |= set_str (sp, "ROLE_NAME", "default");
    rc |= set_str (sp, "TORCHELASTIC_RUN_ID", id);
    rc |= set_u32 (sp, "TORCHELASTIC_RESTART_COUNT", step.restarts);
    rc |= set_u32 (sp, "TORCHELASTIC_MAX_RESTARTS", 0);
    return rc;
}

/* Read a positive count from variable NAME of the task's environment
 * into *N.  Returns 0, or -1 when unset or not a number in [1, 1048576]. */
static int env_count (spank_t sp, const char *name, unsigned long long *n)
{
    char buf[16];

    if (spank_getenv (sp, name, buf, sizeof (buf)) != ESPANK_SUCCESS)
        return -1;
    return sp_parse_uint (buf, 1, 1048576, n);
}

/* The CPUs this task is bound to, when it is bound: its affinity (task_init
 * runs after Slurm's task plugins set it: task/affinity, the cpuset of
 * ConstrainCores, the user's --cpu-bind) when narrower than the machine's
 * online CPUs; 0 for a task free to run anywhere, or unknown (more CPUs
 * than a cpu_set_t holds: EINVAL). */
static unsigned long bound_cpus (void)
{
    cpu_set_t cpus;
    long online = sysconf (_SC_NPROCESSORS_ONLN);
    int n;

    if (sched_getaffinity (0, sizeof (cpus), &cpus) < 0)
        return 0;
    n = CPU_COUNT (&cpus);
    return n > 0 && online > 0 && n < online ? (unsigned long) n : 0;
}

/* OMP_NUM_THREADS (torch_env's omp group) for a task that has none, so
 * that several ranks on a node do not each start a thread per core: the
 * task's CPUs, SLURM_CPUS_PER_TASK, else the job's CPUs on the node
 * (SLURM_CPUS_ON_NODE) shared by the step's tasks there, at least 1; never
 * more than the CPUs the task is bound to (bound_cpus: a thread per CPU
 * counted would otherwise share the fewer CPUs of its binding); nothing
 * when neither count is known (sp_layout_omp).  Never overrides the task's
 * own value.  Returns 0, or -1 when setting it failed. */
static int set_omp (spank_t sp, const struct task_ids *t)
{
    char buf[2];
    unsigned long long per_task = 0, on_node = 0;
    unsigned long n;

    if (spank_getenv (sp, "OMP_NUM_THREADS", buf, sizeof (buf))
        != ESPANK_ENV_NOEXIST)
        return 0;
    if (env_count (sp, "SLURM_CPUS_PER_TASK", &per_task) < 0)
        per_task = 0;
    if (env_count (sp, "SLURM_CPUS_ON_NODE", &on_node) < 0)
        on_node = 0;
    n = sp_layout_omp ((unsigned long) per_task, (unsigned long) on_node,
                       t->local_tasks, bound_cpus ());
    return n > 0 ? set_u32 (sp, "OMP_NUM_THREADS", (uint32_t) n) : 0;
}

/* Variable NAME of the task's environment into BUF (LEN bytes): BUF, NULL
 * when unset, or TOO_LONG (not a valid selector) when it does not fit. */
static const char *task_var (spank_t sp, const char *name, char *buf, int len)
{
    static const char too_long[] = "(too long)";
    spank_err_t rc = spank_getenv (sp, name, buf, len);

    if (rc == ESPANK_NOSPACE)
        return too_long;
    return rc == ESPANK_SUCCESS ? buf : NULL;
}

/* The site's socket_ifname for the task (sp_ifname_task):
 * DDP_SOCKET_IFNAME where the job gives neither it nor DDP_HOST_ADDR,
 * NCCL_SOCKET_IFNAME where the job gives none.  Returns 0, or -1 when
 * setting one failed. */
static int set_ifnames (spank_t sp)
{
    const char *site = sp_args_conf ()->socket_ifname;
    char ddp[SP_IFNAME_MAX], nccl[SP_IFNAME_MAX];
    struct sp_ifname_job job;
    struct sp_ifname_task t;
    int rc = 0;

    if (!site[0])
        return 0;
    job.ddp = task_var (sp, "DDP_SOCKET_IFNAME", ddp, sizeof (ddp));
    job.host_addr = env_given (sp, "DDP_HOST_ADDR") ? "given" : NULL;
    job.nccl = task_var (sp, "NCCL_SOCKET_IFNAME", nccl, sizeof (nccl));
    if (sp_ifname_task (site, &job, &t) < 0)
        return -1;
    if (t.ddp)
        rc |= set_str (sp, "DDP_SOCKET_IFNAME", t.ddp);
    if (t.nccl[0])
        rc |= set_str (sp, "NCCL_SOCKET_IFNAME", t.nccl);
    else if (t.nccl_unsayable)
        slurm_debug ("ddp: socket_ifname: no NCCL_SOCKET_IFNAME for a "
                     "selector with ':' (NCCL reads a port there)");
    return rc;
}

/* DDP_DEVICE=0 for a task that keeps a share of several GPUs (libddp uses
 * the first), unless the task has a DDP_DEVICE of its own.  Returns 0 or
 * -1. */
static int set_device (spank_t sp)
{
    char buf[2];

    if (spank_getenv (sp, "DDP_DEVICE", buf, sizeof (buf))
        != ESPANK_ENV_NOEXIST)
        return 0;
    return set_str (sp, "DDP_DEVICE", "0");
}

/* Set the task's variables: the torch ones (torch_env's groups), the
 * site's interfaces (set_ifnames), DDP_BACKEND, DDP_RESTART_COUNT,
 * CUDA_VISIBLE_DEVICES when bound (or the step's list when the task had
 * none), DDP_DEVICE for a share; take out what only srun and the plugin
 * use (the plan, the relay, and SLURM_KILL_BAD_EXIT when the plugin set
 * it).  Returns 0, or -1 when any failed. */
static int set_env (spank_t sp, const struct task_ids *t,
                    const struct sp_task_choice *c)
{
    unsigned groups = sp_args_conf ()->torch_env;
    int rc = 0;

    if (groups & SP_TORCH_ENV)
        rc |= set_torch_env (sp, t);
    /* Under torchrun its agent gives its workers both. */
    if ((groups & SP_TORCH_ELASTIC) && !step.torchrun)
        rc |= set_elastic_env (sp, t);
    if ((groups & SP_TORCH_OMP) && !step.torchrun)
        rc |= set_omp (sp, t);
    rc |= set_ifnames (sp);
    rc |= set_str (sp, "DDP_BACKEND", sp_backend_name (c->backend));
    rc |= set_u32 (sp, "DDP_RESTART_COUNT", step.restarts);
    if (c->bound)
        rc |= set_str (sp, "CUDA_VISIBLE_DEVICES", c->gpu);
    else if (c->step_list)
        rc |= set_str (sp, "CUDA_VISIBLE_DEVICES", step.gpus);
    if (c->share)
        rc |= set_device (sp);
    (void) spank_unsetenv (sp, SP_PLAN_ENV);
    (void) spank_unsetenv (sp, SP_RELAY_ENV);
    if (step.plan.kill_set)
        (void) spank_unsetenv (sp, "SLURM_KILL_BAD_EXIT");
    return rc;
}

/* SLURM_GPUS_ON_NODE, set by slurmstepd: the step's GPUs on this node, or
 * -1 (unknown) when unset or not a number. */
static int gpus_on_node (spank_t sp)
{
    char buf[16];
    unsigned long long n;

    if (spank_getenv (sp, "SLURM_GPUS_ON_NODE", buf, sizeof (buf))
        == ESPANK_SUCCESS && sp_parse_uint (buf, 0, 65535, &n) == 0)
        return (int) n;
    return -1;
}

/* Did srun's --gpu-bind=none reach this task (SLURMD_TRES_BIND)? */
static bool bind_none (spank_t sp)
{
    char buf[256];

    return spank_getenv (sp, "SLURMD_TRES_BIND", buf, sizeof (buf))
           == ESPANK_SUCCESS && sp_gpus_bind_none (buf);
}

/* Fill *IN, what the GPU choice of task T needs; NODE (LEN bytes) receives
 * the node's name for messages.  Returns 0, or -1 after logging why. */
static int describe_task (spank_t sp, const struct task_ids *t,
                          struct sp_task_gpus *in, char *node, int len)
{
    static char visible[SP_GPU_LIST_MAXLEN + 1];
    spank_err_t rc;

    memset (in, 0, sizeof (*in));
    rc = spank_getenv (sp, "CUDA_VISIBLE_DEVICES", visible, sizeof (visible));
    if (rc == ESPANK_NOSPACE) {
        slurm_error ("ddp: CUDA_VISIBLE_DEVICES is longer than %d "
                     "characters", SP_GPU_LIST_MAXLEN);
        return -1;
    }
    if (rc != ESPANK_SUCCESS && rc != ESPANK_ENV_NOEXIST) {
        slurm_error ("ddp: cannot read CUDA_VISIBLE_DEVICES: %s",
                     spank_strerror (rc));
        return -1;
    }
    in->visible = rc == ESPANK_SUCCESS ? visible : NULL;
    in->step_visible = step.gpus[0] ? step.gpus : NULL;
    in->bind_none = bind_none (sp);
    in->gpus_on_node = gpus_on_node (sp);
    in->local_rank = (unsigned) t->local_rank;
    in->local_tasks = t->local_tasks;
    in->want = step.request.backend;
    in->bind = step.request.bind && !step.torchrun;
    in->rule = sp_plan_rule (&step.plan, (unsigned) step.max_local);
    in->max_local_tasks = (unsigned) step.max_local;
    in->driver = step.driver;
    in->why = sp_plan_reason (&step.plan);
    if (spank_getenv (sp, "SLURMD_NODENAME", node, len) == ESPANK_SUCCESS)
        in->node = node;
    return 0;
}

int sp_slurmstepd_exit (spank_t sp)
{
    (void) sp;
    release_port ();
    return 0;
}

int sp_slurmstepd_task_init (spank_t sp)
{
    struct task_ids t;
    struct sp_task_gpus in;
    struct sp_task_choice choice;
    char err[SP_ERRLEN], node[256];

    if (!step.active)
        return 0;
    if (step.error[0])
        return task_fail (step.error);
    if (get_ids (sp, &t) < 0)
        return task_fail ("ddp: cannot get the task's ranks from Slurm");
    if (step.torchrun && t.local_tasks > 1) {
        snprintf (err, sizeof (err), "ddp: this step runs torchrun, which "
                  "starts its own workers, with %" PRIu32 " tasks on this "
                  "node; " SP_TORCHRUN_ADVICE, t.local_tasks);
        return task_fail (err);
    }
    if (describe_task (sp, &t, &in, node, sizeof (node)) < 0)
        return -1;
    if (sp_gpus_choose (&in, &choice, err, sizeof (err)) < 0)
        return task_fail (err);
    if (choice.unlisted && t.local_rank == 0
        && sp_gpus_note (&in, choice.backend, err, sizeof (err)) == 0)
        slurm_error ("%s", err);
    if (set_env (sp, &t, &choice) < 0)
        return task_fail ("ddp: cannot set the task's environment");
    return 0;
}
