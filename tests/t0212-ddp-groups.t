#!/bin/sh
test_description='libddp communicators, nonblocking calls and reduce-scatter
under srun: splits by colour and key, nested, groups of one, a node'"'"'s
ranks, every collective per group, requests in flight; a rank of one group
killed, stalled or disagreeing fails its group in time and names it, while
the other group goes on'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

DDP_SRUN_TIMEOUT=120
GROUPS_PROG=$DDP_PROGS/ddp_groups

# run_groups NAME NTASKS SRUN-ARGS...: ddp_groups check; every task
# reports 0 failed.
run_groups () {
	name=$1 n=$2; shift 2
	ddp_srun --mpi=pmix "$@" "$GROUPS_PROG" check >"$name.out" 2>"$name.err"
	rc=$?
	cat "$name.out" "$name.err"
	test $rc = 0 &&
	test "$(grep -c "^ddp_groups rank .*/$n: [0-9]* checks, 0 failed" "$name.out")" = "$n"
}

test_expect_success '-N1 -n1: every group is the process' '
	run_groups n1 1 -N1 -n1
'
test_expect_success '-N1 -n4: groups within one node' '
	run_groups n4 4 -N1 -n4
'
test_expect_success '-N2 -n4: groups across two nodes' '
	run_groups n2x4 4 -N2 -n4
'
test_expect_success '-N2 -n3: uneven nodes' '
	run_groups n2x3 3 -N2 -n3
'
test_expect_success '-N2 -n6: three ranks a node' '
	run_groups n2x6 6 -N2 -n6
'
test_expect_success 'DDP_CHECK=1: the vote runs per group' '
	run_groups vote 4 -N2 -n4 --export=ALL,DDP_CHECK=1
'

# -N2 -n4, block: ranks 0,1 on n1, 2,3 on n2; groups {0,2} and {1,3},
# each across both nodes.  World rank 3 misbehaves after 50 calls.  In
# the world's barrier the bound holds for the ranks that come last (group
# 0, after rank 1 timed out): rank 1 waits for them too.
# fault_run HOW: output in HOW.out / HOW.err.
fault_run () {
	ddp_srun --mpi=pmix -N2 -n4 --export=ALL,DDP_TIMEOUT=3 \
		"$GROUPS_PROG" "$1" 3 50 >"$1.out" 2>"$1.err"
	cat "$1.out" "$1.err"
}

# within_bound FILE: every "after S s" in FILE is at most DDP_TIMEOUT + 1.
within_bound () {
	sed -n "s/.* after \([0-9.]*\) s.*/\1/p" "$1" >times &&
	test -s times &&
	awk "\$1 > 4.0 { bad = 1 } END { exit bad }" times
}

test_expect_success 'a rank of one group killed: its group-mate fails in time naming it; the other group goes on' '
	fault_run kill;
	grep "^rank 1 group 1: call 50 failed" kill.out >mate &&
	grep -q "a peer died or aborted: in group [0-9]* (its ranks 0..1 are world ranks 1,3): rank 1 " mate &&
	within_bound mate &&
	test "$(grep -c "group 0: 200 calls of its own: all passed" kill.out)" = 2 &&
	test "$(grep -c "world barrier after .*: a peer died or aborted: .*rank 3 " kill.out)" = 3
'
test_expect_success 'a rank of one group stalled: its group-mate times out in DDP_TIMEOUT + 1 s; the other group goes on' '
	fault_run stall;
	grep "^rank 1 group 1: call 50 failed" stall.out >mate &&
	grep -q "did not arrive within DDP_TIMEOUT (3 s)" mate &&
	grep -q "(its ranks 0..1 are world ranks 1,3): rank 1 did not arrive" mate &&
	within_bound mate &&
	test "$(grep -c "group 0: 200 calls of its own: all passed" stall.out)" = 2 &&
	grep "world barrier" stall.out >world &&
	test "$(grep -c "rank 3 did not arrive within DDP_TIMEOUT" world)" = 3 &&
	grep "group 0: world barrier" world >last &&
	within_bound last
'
test_expect_success 'ranks of one group disagree: that group fails with a mismatch, the other goes on' '
	fault_run mismatch;
	test "$(grep -c "group 1: call 50 failed after .*: ranks disagree: in group" mismatch.out)" = 2 &&
	grep -q "ddp_allreduce of 2 int64" mismatch.out &&
	test "$(grep -c "group 0: 200 calls of its own: all passed" mismatch.out)" = 2
'
test_done
