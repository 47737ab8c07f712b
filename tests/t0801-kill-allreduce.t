#!/bin/sh
test_description='kill -9 of one rank during a large all-reduce ends the step in time, names the rank, leaves nothing'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# Victims rotate over a node leader and a non-leader on each node
# (-N2 -n4, block: ranks 0,1 on n1 and 2,3 on n2).
rel_kill_tests 2 allreduce 0.1 ddp_allreduce "large allreduce" 1 3 0 2
test_done
