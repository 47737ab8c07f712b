/* train.c - data-parallel training with libddp, the project's main example.
 *
 * Trains logistic regression on a synthetic, linearly separable data set:
 *
 *   - rank 0 prepares the data set file first (ddp_rank0_first); the other
 *     ranks then load the same file;
 *   - every rank takes its shard of each step with the distributed sampler;
 *   - gradients are averaged with one all-reduce per step, so every rank
 *     applies the same update and the parameters stay bit-identical;
 *   - the step's loss and accuracy are averaged across ranks in one small
 *     all-reduce, which also carries the stop vote (ddp_average_stop);
 *   - the main rank alone writes the checkpoint, atomically, at the end of
 *     every epoch and when the run stops early (ddp_main_only: the others
 *     wait until it is complete, and a failure is an error on every rank);
 *   - at the end every rank's parameters are compared bit for bit.
 *
 * Preemption, scancel, time limits and requeue: SIGTERM, SIGUSR1 or SIGUSR2
 * on any rank (Slurm's scancel, preemption, requeue, --signal=USR1@SECS)
 * makes every rank stop after the same step; the main rank checkpoints the
 * parameters with the position in the epoch, and the program exits with 75
 * (EX_TEMPFAIL: "stopped, run me again").  Run again with
 * SLURM_RESTART_COUNT above 0 (a requeued job) or with --resume, it resumes
 * from the checkpoint at that step, and ends with parameters bitwise
 * identical to a run that was never stopped (same number of ranks and same
 * options; the checkpoint checks both).  tests/t0710-example-stop.t does
 * exactly that under scancel, --signal and scontrol requeue.
 *
 * The global batch is fixed (--global-batch); each rank processes
 * global-batch / world-size items per step.  Because the sampler gives rank r
 * positions r, r+W, r+2W, ... of the epoch's permutation, the W ranks of one
 * step together see exactly the items a single process sees with the same
 * global batch: the loss curve matches a single-process run up to float
 * rounding (tests/t0700-example.t checks this).
 *
 * Exit status: 0 trained to the end, 75 stopped early with a checkpoint,
 * 1 an error (said on stderr), 2 a bad command line.
 *
 * Runs as a single process without srun, under `srun --ddp=host` on CPUs, and
 * under `srun --ddp=nccl` on GPUs (host buffers are staged by the library).
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <ddp.h>

#define EXIT_STOPPED 75 /* EX_TEMPFAIL: stopped early, checkpoint saved */

struct options {
    long items;        /* data set size */
    long features;     /* input dimension */
    long global_batch; /* items per step over all ranks */
    long epochs;
    double lr;
    unsigned long seed;
    long throttle_ms;  /* pause after each step (a stand-in for a big model) */
    int resume;        /* --resume: resume from the checkpoint, must exist */
    const char *data_path;
    const char *checkpoint;
};

struct dataset {
    long items;
    long features;
    float *x; /* items x features */
    float *y; /* items, 0 or 1 */
};

struct model {
    long features;
    float *w; /* features weights, then the bias */
};

/* Where training is: what a checkpoint holds besides the parameters. */
struct position {
    long epoch;      /* epochs completed */
    long step;       /* steps completed in epoch 'epoch' */
    double sum_loss; /* of the step losses (averaged over ranks) so far */
    double sum_acc;
};

/* ---- small utilities -------------------------------------------------- */

static int parse_long (const char *s, long min, long max, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol (s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min || v > max)
        return -1;
    *out = v;
    return 0;
}

static void usage (FILE *f)
{
    fprintf (f,
             "Usage: train [--items N] [--features D] [--global-batch B] "
             "[--epochs E]\n"
             "             [--lr RATE] [--seed S] [--data FILE] "
             "[--checkpoint FILE]\n"
             "             [--resume] [--throttle MS]\n"
             "Defaults: --items 4096 --features 16 --global-batch 64 "
             "--epochs 5 --lr 0.5\n"
             "          --seed 1 --data train-data.bin "
             "--checkpoint train-checkpoint.bin\n"
             "B must be a multiple of the number of ranks.  SIGTERM, SIGUSR1 "
             "or SIGUSR2 on any\n"
             "rank stops every rank after the same step with a checkpoint "
             "(exit 75); a rerun\n"
             "resumes from it when SLURM_RESTART_COUNT > 0 (a requeued job) "
             "or with --resume.\n"
             "--throttle MS pauses MS ms after each step (to try stopping "
             "a short run).\n");
}

