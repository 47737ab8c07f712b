/* sp_layout.h - the step's tasks per node, as every node sees them.
 *
 * srun puts the step's layout in SLURM_STEP_TASKS_PER_NODE: one count per
 * node of the step, in node order, consecutive equal counts written once
 * with a repeat ("2(x3),1" is 2,2,2,1).  The plugin reads it on every node
 * to know the busiest node of the step; it comes from the job environment,
 * so it is parsed strictly and checked against Slurm's own counts.
 */
#ifndef SP_LAYOUT_H
#define SP_LAYOUT_H

/* Most nodes, and most tasks on one node, accepted. */
#define SP_LAYOUT_MAXNODES 1000000UL
#define SP_LAYOUT_MAXTASKS 65535UL

struct sp_layout {
    unsigned long nodes;    /* nodes of the step */
    unsigned long tasks;    /* tasks of the step */
    unsigned long max;      /* tasks on the busiest node */
};

/* Parse S ("N" or "N(xM)" items, comma-separated; 1 <= N <= 65535, 1 <= M,
 * at most SP_LAYOUT_MAXNODES nodes in all) into *L.  Returns 0, or -1 with
 * errno EINVAL (NULL, empty, malformed) or ERANGE (a count out of range),
 * and *L alone. */
int sp_layout_parse (const char *s, struct sp_layout *l);

#endif /* SP_LAYOUT_H */
