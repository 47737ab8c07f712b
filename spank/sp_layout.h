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

/* The OMP_NUM_THREADS of a task: CPUS_PER_TASK (SLURM_CPUS_PER_TASK; 0
 * when unknown), else CPUS_ON_NODE (SLURM_CPUS_ON_NODE; 0 when unknown)
 * shared by the node's LOCAL_TASKS, at least 1; never more than BOUND, the
 * CPUs the task's affinity lets it run on when it starts (0 when unknown):
 * task/affinity or the user's --cpu-bind may give a task fewer CPUs than
 * its count says, and a thread per counted CPU would then share them.
 * Returns 0 when neither count is known (nothing to set). */
unsigned long sp_layout_omp (unsigned long cpus_per_task,
                             unsigned long cpus_on_node,
                             unsigned long local_tasks, unsigned long bound);

#endif /* SP_LAYOUT_H */