/* One option with its value; returns 0, or -1 for a bad value. */
static int parse_option (struct options *o, const char *a, const char *v)
{
    static const long big = 1L << 30;
    long n;
    int bad = 0;

    if (!strcmp (a, "--items"))
        bad = parse_long (v, 1, big, &o->items);
    else if (!strcmp (a, "--features"))
        bad = parse_long (v, 1, 4096, &o->features);
    else if (!strcmp (a, "--global-batch"))
        bad = parse_long (v, 1, big, &o->global_batch);
    else if (!strcmp (a, "--epochs"))
        bad = parse_long (v, 1, 100000, &o->epochs);
    else if (!strcmp (a, "--throttle"))
        bad = parse_long (v, 0, 60000, &o->throttle_ms);
    else if (!strcmp (a, "--seed")) {
        bad = parse_long (v, 0, LONG_MAX, &n);
        o->seed = (unsigned long) n;
    }
    else if (!strcmp (a, "--lr")) {
        char *end;
        o->lr = strtod (v, &end);
        bad = *end != '\0' || !(o->lr > 0 && o->lr < 100);
    }
    else if (!strcmp (a, "--data"))
        o->data_path = v;
    else /* --checkpoint */
        o->checkpoint = v;
    if (bad)
        fprintf (stderr, "train: bad value for %s: '%s'\n", a, v);
    return bad ? -1 : 0;
}

static int parse_args (int argc, char **argv, struct options *o)
{
    static const char *const with_value[] = {
        "--items", "--features", "--global-batch", "--epochs", "--throttle",
        "--seed", "--lr", "--data", "--checkpoint",
    };

    *o = (struct options) {
        .items = 4096, .features = 16, .global_batch = 64, .epochs = 5,
        .lr = 0.5, .seed = 1, .data_path = "train-data.bin",
        .checkpoint = "train-checkpoint.bin",
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        size_t k = 0, nv = sizeof (with_value) / sizeof (with_value[0]);

        if (!strcmp (a, "-h") || !strcmp (a, "--help")) {
            usage (stdout);
            exit (0);
        }
        if (!strcmp (a, "--resume")) {
            o->resume = 1;
            continue;
        }
        while (k < nv && strcmp (a, with_value[k]) != 0)
            k++;
        if (k == nv) {
            fprintf (stderr, "train: unknown option %s\n", a);
            usage (stderr);
            return -1;
        }
        if (i + 1 >= argc) {
            fprintf (stderr, "train: %s needs a value\n", a);
            return -1;
        }
        if (parse_option (o, a, argv[++i]) < 0)
            return -1;
    }
    return 0;
}

