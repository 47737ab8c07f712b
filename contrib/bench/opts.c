/* opts.c - the command line of ddp-bench and mpi-bench (see opts.h). */
#include "config.h"
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "opts.h"

static const char *op_names[BENCH_NOPS] = {
    "bcast", "allreduce", "allgather", "gather", "reduce_scatter",
    "group_allreduce", "overlap",
};

/* What an option's argument is, and so how it is stored. */
enum arg_kind {
    ARG_FLAG,   /* no argument: sets a bool */
    ARG_LONG,   /* an integer of at least min: a long */
    ARG_SIZE,   /* a size with an optional K, M or G suffix: a size_t */
    ARG_STR,    /* kept as given: a const char * */
    ARG_SIZES,  /* a list of sizes: sizes[] and nsizes */
    ARG_OPS,    /* a list of operations: ops[] and barrier */
    ARG_SHORT,  /* --short: applied before the others */
    ARG_HELP,
};

/* An option: its names, its kind, the field of struct bench_opts it sets
 * and (ARG_LONG) the smallest value accepted.  The options of RANGE_KEYS
 * make a range of sizes. */
struct optdef {
    const char *name;
    int key;
    enum arg_kind kind;
    size_t off;
    long min;
};

#define OFF(field) offsetof (struct bench_opts, field)
#define RANGE_KEYS "bef"

static const struct optdef defs[] = {
    { "minbytes", 'b', ARG_SIZE, OFF (minbytes), 0 },
    { "maxbytes", 'e', ARG_SIZE, OFF (maxbytes), 0 },
    { "stepfactor", 'f', ARG_LONG, OFF (stepfactor), 2 },
    { "sizes", 's', ARG_SIZES, OFF (sizes), 0 },
    { "iters", 'n', ARG_LONG, OFF (iters), 1 },
    { "min-iters", 'm', ARG_LONG, OFF (min_iters), 1 },
    { "warmup", 'w', ARG_LONG, OFF (warmup), 0 },
    { "budget", 'B', ARG_SIZE, OFF (budget), 0 },
    { "time", 'T', ARG_LONG, OFF (time_limit), 0 },
    { "check-every", 'c', ARG_LONG, OFF (check_every), 0 },
    { "ops", 'o', ARG_OPS, OFF (ops), 0 },
    { "mem", 'M', ARG_LONG, OFF (mem), 0 },
    { "settle", 'W', ARG_LONG, OFF (settle_ms), 0 },
    { "init-only", 'i', ARG_FLAG, OFF (init_only), 0 },
    { "short", 'S', ARG_SHORT, OFF (sizes), 0 },
    { "tsv", 't', ARG_STR, OFF (tsv), 0 },
    { "quiet", 'q', ARG_FLAG, OFF (quiet), 0 },
    { "inject-error", 'X', ARG_FLAG, OFF (inject), 0 },
    { "help", 'h', ARG_HELP, OFF (sizes), 0 },
};

#define NDEFS (sizeof (defs) / sizeof (defs[0]))

const char *bench_op_name (enum bench_op k)
{
    return k < BENCH_NOPS ? op_names[k] : "barrier";
}

static int parse_size (const char *s, size_t *out)
{
    char *end;
    unsigned long long v;

    errno = 0;
    v = strtoull (s, &end, 10);
    if (errno || end == s)
        return -1;
    switch (*end) {
        case 'k': case 'K': v <<= 10; end++; break;
        case 'm': case 'M': v <<= 20; end++; break;
        case 'g': case 'G': v <<= 30; end++; break;
        default: break;
    }
    if (*end == 'B' || *end == 'b')
        end++;
    if (*end != '\0')
        return -1;
    *out = (size_t)v;
    return 0;
}

static int parse_long (const char *s, long min, long *out)
{
    char *end;
    long v;

    errno = 0;
    v = strtol (s, &end, 10);
    if (errno || end == s || *end != '\0' || v < min)
        return -1;
    *out = v;
    return 0;
}

/* Call fn (o, item) for every comma-separated item of list; returns 0, or
 * -1 when fn fails for one or the list cannot be copied. */
