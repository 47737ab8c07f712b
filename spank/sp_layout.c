/* sp_layout.c - the step's tasks per node. */
#include "config.h"
#include <errno.h>
#include <string.h>

#include "sp_layout.h"
#include "sp_strint.h"

/* Parse one item "N" or "N(xM)" at *P into *N and *M; advance *P. */
static int parse_item (const char **p, unsigned long long *n,
                       unsigned long long *m)
{
    *m = 1;
    if (sp_parse_uint_at (p, 1, SP_LAYOUT_MAXTASKS, n) < 0)
        return -1;
    if (**p != '(')
        return 0;
    if ((*p)[1] != 'x') {
        errno = EINVAL;
        return -1;
    }
    *p += 2;
    if (sp_parse_uint_at (p, 1, SP_LAYOUT_MAXNODES, m) < 0)
        return -1;
    if (**p != ')') {
        errno = EINVAL;
        return -1;
    }
    (*p)++;
    return 0;
}

int sp_layout_parse (const char *s, struct sp_layout *l)
{
    struct sp_layout r = { 0, 0, 0 };
    unsigned long long n, m;

    if (!s || !l || !*s) {
        errno = EINVAL;
        return -1;
    }
    for (;;) {
        if (parse_item (&s, &n, &m) < 0)
            return -1;
        if (m > SP_LAYOUT_MAXNODES - r.nodes) {
            errno = ERANGE;
            return -1;
        }
        r.nodes += (unsigned long) m;
        r.tasks += (unsigned long) (n * m);
        if (n > r.max)
            r.max = (unsigned long) n;
        if (*s == '\0')
            break;
        if (*s++ != ',') {
            errno = EINVAL;
            return -1;
        }
    }
    *l = r;
    return 0;
}

unsigned long sp_layout_omp (unsigned long cpus_per_task,
                             unsigned long cpus_on_node,
                             unsigned long local_tasks, unsigned long bound)
{
    unsigned long n = cpus_per_task;

    if (n == 0 && cpus_on_node == 0)
        return 0;
    if (n == 0)
        n = local_tasks > 0 ? cpus_on_node / local_tasks : cpus_on_node;
    if (n == 0)
        n = 1;
    if (bound > 0 && n > bound)
        n = bound;
    return n;
}
