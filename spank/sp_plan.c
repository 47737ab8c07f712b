/* sp_plan.c - one backend for the whole step under --ddp=auto. */
#include "config.h"
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include "sp_plan.h"
#include "sp_strint.h"

#define COUNT_MAX 65535

static const char *class_names[] = {
    [SP_GPUREQ_INHERIT] = "inherit",
    [SP_GPUREQ_NONE] = "none",
    [SP_GPUREQ_PER_TASK] = "per-task",
    [SP_GPUREQ_PER_NODE] = "per-node",
    [SP_GPUREQ_OTHER] = "other",
};

#define NCLASSES (sizeof (class_names) / sizeof (class_names[0]))

static const char *reasons[] = {
    [SP_GPUREQ_INHERIT] = "the step uses the job's GPUs",
    [SP_GPUREQ_NONE] = "the step asks for no GPUs",
    [SP_GPUREQ_PER_TASK] = "the step asks for GPUs per task "
                           "(--gpus-per-task)",
    [SP_GPUREQ_PER_NODE] = "the step asks for the same GPU count on every "
                           "node (--gpus-per-node, --gres=gpu:N)",
    [SP_GPUREQ_OTHER] = "the step's GPU request (--gpus, --gpus-per-socket, "
                        "--ntasks-per-gpu) does not say how many GPUs each "
                        "node gets",
};

static bool is_type_char (char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')
        || (c >= '0' && c <= '9') || c == '_' || c == '.' || c == '-';
}

/* Parse "[TYPE:]N" (a GPU option's value) into *N.  Returns 0 or -1. */
static int parse_typed_count (const char *s, unsigned long long *n)
{
    const char *colon = strrchr (s, ':');
    const char *p;

    if (colon) {
        if (colon == s)
            return -1;
        for (p = s; p < colon; p++)
            if (!is_type_char (*p))
                return -1;
        s = colon + 1;
    }
    return sp_parse_uint (s, 0, COUNT_MAX, n);
}

/* Add the GPUs of one --gres entry E (LEN characters) to *SUM: "gpu",
 * "gpu:N", "gpu:TYPE" or "gpu:TYPE:N" (a last field of digits is the count,
 * as srun reads it).  Returns 0, or -1 when E cannot be read or names
 * another gres: the plugin cannot tell what that does to the GPUs. */
static int add_gres_entry (const char *e, size_t len, unsigned long long *sum)
{
    char buf[128], *f[3], *p, *save = NULL;
    unsigned long long n = 1;
    int nf = 0;

    if (len == 0 || len >= sizeof (buf))
        return -1;
    memcpy (buf, e, len);
    buf[len] = '\0';
    if (buf[0] == ':' || buf[len - 1] == ':' || strstr (buf, "::"))
        return -1;
    for (p = buf; *p; p++)
        if (!is_type_char (*p) && *p != ':')
            return -1;
    for (p = strtok_r (buf, ":", &save); p; p = strtok_r (NULL, ":", &save)) {
        if (nf == 3)
            return -1;
        f[nf++] = p;
    }
    if (nf == 0 || strcmp (f[0], "gpu") != 0)
        return -1;
    p = f[nf - 1];
    if (nf >= 2 && *p >= '0' && *p <= '9') {
        if (sp_parse_uint (p, 0, COUNT_MAX, &n) < 0)
            return -1;          /* a count with a suffix, or too large */
    }
    else if (nf == 3)
        return -1;
    *sum += n;
    return 0;
}

/* The GPUs per node a --gres value gives: sets *N (0 for "none").
 * Returns 0, or -1 when it cannot be read. */
static int parse_gres (const char *s, unsigned long long *n)
{
    const char *p = s, *comma;

    *n = 0;
    if (strcmp (s, "none") == 0)
        return 0;
    for (;;) {
        comma = strchr (p, ',');
        if (add_gres_entry (p, comma ? (size_t) (comma - p) : strlen (p), n)
            < 0)
            return -1;
        if (!comma)
            break;
        p = comma + 1;
    }
    return *n > COUNT_MAX ? -1 : 0;
}

/* The per-node class from --gpus-per-node and --gres. */
static void classify_per_node (const struct sp_gpu_opts *o, struct sp_plan *p)
{
    unsigned long long n;

    p->gpus = SP_GPUREQ_OTHER;
    if (o->gpus_per_node && o->gres)
        return;         /* srun asks for both: the plugin cannot add up */
    if (o->gpus_per_node && parse_typed_count (o->gpus_per_node, &n) < 0)
        return;
    if (o->gres && parse_gres (o->gres, &n) < 0)
        return;
    p->gpus = n > 0 ? SP_GPUREQ_PER_NODE : SP_GPUREQ_NONE;
    p->per_node = (unsigned) n;
}