static int for_each_item (struct bench_opts *o, const char *list,
                          int (*fn) (struct bench_opts *, const char *))
{
    char *copy = strdup (list), *tok, *save = NULL;
    int rc = copy ? 0 : -1;

    for (tok = copy ? strtok_r (copy, ",", &save) : NULL; tok && rc == 0;
         tok = strtok_r (NULL, ",", &save))
        rc = fn (o, tok);
    free (copy);
    return rc;
}

static int add_size (struct bench_opts *o, const char *item)
{
    if (o->nsizes == BENCH_MAX_SIZES
        || parse_size (item, &o->sizes[o->nsizes]) < 0)
        return -1;
    o->nsizes++;
    return 0;
}

static int add_op (struct bench_opts *o, const char *item)
{
    if (strcmp (item, "barrier") == 0) {
        o->barrier = true;
        return 0;
    }
    for (int i = 0; i < BENCH_NOPS; i++) {
        if (strcmp (item, op_names[i]) == 0) {
            o->ops[i] = true;
            return 0;
        }
    }
    return -1;
}

static int parse_size_list (struct bench_opts *o, const char *list)
{
    o->nsizes = 0;
    if (for_each_item (o, list, add_size) < 0)
        return -1;
    return o->nsizes > 0 ? 0 : -1;
}

static int parse_ops (struct bench_opts *o, const char *list)
{
    memset (o->ops, 0, sizeof (o->ops));
    o->barrier = false;
    return for_each_item (o, list, add_op);
}

static int make_sizes (struct bench_opts *o)
{
    size_t s;

    if (o->minbytes == 0 || o->maxbytes < o->minbytes || o->stepfactor < 2)
        return -1;
    o->nsizes = 0;
    for (s = o->minbytes; s <= o->maxbytes && o->nsizes < BENCH_MAX_SIZES;
         s *= (size_t)o->stepfactor)
        o->sizes[o->nsizes++] = s;
    return 0;
}

static void opts_default (struct bench_opts *o)
{
    memset (o, 0, sizeof (*o));
    o->minbytes = 8;
    o->maxbytes = 64u << 20;
    o->stepfactor = 2;
    make_sizes (o);
    o->iters = 1000;
    o->min_iters = 10;
    o->warmup = 100;
    o->budget = 256u << 20;
    o->check_every = 1;
    for (int i = 0; i < BENCH_NDEFAULT; i++)
        o->ops[i] = true;
    o->barrier = true;
    o->mem = 100000;
    o->settle_ms = 500;
}

static void opts_short (struct bench_opts *o)
{
    parse_size_list (o, "8,64K,1M");
    o->iters = 100;
    o->min_iters = 5;
    o->warmup = 10;
    o->budget = 16u << 20;
    o->mem = 10000;
    o->settle_ms = 100;
}

static void usage (const char *prog)
{
    fprintf (stderr,
"Usage: srun --mpi=pmix [-N NODES -n RANKS] %s [OPTIONS]\n"
"Times init, barrier, bcast, allreduce, allgather and gather, checking results.\n"
"  -b, --minbytes SIZE     smallest size (default 8)\n"
"  -e, --maxbytes SIZE     largest size (default 64M)\n"
"  -f, --stepfactor N      multiply the size by N each step (default 2)\n"
"  -s, --sizes LIST        explicit sizes, e.g. 8,64K,1M (overrides -b -e -f)\n"
"  -n, --iters N           most timed iterations per size (default 1000)\n"
"  -m, --min-iters N       fewest timed iterations per size (default 10)\n"
"  -w, --warmup N          most warm-up iterations per size (default 100)\n"
"  -B, --budget SIZE       bytes to move per size; sets iterations (default 256M)\n"
"  -T, --time SECONDS      at most about SECONDS of timed calls per size: fewer\n"
"                          iterations when calls are slow (default 0: no limit)\n"
"  -c, --check-every N     check every Nth call (default 1; 0 = no checks)\n"
"  -o, --ops LIST          of barrier,bcast,allreduce,allgather,gather (the\n"
"                          default: these five), reduce_scatter, group_allreduce\n"
"                          (on the ranks of one parity: rank %% 2) and overlap\n"
"                          (iallreduce + compute + wait against allreduce, then\n"
"                          compute)\n"
"  -M, --mem N             RSS check over N 8-byte allreduces (default 100000; 0 off)\n"
"  -W, --settle MS         every rank sleeps MS milliseconds after init, then a\n"
"                          barrier, before the first call (default 500, --short\n"
"                          100; 0 none): the launch's own work is over by then\n"
"  -i, --init-only         only time init\n"
"  -S, --short             few sizes and iterations (CI): -s 8,64K,1M -n 100\n"
"                          -m 5 -w 10 -B 16M -M 10000 -W 100\n"
"  -t, --tsv FILE          also write the table as TSV to FILE (rank 0)\n"
"  -q, --quiet             no human-readable table\n"
"  -X, --inject-error      corrupt one result element of every checked call\n"
"                          (shows that the checks catch it; exits 1)\n"
"Sizes take K, M, G suffixes (powers of 1024).\n", prog);
}

