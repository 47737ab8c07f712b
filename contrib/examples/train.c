/* train.c - data-parallel training with libddp, the project's main example.
 *
 * Trains logistic regression on a synthetic, linearly separable data set:
 *
 *   - rank 0 prepares the data set file first (ddp_rank0_first); the other
 *     ranks then load the same file;
 *   - every rank takes its shard of each epoch with the distributed sampler;
 *   - gradients are averaged with one all-reduce per step, so every rank
 *     applies the same update and the parameters stay bit-identical;
 *   - loss and accuracy are averaged across ranks in one collective and
 *     logged by the main rank, which alone writes the checkpoint;
 *   - at the end every rank's parameters are compared bit for bit.
 *
 * The global batch is fixed (--global-batch); each rank processes
 * global-batch / world-size items per step.  Because the sampler gives rank r
 * positions r, r+W, r+2W, ... of the epoch's permutation, the W ranks of one
 * step together see exactly the items a single process sees with the same
 * global batch: the loss curve matches a single-process run up to float
 * rounding (tests/t0700-example.t checks this).
 *
 * Runs as a single process without srun, under `srun --ddp=host` on CPUs, and
 * under `srun --ddp=nccl` on GPUs (host buffers are staged by the library).
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ddp.h>

struct options {
    long items;        /* data set size */
    long features;     /* input dimension */
    long global_batch; /* items per step over all ranks */
    long epochs;
    double lr;
    unsigned long seed;
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
             "Defaults: --items 4096 --features 16 --global-batch 64 "
             "--epochs 5 --lr 0.5\n"
             "          --seed 1 --data train-data.bin "
             "--checkpoint train-checkpoint.bin\n"
             "B must be a multiple of the number of ranks.\n");
}

