/* ranks.h - the host backend's tests on several ranks (collectives.c,
 * reduce_scatter.c): ranks started on this machine by the local launcher
 * (bootstrap/localjob.h), in simulated nodes, drive the backend through
 * its interface (backend.h).  ranks.c. */
#ifndef DDP_HOST_TEST_RANKS_H
#define DDP_HOST_TEST_RANKS_H

#include <stdbool.h>
#include <stddef.h>

#include "backend.h"
#include "bootstrap.h"
#include "localjob.h"

#define SIZE 4      /* ranks of every run */
#define NODES 2     /* simulated nodes of run() */

/* The backend under test (ddpi_backend_host). */
extern const struct ddp_backend *be;

/* What the last run's launcher said when it failed. */
extern char err[512];

/* A rank's set-up without the first barrier (bootstrap, the backend's
 * create), and with it as ddp_init() does; the context or NULL. */
void *create (struct bootstrap **bp, struct ddp_config *cfg, double timeout);
void *setup (struct bootstrap **bp, struct ddp_config *cfg, double timeout);

/* A final barrier (checked) when barrier, then destroy. */
void teardown (void *ctx, struct bootstrap *b, bool barrier);

/* Run fn on SIZE ranks on nodes simulated nodes (run: NODES), rank r on
 * node_of[r] (NULL: in blocks); each rank's exit status in st.  Returns
 * 0 or -1 with err. */
int run_on (int nodes, ddpi_ljob_fn fn, void *arg, int *st);
int run (ddpi_ljob_fn fn, void *arg, int *st);
int run_layout (int nodes, const int *node_of, ddpi_ljob_fn fn, void *arg,
                int *st);

/* One reduce-scatter of count elements a rank under dt and op, out of
 * place and in place, checked bitwise against the all-reduce's block;
 * counts it in *calls. */
void rs_one (void *ctx, int me, size_t count, ddp_dtype_t dt, ddp_op_t op,
             int *calls);

#endif