static const struct optdef *find_def (int key)
{
    for (size_t i = 0; i < NDEFS; i++)
        if (defs[i].key == key)
            return &defs[i];
    return NULL;
}

/* Store arg as option d says; returns 0, or -1 when arg is not valid. */
static int apply (struct bench_opts *o, const struct optdef *d,
                  const char *arg)
{
    char *field = (char *)o + d->off;
    long v;

    switch (d->kind) {
        case ARG_FLAG:
            *(bool *)(void *)field = true;
            return 0;
        case ARG_LONG:
            if (parse_long (arg, d->min, &v) < 0)
                return -1;
            *(long *)(void *)field = v;
            return 0;
        case ARG_SIZE:
            return parse_size (arg, (size_t *)(void *)field);
        case ARG_STR:
            *(const char **)(void *)field = arg;
            return 0;
        case ARG_SIZES:
            return parse_size_list (o, arg);
        case ARG_OPS:
            return parse_ops (o, arg);
        default:
            return 0;
    }
}

/* The getopt short and long options, from the table. */
static void make_getopt (char *shortopts, struct option *longopts)
{
    for (size_t i = 0; i < NDEFS; i++) {
        const struct optdef *d = &defs[i];
        bool has_arg = d->kind != ARG_FLAG && d->kind != ARG_SHORT
                       && d->kind != ARG_HELP;

        *shortopts++ = (char)d->key;
        if (has_arg)
            *shortopts++ = ':';
        longopts[i] = (struct option){ d->name,
                                       has_arg ? required_argument : no_argument,
                                       NULL, d->key };
    }
    *shortopts = '\0';
    longopts[NDEFS] = (struct option){ NULL, 0, NULL, 0 };
}

int bench_opts_parse (struct bench_opts *o, int argc, char **argv)
{
    char shortopts[2 * NDEFS + 1];
    struct option longopts[NDEFS + 1];
    bool range = false, listed = false;
    int c;

    opts_default (o);
    /* --short first, so explicit options given with it win. */
    for (int i = 1; i < argc; i++)
        if (strcmp (argv[i], "-S") == 0 || strcmp (argv[i], "--short") == 0)
            opts_short (o);
    make_getopt (shortopts, longopts);
    optind = 1;
    while ((c = getopt_long (argc, argv, shortopts, longopts, NULL)) != -1) {
        const struct optdef *d = find_def (c);

        if (!d || d->kind == ARG_HELP) {
            usage (argv[0]);
            return -1;
        }
        if (apply (o, d, optarg) < 0) {
            fprintf (stderr, "%s: bad value '%s' for -%c\n", argv[0], optarg, c);
            return -1;
        }
        range = range || strchr (RANGE_KEYS, c) != NULL;
        listed = listed || d->kind == ARG_SIZES;
    }
    if (optind < argc) {
        fprintf (stderr, "%s: unexpected argument '%s'\n", argv[0], argv[optind]);
        return -1;
    }
    /* -s names the sizes; -b -e -f without it make a range. */
    if (range && !listed && make_sizes (o) < 0) {
        fprintf (stderr, "%s: bad size range %zu..%zu x%ld\n", argv[0],
                 o->minbytes, o->maxbytes, o->stepfactor);
        return -1;
    }
    if (o->min_iters > o->iters)
        o->min_iters = o->iters;
    return 0;
}
