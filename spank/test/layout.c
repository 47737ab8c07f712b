/* layout.c - the step's tasks per node and a task's OMP_NUM_THREADS
 * (spank/sp_layout.c). */
#include "config.h"
#include <errno.h>
#include "sp_layout.h"
#include "tap.h"

static void good (const char *s, unsigned long nodes, unsigned long tasks,
                  unsigned long max)
{
    struct sp_layout l = { 9, 9, 9 };

    ok (sp_layout_parse (s, &l) == 0 && l.nodes == nodes && l.tasks == tasks
        && l.max == max, "'%s': %lu nodes, %lu tasks, %lu at most", s, nodes,
        tasks, max);
}

static void bad (const char *s, int err)
{
    struct sp_layout l = { 9, 9, 9 };

    errno = 0;
    ok (sp_layout_parse (s, &l) == -1 && errno == err && l.nodes == 9,
        "'%s' is refused (%s)", s ? s : "(null)",
        err == EINVAL ? "EINVAL" : "ERANGE");
}

int main (void)
{
    good ("4", 1, 4, 4);
    good ("2,1", 2, 3, 2);
    good ("2(x3),1", 4, 7, 2);
    good ("1,4(x2)", 3, 9, 4);
    good ("65535", 1, 65535, 65535);
    good ("1(x1000000)", 1000000, 1000000, 1);
    bad (NULL, EINVAL);
    bad ("", EINVAL);
    bad ("0", ERANGE);
    bad ("65536", ERANGE);
    bad ("2,", EINVAL);
    bad (",2", EINVAL);
    bad ("2,,1", EINVAL);
    bad ("2(x0)", ERANGE);
    bad ("2(x3", EINVAL);
    bad ("2(3)", EINVAL);
    bad ("2(x)", EINVAL);
    bad ("2 ,1", EINVAL);
    bad ("-2", EINVAL);
    bad ("1(x1000000),1", ERANGE);
    bad ("1(x999999),1(x2)", ERANGE);
    ok (sp_layout_parse ("2", NULL) == -1, "a NULL layout fails");
    ok (sp_layout_omp (2, 32, 4, 0) == 2, "omp: SLURM_CPUS_PER_TASK first");
    ok (sp_layout_omp (0, 32, 4, 0) == 8, "omp: else the node's CPUs shared");
    ok (sp_layout_omp (0, 2, 4, 0) == 1, "omp: at least 1");
    ok (sp_layout_omp (0, 0, 4, 0) == 0 && sp_layout_omp (0, 0, 4, 3) == 0,
        "omp: nothing known, nothing set");
    ok (sp_layout_omp (2, 4, 2, 1) == 1,
        "omp: -c2 bound to one CPU (--cpu-bind=map_cpu:1): 1");
    ok (sp_layout_omp (0, 16, 2, 1) == 1,
        "omp: 16 CPUs, 2 tasks bound to one core each: 1, not 8");
    ok (sp_layout_omp (4, 16, 2, 8) == 4, "omp: a wider binding keeps the count");
    ok (sp_layout_omp (0, 7, 0, 0) == 7, "omp: no local task count: the node's");
    return done_testing ();
}