/* splitmix64: a small, well-mixed generator for the synthetic data. */
static uint64_t mix64 (uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static float uniform (uint64_t *state)
{
    return (float) ((mix64 (state) >> 11) * 0x1.0p-53) * 2.0f - 1.0f;
}

/* FNV-1a, continued from h over n bytes. */
static uint64_t fnv1a (uint64_t h, const void *p, size_t n)
{
    const unsigned char *b = p;

    for (size_t i = 0; i < n; i++)
        h = (h ^ b[i]) * 1099511628211ULL;
    return h;
}

#define FNV_START 1469598103934665603ULL

/* ---- files: written whole or not at all ------------------------------- */

struct piece {
    const void *p;
    size_t n;
};

static int write_fd_all (int fd, const void *p, size_t n)
{
    const char *c = p;

    while (n > 0) {
        ssize_t k = write (fd, c, n);
        if (k < 0 && errno == EINTR)
            continue;
        if (k <= 0)
            return -1;
        c += k;
        n -= (size_t) k;
    }
    return 0;
}

/* Make the rename of a file in path's directory durable. */
static int sync_dir_of (const char *path)
{
    char dir[4096];
    const char *slash = strrchr (path, '/');
    int fd, rc;

    if (!slash)
        strcpy (dir, ".");
    else if (slash == path)
        strcpy (dir, "/");
    else if ((size_t) (slash - path) < sizeof (dir))
        snprintf (dir, sizeof (dir), "%.*s", (int) (slash - path), path);
    else
        return -1;
    if ((fd = open (dir, O_RDONLY | O_DIRECTORY)) < 0)
        return -1;
    rc = fsync (fd);
    close (fd);
    return rc;
}

/* Write the pieces to path atomically: a temporary file in the same
 * directory, fsync, rename over path, fsync the directory.  A crash or a
 * kill at any moment leaves either the old file or the new one, whole.
 * Returns 0, or -1 with errno set (nothing left behind). */
static int write_atomic (const char *path, const struct piece *pieces,
                         int npieces)
{
    char tmp[4096];
    int fd, rc = 0, saved;

    if (snprintf (tmp, sizeof (tmp), "%s.tmp.%ld", path, (long) getpid ())
        >= (int) sizeof (tmp)) {
        errno = ENAMETOOLONG;
        return -1;
    }
    if ((fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC, 0644)) < 0)
        return -1;
    for (int i = 0; i < npieces && rc == 0; i++)
        rc = write_fd_all (fd, pieces[i].p, pieces[i].n);
    if (rc == 0)
        rc = fsync (fd);
    saved = errno;
    if (close (fd) != 0 && rc == 0) {
        rc = -1;
        saved = errno;
    }
    if (rc == 0 && rename (tmp, path) != 0) {
        rc = -1;
        saved = errno;
    }
    if (rc != 0) {
        unlink (tmp);
        errno = saved;
        return -1;
    }
    return sync_dir_of (path);
}

/* ---- the data set: rank 0 writes it, every rank reads it -------------- */

static void dataset_free (struct dataset *d)
{
    free (d->x);
    free (d->y);
    d->x = d->y = NULL;
}

static int dataset_alloc (struct dataset *d, long items, long features)
{
    d->items = items;
    d->features = features;
    d->x = calloc ((size_t) items * (size_t) features, sizeof (float));
    d->y = calloc ((size_t) items, sizeof (float));
    if (!d->x || !d->y) {
        dataset_free (d);
        return -1;
    }
    return 0;
}

/* Label = sign of a fixed random hyperplane, with 5% of labels flipped. */
static int dataset_generate (struct dataset *d, const struct options *o)
{
    uint64_t st = o->seed * 7919 + 17;
    float *plane;

    if (dataset_alloc (d, o->items, o->features) < 0)
        return -1;
    if (!(plane = malloc ((size_t) o->features * sizeof (float)))) {
        dataset_free (d);
        return -1;
    }
    for (long j = 0; j < o->features; j++)
        plane[j] = uniform (&st);
    for (long i = 0; i < o->items; i++) {
        float dot = 0.25f;
        for (long j = 0; j < o->features; j++) {
            float v = uniform (&st);
            d->x[i * o->features + j] = v;
            dot += v * plane[j];
        }
        d->y[i] = dot > 0 ? 1.0f : 0.0f;
        if ((mix64 (&st) % 100) < 5)
            d->y[i] = 1.0f - d->y[i];
    }
    free (plane);
    return 0;
}

struct prepare_ctx {
    const struct options *o;
    struct dataset *d;
};

static int dataset_save (const struct dataset *d, const char *path)
{
    int64_t hdr[2] = { d->items, d->features };
    struct piece pieces[] = {
        { hdr, sizeof (hdr) },
        { d->x, (size_t) d->items * (size_t) d->features * sizeof (float) },
        { d->y, (size_t) d->items * sizeof (float) },
    };

    return write_atomic (path, pieces, 3);
}

