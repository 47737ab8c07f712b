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
n=$(rel_repeats 4)
for i in $(seq 1 "$n"); do
	v=$(echo "1 3 0 2" | cut -d' ' -f$(( (i - 1) % 4 + 1 )))
	test_expect_success "barrier loop, kill -9 rank $v (run $i of $n)" '
		rel_kill_run barrier.$i barrier $v ddp_barrier 0.3 -N2 -n4
	'
done
test_done