static int parse_args (int argc, char **argv, struct options *o)
{
    static const long big = 1L << 30;

    *o = (struct options) {
        .items = 4096, .features = 16, .global_batch = 64, .epochs = 5,
        .lr = 0.5, .seed = 1, .data_path = "train-data.bin",
        .checkpoint = "train-checkpoint.bin",
    };
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        long n;
        int bad = 0;

        if (!strcmp (a, "-h") || !strcmp (a, "--help")) {
            usage (stdout);
            exit (0);
        }
        if (!v) {
            fprintf (stderr, "train: %s needs a value\n", a);
            return -1;
        }
        if (!strcmp (a, "--items"))
            bad = parse_long (v, 1, big, &o->items);
        else if (!strcmp (a, "--features"))
            bad = parse_long (v, 1, 4096, &o->features);
        else if (!strcmp (a, "--global-batch"))
            bad = parse_long (v, 1, big, &o->global_batch);
        else if (!strcmp (a, "--epochs"))
            bad = parse_long (v, 1, 100000, &o->epochs);
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
        else if (!strcmp (a, "--checkpoint"))
            o->checkpoint = v;
        else {
            fprintf (stderr, "train: unknown option %s\n", a);
            usage (stderr);
            return -1;
        }
        if (bad) {
            fprintf (stderr, "train: bad value for %s: '%s'\n", a, v);
            return -1;
        }
        i++;
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

static int write_all (FILE *f, const void *p, size_t n)
{
    return fwrite (p, 1, n, f) == n ? 0 : -1;
}

/* Write the data set atomically (temporary file, then rename). */
static int dataset_save (const struct dataset *d, const char *path)
{
    char tmp[4096];
    int64_t hdr[2] = { d->items, d->features };
    FILE *f;
    int rc = -1;

    if (snprintf (tmp, sizeof (tmp), "%s.tmp.%ld", path, (long) getpid ())
        >= (int) sizeof (tmp))
        return -1;
    if (!(f = fopen (tmp, "wb")))
        return -1;
    if (write_all (f, hdr, sizeof (hdr)) == 0
        && write_all (f, d->x, (size_t) d->items * d->features * sizeof (float)) == 0
        && write_all (f, d->y, (size_t) d->items * sizeof (float)) == 0)
        rc = 0;
    if (fclose (f) != 0)
        rc = -1;
    if (rc == 0 && rename (tmp, path) != 0)
        rc = -1;
    if (rc != 0)
        unlink (tmp);
    return rc;
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

struct checkpoint_ctx {
    const struct model *m;
    const char *path;
    long epoch;
};

/* Main-only: write the parameters (epoch, features, weights). */
static int write_checkpoint (void *arg)
{
    struct checkpoint_ctx *c = arg;
    FILE *f = fopen (c->path, "wb");
    int64_t hdr[2] = { c->epoch, c->m->features };
    int rc = 0;

    if (!f) {
        ddp_log ("cannot write checkpoint %s: %s", c->path, strerror (errno));
        return -1;
    }
    if (write_all (f, hdr, sizeof (hdr)) < 0
        || write_all (f, c->m->w, (size_t) (c->m->features + 1) * sizeof (float)) < 0)
        rc = -1;
    if (fclose (f) != 0)
        rc = -1;
    return rc;
}

/* FNV-1a over the parameter bytes: equal hashes on every rank (checked with
 * MIN and MAX) mean bit-identical parameters. */
static uint64_t params_hash (const struct model *m)
{
    const unsigned char *p = (const unsigned char *) m->w;
    uint64_t h = 1469598103934665603ULL;

    for (size_t i = 0; i < (size_t) (m->features + 1) * sizeof (float); i++)
        h = (h ^ p[i]) * 1099511628211ULL;
    return h;
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

/* ---- training --------------------------------------------------------- */

static int train (const struct options *o, const struct dataset *d,
                  struct model *m)
{
    int world = ddp_world_size ();
    long per_rank = o->global_batch / world;
    ddp_sampler_t s;
    uint64_t *idx = NULL;
    float *grad = NULL;
    int rc;

    if ((rc = ddp_sampler_init (&s, (uint64_t) d->items, world, ddp_rank (),
                                true, o->seed, false)) < 0)
        return rc;
    idx = malloc (s.num_samples * sizeof (*idx));
    grad = malloc ((size_t) (m->features + 1) * sizeof (float));
    if (!idx || !grad) {
        rc = DDP_ENOMEM;
        goto out;
    }
    for (long epoch = 0; epoch < o->epochs; epoch++) {
        double sum_loss = 0, sum_acc = 0;
        long steps = (long) s.num_samples / per_rank;
        struct checkpoint_ctx ck = { m, o->checkpoint, epoch + 1 };
        ddp_named_value_t stats[2];

        ddp_sampler_set_epoch (&s, (uint64_t) epoch);
        if ((rc = ddp_sampler_indices (&s, idx, s.num_samples)) < 0)
            goto out;
        for (long step = 0; step < steps; step++) {
            double loss, acc;

            forward_backward (m, d, idx + step * per_rank, per_rank, grad,
                              &loss, &acc);
            /* One all-reduce averages the whole gradient. */
            if ((rc = ddp_allreduce (grad, grad, (size_t) m->features + 1,
                                     DDP_FLOAT32, DDP_AVG)) < 0)
                goto out;
            for (long j = 0; j <= m->features; j++)
                m->w[j] -= (float) o->lr * grad[j];
            sum_loss += loss;
            sum_acc += acc;
        }
        stats[0] = (ddp_named_value_t) { "loss", sum_loss / steps };
        stats[1] = (ddp_named_value_t) { "accuracy", sum_acc / steps };
        if ((rc = ddp_average_named (stats, 2)) < 0)
            goto out;
        ddp_log_main ("epoch %ld loss %.9g accuracy %.4f", epoch + 1,
                      stats[0].value, stats[1].value);
        if ((rc = ddp_main_only (write_checkpoint, &ck)) < 0)
            goto out;
    }
    rc = 0;
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
    struct prepare_ctx prep = { &o, &d };
    int rc, identical = 0, status = 1;

    if (parse_args (argc, argv, &o) < 0)
        return 2;
    if ((rc = ddp_init ()) < 0) {
        fprintf (stderr, "train: ddp_init: %s\n", ddp_strerror (rc));
        return 1;
    }
    if (o.global_batch % ddp_world_size () != 0) {
        ddp_log ("--global-batch %ld is not a multiple of the %d ranks",
                 o.global_batch, ddp_world_size ());
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
    if ((rc = train (&o, &d, &m)) < 0) {
        ddp_log ("training failed: %s", ddp_strerror (rc));
        goto out;
    }
    if ((rc = check_identical (&m, &identical)) < 0) {
        ddp_log ("comparing parameters failed: %s", ddp_strerror (rc));
        goto out;
    }
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
