/* fuzz-sources: spank/sp_layout.c spank/sp_plan.c spank/sp_port.c spank/sp_strint.c */
/* fuzz_stepenv.c - the parsers of what srun and Slurm put in a step's
 * environment for the plugin: SLURM_STEP_TASKS_PER_NODE (sp_layout_parse),
 * SLURM_SPANK_DDP_PLAN (sp_plan_parse, sp_plan_format), SLURM_STEP_RESV_PORTS
 * (sp_port_resv_last), and the GPU options srun hands sp_plan_classify.
 *
 * Input: one byte choosing the parser, then the text.  Checked against
 * independent references: the layout's node and task counts and its
 * busiest node, the last reserved port, a plan read back exactly as it is
 * written; outputs are left alone on failure. */
#include "config.h"
#include <errno.h>
#include <stdbool.h>

#include "fuzz.h"
#include "sp_layout.h"
#include "sp_plan.h"
#include "sp_port.h"

/* Read a decimal number of 1..19 digits at *P into *V (the plugin's
 * numbers: sp_strint.h). */
static bool ref_num (const char **p, unsigned long *v)
{
    int n = 0;

    *v = 0;
    while (**p >= '0' && **p <= '9' && n < 19) {
        *v = *v * 10 + (unsigned long) (**p - '0');
        (*p)++;
        n++;
    }
    return n > 0 && !(**p >= '0' && **p <= '9');
}

/* Reference layout: 1 and *L when S is "N" / "N(xM)" items, comma-separated. */
static int ref_layout (const char *s, struct sp_layout *l)
{
    unsigned long n, m;

    memset (l, 0, sizeof (*l));
    for (;;) {
        if (!ref_num (&s, &n) || n < 1 || n > 65535)
            return 0;
        m = 1;
        if (s[0] == '(' && s[1] == 'x') {
            s += 2;
            if (!ref_num (&s, &m) || m < 1 || *s++ != ')')
                return 0;
        }
        else if (*s == '(')
            return 0;
        l->nodes += m;
        if (l->nodes > SP_LAYOUT_MAXNODES)
            return 0;
        l->tasks += n * m;
        if (n > l->max)
            l->max = n;
        if (*s == '\0')
            return 1;
        if (*s++ != ',')
            return 0;
    }
}

static void check_layout (const char *s)
{
    struct sp_layout got = { 7, 7, 7 }, ref;
    int ok = ref_layout (s, &ref);
    int rc = sp_layout_parse (s, &got);

    if (ok) {
        fuzz_assert (rc == 0);
        fuzz_assert (got.nodes == ref.nodes && got.tasks == ref.tasks
                     && got.max == ref.max);
    }
    else {
        fuzz_assert (rc == -1 && (errno == EINVAL || errno == ERANGE));
        fuzz_assert (got.nodes == 7 && got.tasks == 7 && got.max == 7);
    }
}

/* Reference: the last port of "N" / "N-M" items, or -1. */
static int ref_resv (const char *s)
{
    unsigned long a, b;

    for (;;) {
        if (!ref_num (&s, &a) || a < 1 || a > 65535)
            return -1;
        b = a;
        if (*s == '-') {
            s++;
            if (!ref_num (&s, &b) || b < a || b > 65535)
                return -1;
        }
        if (*s == '\0')
            return (int) b;
        if (*s++ != ',')
            return -1;
    }
}

static void check_plan (const char *s)
{
    struct sp_plan p = { .gpus = SP_GPUREQ_OTHER, .per_node = 4242 };
    char buf[SP_PLAN_MAXLEN + 1];

    if (sp_plan_parse (s, &p) == 0) {
        fuzz_assert (sp_plan_format (&p, buf, sizeof (buf)) == 0);
        fuzz_assert (strcmp (buf, s) == 0);
        fuzz_assert ((p.gpus == SP_GPUREQ_PER_NODE) == (p.per_node > 0));
    }
    else
        fuzz_assert (p.gpus == SP_GPUREQ_OTHER && p.per_node == 4242);
}

static void check_classify (const char *s, unsigned which)
{
    struct sp_gpu_opts o = { 0 };
    struct sp_plan p = { .kill_set = false };
    char buf[SP_PLAN_MAXLEN + 1];

    if (which & 1)
        o.gres = s;
    if (which & 2)
        o.gpus_per_node = s;
    if (which & 4)
        o.gpus_per_task = s;
    sp_plan_classify (&o, &p);
    fuzz_assert ((unsigned) p.gpus <= SP_GPUREQ_OTHER);
    fuzz_assert ((p.gpus == SP_GPUREQ_PER_NODE) == (p.per_node > 0));
    fuzz_assert (p.per_node <= 65535);
    fuzz_assert (sp_plan_format (&p, buf, sizeof (buf)) == 0);
    if (which == 1 && strncmp (s, "gpu", 3) != 0 && strcmp (s, "none") != 0)
        fuzz_assert (p.gpus == SP_GPUREQ_OTHER);
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
    char *s;

    if (size < 1)
        return 0;
    s = fuzz_cstr (data + 1, size - 1);
    switch (data[0] % 4) {
    case 0:
        check_layout (s);
        break;
    case 1:
        errno = 0;
        fuzz_assert (sp_port_resv_last (s) == ref_resv (s));
        break;
    case 2:
        check_plan (s);
        break;
    default:
        check_classify (s, (data[0] >> 2) & 7);
        break;
    }
    free (s);
    return 0;
}