static int dataset_load (struct dataset *d, const char *path,
                         const struct options *o)
{
    int64_t hdr[2];
    FILE *f = fopen (path, "rb");
    int rc = -1;

    if (!f)
        return -1;
    if (fread (hdr, sizeof (hdr), 1, f) != 1 || hdr[0] != o->items
        || hdr[1] != o->features)
        goto out;
    if (dataset_alloc (d, o->items, o->features) < 0)
        goto out;
    if (fread (d->x, sizeof (float), (size_t) o->items * o->features, f)
            != (size_t) (o->items * o->features)
        || fread (d->y, sizeof (float), (size_t) o->items, f) != (size_t) o->items) {
        dataset_free (d);
        goto out;
    }
    rc = 0;
out:
    fclose (f);
    return rc;
}

/* Runs on rank 0 first, then on the others: rank 0 generates and saves the
 * data set, the others load what it saved. */
static int prepare_data (void *arg)
{
    struct prepare_ctx *c = arg;

    if (ddp_is_main ()) {
        if (dataset_generate (c->d, c->o) < 0) {
            ddp_log ("cannot generate the data set (out of memory)");
            return -1;
        }
        if (dataset_save (c->d, c->o->data_path) < 0) {
            ddp_log ("cannot write %s: %s", c->o->data_path, strerror (errno));
            return -1;
        }
        return 0;
    }
    if (dataset_load (c->d, c->o->data_path, c->o) < 0) {
        ddp_log ("cannot read %s", c->o->data_path);
        return -1;
    }
    return 0;
}

/* ---- the model -------------------------------------------------------- */

static float sigmoid (float z)
{
    return 1.0f / (1.0f + expf (-z));
}

/* Mean loss, correct count and gradient over the items idx[0..n). */
static void forward_backward (const struct model *m, const struct dataset *d,
                              const uint64_t *idx, long n, float *grad,
                              double *loss, double *correct)
{
    long f = m->features;

    memset (grad, 0, (size_t) (f + 1) * sizeof (float));
    *loss = 0;
    *correct = 0;
    for (long k = 0; k < n; k++) {
        const float *x = d->x + idx[k] * f;
        float y = d->y[idx[k]], z = m->w[f], p, err;

        for (long j = 0; j < f; j++)
            z += m->w[j] * x[j];
        p = sigmoid (z);
        err = p - y;
        for (long j = 0; j < f; j++)
            grad[j] += err * x[j] / (float) n;
        grad[f] += err / (float) n;
        *loss -= (y > 0.5f ? log (p + 1e-7) : log (1.0 - p + 1e-7)) / n;
        *correct += ((p > 0.5f) == (y > 0.5f)) ? 1.0 / n : 0.0;
    }
}

/* FNV-1a over the parameter bytes: equal hashes on every rank (checked with
 * MIN and MAX) mean bit-identical parameters. */
static uint64_t params_hash (const struct model *m)
{
    return fnv1a (FNV_START, m->w,
                  (size_t) (m->features + 1) * sizeof (float));
}

static int check_identical (const struct model *m, int *identical)
{
    uint64_t h = params_hash (m), lo, hi;
    int rc;

    if ((rc = ddp_allreduce (&h, &lo, 1, DDP_UINT64, DDP_MIN)) < 0
        || (rc = ddp_allreduce (&h, &hi, 1, DDP_UINT64, DDP_MAX)) < 0)
        return rc;
    *identical = lo == hi;
    return 0;
}

/* Steps in an epoch: the sampler gives each rank ceil(items / W) items. */
static long steps_per_epoch (const struct options *o)
{
    long w = ddp_world_size ();

    return ((o->items + w - 1) / w) / (o->global_batch / w);
}

/* ---- the checkpoint --------------------------------------------------- *
 * Native byte order (written and read on the same cluster):
 *   "DDPTRAIN", u32 version, u32 world size,
 *   i64 items, features, global batch, u64 seed, f64 lr,
 *   i64 epoch, step, f64 sum_loss, sum_acc      (struct position)
 *   f32 weights[features + 1],
 *   u64 FNV-1a of every byte before it.
 * The options and the world size are there to refuse a resume that could
 * not continue the same run. */

