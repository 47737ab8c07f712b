#!/bin/sh
test_description='kill -9 of one rank during a barrier loop ends the step in time, names the rank, leaves nothing'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

test_expect_success 'the leftover check sees what a step leaves in a node /tmp' '
	rel_snapshot_sees n2
'

# Victims rotate over a node leader and a non-leader on each node
# (-N2 -n4, block: ranks 0,1 on n1 and 2,3 on n2).
rel_kill_tests 4 barrier 0.3 ddp_barrier "barrier loop" 1 3 0 2
test_done
