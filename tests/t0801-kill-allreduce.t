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
		rel_start allreduce.$i allreduce $v -N2 -n4 &&
		rel_kill $v 0.1 &&
		rel_wait &&
		rel_show &&
		rel_check_bound &&
		rel_check_survivors $v ddp_allreduce &&
		rel_check_clean
	'
done
test_done