#define CK_MAGIC "DDPTRAIN"
#define CK_VERSION 1u
#define CK_HEADER 88

static size_t ck_size (long features)
{
    return CK_HEADER + (size_t) (features + 1) * sizeof (float)
           + sizeof (uint64_t);
}

static unsigned char *put (unsigned char *p, const void *v, size_t n)
{
    memcpy (p, v, n);
    return p + n;
}

static const unsigned char *get (const unsigned char *p, void *v, size_t n)
{
    memcpy (v, p, n);
    return p + n;
}

/* The checkpoint's bytes (malloc'd, ck_size()), or NULL. */
static unsigned char *ck_encode (const struct options *o,
                                 const struct model *m,
                                 const struct position *pos)
{
    size_t size = ck_size (m->features);
    unsigned char *buf = malloc (size), *p = buf;
    uint32_t version = CK_VERSION, world = (uint32_t) ddp_world_size ();
    int64_t opt[3] = { o->items, o->features, o->global_batch };
    int64_t at[2] = { pos->epoch, pos->step };
    uint64_t seed = o->seed, sum;

    if (!buf)
        return NULL;
    p = put (p, CK_MAGIC, 8);
    p = put (p, &version, 4);
    p = put (p, &world, 4);
    p = put (p, opt, sizeof (opt));
    p = put (p, &seed, 8);
    p = put (p, &o->lr, 8);
    p = put (p, at, sizeof (at));
    p = put (p, &pos->sum_loss, 8);
    p = put (p, &pos->sum_acc, 8);
    p = put (p, m->w, (size_t) (m->features + 1) * sizeof (float));
    sum = fnv1a (FNV_START, buf, (size_t) (p - buf));
    put (p, &sum, 8);
    return buf;
}

/* Check that buf (len bytes) is a whole checkpoint of this program that
 * this run can continue; on failure write why to why. */
static int ck_check (const unsigned char *buf, size_t len,
                     const struct options *o, char *why, size_t wlen)
{
    uint32_t version, world;
    int64_t opt[3], at[2];
    uint64_t seed, sum;
    double lr;
    const unsigned char *p = buf;

    if (len < 16 || memcmp (buf, CK_MAGIC, 8) != 0) {
        snprintf (why, wlen, "is not a checkpoint of this program (%zu "
                  "bytes, no %s header)", len, CK_MAGIC);
        return -1;
    }
    p = get (buf + 8, &version, 4);
    p = get (p, &world, 4);
    if (version != CK_VERSION) {
        snprintf (why, wlen, "has format version %u; this program reads %u",
                  version, CK_VERSION);
        return -1;
    }
    if (len < CK_HEADER) {
        snprintf (why, wlen, "is truncated: %zu bytes, shorter than its "
                  "%d-byte header", len, CK_HEADER);
        return -1;
    }
    p = get (p, opt, sizeof (opt));
    p = get (p, &seed, 8);
    p = get (p, &lr, 8);
    get (p, at, sizeof (at));
    if (opt[1] < 1 || opt[1] > 4096) {
        snprintf (why, wlen, "is corrupt: it says %" PRId64 " features",
                  opt[1]);
        return -1;
    }
    if (len != ck_size ((long) opt[1])) {
        snprintf (why, wlen, "is %s: %zu bytes, a checkpoint of %" PRId64
                  " features has %zu", len < ck_size ((long) opt[1])
                  ? "truncated" : "corrupt", len, opt[1],
                  ck_size ((long) opt[1]));
        return -1;
    }
    memcpy (&sum, buf + len - 8, 8);
    if (fnv1a (FNV_START, buf, len - 8) != sum) {
        snprintf (why, wlen, "is corrupt: its checksum does not match its "
                  "contents");
        return -1;
    }
    if (world != (uint32_t) ddp_world_size ()) {
        snprintf (why, wlen, "was written by a run of %u ranks; this one has "
                  "%d: resume with the same number of tasks", world,
                  ddp_world_size ());
        return -1;
    }
    if (opt[0] != o->items || opt[1] != o->features
        || opt[2] != o->global_batch || seed != o->seed || lr != o->lr) {
        snprintf (why, wlen, "was written with --items %" PRId64 " --features "
                  "%" PRId64 " --global-batch %" PRId64 " --seed %" PRIu64
                  " --lr %g: resume with the same options", opt[0], opt[1],
                  opt[2], seed, lr);
        return -1;
    }
    if (at[0] < 0 || at[1] < 0 || at[1] >= steps_per_epoch (o)) {
        snprintf (why, wlen, "is corrupt: epoch %" PRId64 " step %" PRId64
                  " is no position of this run", at[0] + 1, at[1]);
        return -1;
    }
    return 0;
}

