#!/bin/sh
test_description='rank 0 failing inside run-on-main or rank-0-first becomes an error on every rank'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# rank 0 gets DDP_EUSER (-10), every other rank DDP_EREMOTE (-9), at once
# (no timeout involved), and the step ends non-zero.
for mode in fail-main fail-first; do
	case $mode in
	fail-main) call=ddp_run_on_main ;;
	fail-first) call=ddp_rank0_first ;;
	esac
	test_expect_success "$call: the function fails on rank 0" '
		rel_start $mode $mode none -N2 -n4 &&
		rel_wait &&
		rel_show &&
		rel_check_bound &&
		awk -v e="$REL_ELAPSED" "BEGIN { exit !(e < $REL_TIMEOUT) }" &&
		grep -q "^ddp_victim: rank 0: $call failed: .*(-10)\$" "$REL_DIR.out" &&
		for r in 1 2 3; do
			grep -q "^ddp_victim: rank $r: $call failed: .*(-9)\$" "$REL_DIR.out" || return 1
		done &&
		! grep -q "NOT NOTICED" "$REL_DIR.out" &&
		rel_check_clean
	'
done
test_done