void sp_plan_classify (const struct sp_gpu_opts *o, struct sp_plan *p)
{
    unsigned long long n;

    if (!p)
        return;
    p->gpus = SP_GPUREQ_INHERIT;
    p->per_node = 0;
    if (!o)
        return;
    if (o->unsure) {
        p->gpus = SP_GPUREQ_OTHER;
        return;
    }
    if (o->gpus_per_task) {
        if (parse_typed_count (o->gpus_per_task, &n) < 0) {
            p->gpus = SP_GPUREQ_OTHER;
            return;
        }
        if (n > 0) {
            p->gpus = SP_GPUREQ_PER_TASK;
            return;
        }
    }
    if (o->gpus || o->gpus_per_socket || o->ntasks_per_gpu)
        p->gpus = SP_GPUREQ_OTHER;
    else if (o->gpus_per_node || o->gres)
        classify_per_node (o, p);
}

int sp_plan_format (const struct sp_plan *p, char *buf, size_t len)
{
    int n;

    if (!p || !buf || (unsigned) p->gpus >= NCLASSES
        || (p->gpus == SP_GPUREQ_PER_NODE
            && (p->per_node < 1 || p->per_node > COUNT_MAX))) {
        errno = EINVAL;
        return -1;
    }
    if (p->gpus == SP_GPUREQ_PER_NODE)
        n = snprintf (buf, len, "%s:%u%s", class_names[p->gpus], p->per_node,
                      p->kill_set ? ",kill" : "");
    else
        n = snprintf (buf, len, "%s%s", class_names[p->gpus],
                      p->kill_set ? ",kill" : "");
    if (n < 0 || (size_t) n >= len) {
        errno = ENOSPC;
        return -1;
    }
    return 0;
}

/* Parse the class word W (LEN characters) into *P. */
static int parse_class (const char *w, size_t len, struct sp_plan *p)
{
    const char *colon = memchr (w, ':', len);
    size_t nlen = colon ? (size_t) (colon - w) : len;
    unsigned long long n;
    size_t i;

    for (i = 0; i < NCLASSES; i++) {
        if (strlen (class_names[i]) == nlen
            && strncmp (class_names[i], w, nlen) == 0)
            break;
    }
    if (i == NCLASSES || (i == SP_GPUREQ_PER_NODE) != (colon != NULL))
        return -1;
    p->gpus = (enum sp_gpureq) i;
    p->per_node = 0;
    if (colon) {
        if (colon[1] == '0'     /* written without leading zeros */
            || sp_parse_uint_n (colon + 1, len - nlen - 1, 1, COUNT_MAX, &n)
               < 0)
            return -1;
        p->per_node = (unsigned) n;
    }
    return 0;
}

int sp_plan_parse (const char *s, struct sp_plan *p)
{
    struct sp_plan r = { .kill_set = false };
    const char *comma;
    size_t len;

    if (!s || !p || (len = strnlen (s, SP_PLAN_MAXLEN + 1)) > SP_PLAN_MAXLEN)
        goto inval;
    comma = strchr (s, ',');
    if (parse_class (s, comma ? (size_t) (comma - s) : len, &r) < 0)
        goto inval;
    if (comma) {
        if (strcmp (comma + 1, "kill") != 0)
            goto inval;
        r.kill_set = true;
    }
    *p = r;
    return 0;
inval:
    errno = EINVAL;
    return -1;
}

enum sp_auto_rule sp_plan_rule (const struct sp_plan *p, unsigned max_local)
{
    if (!p)
        return SP_AUTO_UNIFORM;
    switch (p->gpus) {
    case SP_GPUREQ_PER_TASK:
        return SP_AUTO_NCCL;
    case SP_GPUREQ_PER_NODE:
        return p->per_node >= max_local ? SP_AUTO_NCCL : SP_AUTO_HOST;
    case SP_GPUREQ_NONE:
        return SP_AUTO_HOST;
    case SP_GPUREQ_OTHER:
        return SP_AUTO_EACH;
    case SP_GPUREQ_INHERIT:
    default:
        return SP_AUTO_UNIFORM;
    }
}

const char *sp_plan_reason (const struct sp_plan *p)
{
    if (!p || (unsigned) p->gpus >= NCLASSES)
        return reasons[SP_GPUREQ_INHERIT];
    return reasons[p->gpus];
}