/* Take the position and parameters out of a checked checkpoint. */
static void ck_decode (const unsigned char *buf, struct model *m,
                       struct position *pos)
{
    int64_t at[2];
    const unsigned char *p = buf + CK_HEADER - 32;

    p = get (p, at, sizeof (at));
    p = get (p, &pos->sum_loss, 8);
    p = get (p, &pos->sum_acc, 8);
    get (p, m->w, (size_t) (m->features + 1) * sizeof (float));
    pos->epoch = (long) at[0];
    pos->step = (long) at[1];
}

struct save_ctx {
    const struct options *o;
    const struct model *m;
    const struct position *pos;
};

/* Main-only (ddp_main_only): write the checkpoint atomically. */
static int save_checkpoint (void *arg)
{
    struct save_ctx *c = arg;
    unsigned char *buf = ck_encode (c->o, c->m, c->pos);
    struct piece whole = { buf, ck_size (c->m->features) };
    int rc;

    if (!buf) {
        ddp_log ("cannot write checkpoint %s: out of memory",
                 c->o->checkpoint);
        return -1;
    }
    if ((rc = write_atomic (c->o->checkpoint, &whole, 1)) < 0)
        ddp_log ("cannot write checkpoint %s: %s", c->o->checkpoint,
                 strerror (errno));
    free (buf);
    return rc;
}

/* The whole file at path, malloc'd; -1 with errno set on failure. */
static int read_whole (const char *path, unsigned char **out, size_t *len)
{
    FILE *f = fopen (path, "rb");
    unsigned char *buf = NULL;
    size_t n = 0, cap = 0, k;
    int rc = -1;

    if (!f)
        return -1;
    do {
        if (n == cap) {
            unsigned char *b = realloc (buf, cap ? 2 * cap : 4096);
            if (!b)
                goto out;
            buf = b;
            cap = cap ? 2 * cap : 4096;
        }
        k = fread (buf + n, 1, cap - n, f);
        n += k;
    } while (k > 0);
    if (ferror (f))
        goto out;
    *out = buf;
    *len = n;
    buf = NULL;
    rc = 0;
out:
    free (buf);
    fclose (f);
    return rc;
}

struct load_ctx {
    const struct options *o;
    int must_exist;
};

/* Root of ddp_compute_and_bcast: the checked checkpoint's bytes, or none
 * (length 0) when there is no checkpoint and none is required. */
static int load_checkpoint (void *arg, void **out, size_t *len)
{
    struct load_ctx *c = arg;
    unsigned char *buf;
    char why[256];

    if (read_whole (c->o->checkpoint, &buf, len) < 0) {
        if (errno == ENOENT && !c->must_exist) {
            ddp_log ("no checkpoint %s: starting from the beginning",
                     c->o->checkpoint);
            *out = NULL;
            *len = 0;
            return 0;
        }
        ddp_log ("cannot read checkpoint %s: %s", c->o->checkpoint,
                 strerror (errno));
        return -1;
    }
    if (ck_check (buf, *len, c->o, why, sizeof (why)) < 0) {
        ddp_log ("checkpoint %s %s", c->o->checkpoint, why);
        free (buf);
        return -1;
    }
    *out = buf;
    return 0;
}

