#!/bin/sh
test_description='kill -9 of one rank during a large all-reduce ends the step in time, names the rank, leaves nothing'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# Victims rotate over a node leader and a non-leader on each node
# (-N2 -n4, block: ranks 0,1 on n1 and 2,3 on n2).
rel_kill_tests 2 allreduce 0.1 ddp_allreduce "large allreduce" 1 3 0 2
# Rank 1 again, a few times: when rank 2 notices first, node 0's lane is
# often in the middle of a frame to rank 3 (alone on n2): the FAULT frame
# must reach rank 3 on the side before the link is cut, or rank 3 names
# rank 0 (half of these runs did before flood.c's side frames).
rel_kill_tests 4 allreduce 0.1 ddp_allreduce "large allreduce, lane cut mid-frame" 1
test_done
