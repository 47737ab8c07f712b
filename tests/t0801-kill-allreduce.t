#!/bin/sh
test_description='kill -9 of one rank during a large all-reduce ends the step in time, names the rank, leaves nothing'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# Victims rotate over a node leader and a non-leader on each node
# (-N2 -n4, block: ranks 0,1 on n1 and 2,3 on n2).
n=$(rel_repeats 2)
for i in $(seq 1 "$n"); do
	v=$(echo "1 3 0 2" | cut -d' ' -f$(( (i - 1) % 4 + 1 )))
	test_expect_success "large allreduce, kill -9 rank $v (run $i of $n)" '
		rel_kill_run allreduce.$i allreduce $v ddp_allreduce 0.1 -N2 -n4
	'
done
test_done