/* On a restart (or --resume) every rank takes the main rank's checkpoint:
 * parameters and position.  Returns 0 or a DDP_E* code. */
static int resume (const struct options *o, int restart, struct model *m,
                   struct position *pos)
{
    struct load_ctx c = { o, o->resume };
    void *buf = NULL;
    size_t len = 0;
    int rc;

    if (restart == 0 && !o->resume)
        return 0;
    if ((rc = ddp_compute_and_bcast (load_checkpoint, &c, 0, &buf, &len)) < 0)
        return rc;
    if (len > 0) {
        ck_decode (buf, m, pos);
        ddp_log_main ("restart %d: resuming epoch %ld after step %ld from %s",
                      restart, pos->epoch + 1, pos->step, o->checkpoint);
    }
    free (buf);
    return 0;
}

/* ---- training --------------------------------------------------------- */

static void pause_ms (long ms)
{
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

    if (ms > 0)
        nanosleep (&ts, NULL);  /* a stop signal may cut it short: fine */
}

/* Say why this rank stops: every rank logs the same place.  A rank that
 * received the signal also says at which step's vote it knew of it: the
 * stop is agreed at that very vote (tests/t0710 checks it). */
static void log_stop (const struct position *pos, long steps, long run_step,
                      long seen)
{
    int sig = ddp_stop_requested ();

    if (sig)
        ddp_log ("stopping in epoch %ld after step %ld of %ld (run step "
                 "%ld): signal %d (%s) received on this rank before the "
                 "vote of run step %ld", pos->epoch + 1, pos->step, steps,
                 run_step, sig, strsignal (sig), seen);
    else
        ddp_log ("stopping in epoch %ld after step %ld of %ld (run step "
                 "%ld): a stop signal reached another rank", pos->epoch + 1,
                 pos->step, steps, run_step);
}

/* Train from *pos to the last epoch, or until a stop is agreed.  Returns
 * 0 when done, 1 when stopped (checkpoint written), or a DDP_E* code. */
static int train (const struct options *o, const struct dataset *d,
                  struct model *m, struct position *pos)
{
    long per_rank = o->global_batch / ddp_world_size ();
    struct save_ctx save = { o, m, pos };
    ddp_sampler_t s;
    uint64_t *idx = NULL;
    float *grad = NULL;
    bool stop = false;
    long steps, run_step, seen = 0;
    int rc;

    if ((rc = ddp_sampler_init (&s, (uint64_t) d->items, ddp_world_size (),
                                ddp_rank (), true, o->seed, false)) < 0)
        return rc;
    steps = steps_per_epoch (o);
    run_step = pos->epoch * steps + pos->step;  /* steps done in the run */
    idx = malloc ((size_t) per_rank * sizeof (*idx));
    grad = malloc ((size_t) (m->features + 1) * sizeof (float));
    if (!idx || !grad) {
        rc = DDP_ENOMEM;
        goto out;
    }
    while (pos->epoch < o->epochs && !stop) {
        ddp_sampler_set_epoch (&s, (uint64_t) pos->epoch);
        for (; pos->step < steps && !stop; pos->step++) {
            double stats[2];

            if ((rc = ddp_sampler_indices_from (&s, (uint64_t) (pos->step
                                                * per_rank), idx,
                                                (size_t) per_rank)) < 0)
                goto out;
            forward_backward (m, d, idx, per_rank, grad, &stats[0],
                              &stats[1]);
            /* One all-reduce averages the whole gradient. */
            if ((rc = ddp_allreduce (grad, grad, (size_t) m->features + 1,
                                     DDP_FLOAT32, DDP_AVG)) < 0)
                goto out;
            for (long j = 0; j <= m->features; j++)
                m->w[j] -= (float) o->lr * grad[j];
            /* The step's loss and accuracy, averaged; the stop vote rides
             * along.  seen: the first vote this rank knew of its signal. */
            if (!seen && ddp_stop_requested ())
                seen = run_step + 1;
            if ((rc = ddp_average_stop (stats, 2, &stop)) < 0)
                goto out;
            run_step++;
            if (stop && !seen && ddp_stop_requested ())
                seen = run_step;    /* it came during this vote */
            pos->sum_loss += stats[0];
            pos->sum_acc += stats[1];
            if (!stop)
                pause_ms (o->throttle_ms);
        }
        if (pos->step == steps) {
            ddp_log_main ("epoch %ld loss %.9g accuracy %.4f", pos->epoch + 1,
                          pos->sum_loss / steps, pos->sum_acc / steps);
            *pos = (struct position) { .epoch = pos->epoch + 1 };
        }
        if (stop && pos->epoch < o->epochs)
            log_stop (pos, steps, run_step, seen);
        if ((rc = ddp_main_only (save_checkpoint, &save)) < 0) {
            ddp_log ("%s", ddp_is_main () ? "writing the checkpoint failed"
                     : "the main rank could not write the checkpoint");
            goto out;
        }
    }
    rc = stop && pos->epoch < o->epochs ? 1 : 0;
out:
    free (idx);
    free (grad);
    return rc;
}

int main (int argc, char **argv)
{
    struct options o;
    struct dataset d = { 0 };
    struct model m = { 0 };
    struct position pos = { 0 };
    struct prepare_ctx prep = { &o, &d };
    int rc, restart, identical = 0, status = 1;

    if (parse_args (argc, argv, &o) < 0)
        return 2;
    /* Before ddp_init: a signal during start-up is kept, not fatal. */
    if (ddp_stop_signals (NULL) < 0 || (restart = ddp_restart_count ()) < 0)
        return 1;
    if ((rc = ddp_init ()) < 0) {
        fprintf (stderr, "train: ddp_init: %s\n", ddp_strerror (rc));
        return 1;
    }
    if (o.global_batch % ddp_world_size () != 0) {
        ddp_log ("--global-batch %ld is not a multiple of the %d ranks",
                 o.global_batch, ddp_world_size ());
        goto out;
    }
    if (o.global_batch > o.items) {
        ddp_log ("--global-batch %ld is larger than the data set (--items "
                 "%ld)", o.global_batch, o.items);
        goto out;
    }
    ddp_log_main ("training on %d ranks, %d nodes, backend %s: %ld items, "
                  "%ld features, global batch %ld",
                  ddp_world_size (), ddp_num_nodes (), ddp_backend_name (),
                  o.items, o.features, o.global_batch);
    if ((rc = ddp_rank0_first (prepare_data, &prep)) < 0) {
        ddp_log ("preparing the data failed: %s", ddp_strerror (rc));
        goto out;
    }
    m.features = o.features;
    if (!(m.w = calloc ((size_t) o.features + 1, sizeof (float))))
        goto out;
    if ((rc = resume (&o, restart, &m, &pos)) < 0) {
        ddp_log ("resuming failed: %s", ddp_strerror (rc));
        goto out;
    }
    if ((rc = train (&o, &d, &m, &pos)) < 0) {
        ddp_log ("training failed: %s", ddp_strerror (rc));
        goto out;
    }
    if (rc == 1) {
        ddp_log_main ("checkpoint of epoch %ld step %ld written to %s; exit "
                      "%d: run again to resume", pos.epoch + 1, pos.step,
                      o.checkpoint, EXIT_STOPPED);
        status = EXIT_STOPPED;
        goto out;
    }
    if ((rc = check_identical (&m, &identical)) < 0) {
        ddp_log ("comparing parameters failed: %s", ddp_strerror (rc));
        goto out;
    }
    ddp_log ("parameters hash %016" PRIx64, params_hash (&m));
    ddp_log_main ("parameters identical on all %d ranks: %s",
                  ddp_world_size (), identical ? "yes" : "NO");
    ddp_log_main ("checkpoint written to %s by the main rank", o.checkpoint);
    status = identical ? 0 : 1;
out:
    free (m.w);
    dataset_free (&d);
    ddp_finalize ();
    return status;
}
