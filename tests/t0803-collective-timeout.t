#!/bin/sh
test_description='a collective some ranks never enter fails after DDP_TIMEOUT naming them; ddp_abort names its rank'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# The absent ranks stay away until the others ended (at most 2 x
# DDP_TIMEOUT + 1 s), then exit 0 by themselves.  The others must give up
# after about DDP_TIMEOUT (not wait for them), with DDP_ETIMEDOUT (-7) and
# an error naming the absent ranks, while those are still alive; the step
# then ends with a non-zero status.  Each failed call took at most
# DDP_TIMEOUT + 1 s (ddp(3)'s bound).
REL_BOUND=20

# skip_run NAME ABSENT PRESENT MIN MAX [SRUN ARGS...]: the run (srun
# -N2 -n4 unless SRUN ARGS are given), checked except for naming.
skip_run () {
	local name=$1 absent=$2 present=$3 min=$4 max=$5
	shift 5
	[ $# -gt 0 ] || set -- -N2 -n4
	rel_start "$name" skip "$absent" "$@" &&
	rel_wait &&
	rel_show &&
	rel_check_bound &&
	rel_check_survivors "$absent" ddp_barrier nocheck &&
	test "$(grep -c "ddp_barrier failed: .*(-7)\$" "$REL_DIR.out")" = \
	     "$(echo "$present" | tr "," "\n" | wc -l)" &&
	rel_check_call_time "$present" "$min" "$max" &&
	rel_check_clean
}

test_expect_success 'rank 3 never enters a barrier: the others fail with ETIMEDOUT after DDP_TIMEOUT' '
	skip_run skip.1 3 0,1,2 4.5 6
'
test_expect_success 'rank 3 never enters: every error names rank 3' '
	REL_DIR=$PWD/skip.1 && rel_check_survivors 3 ddp_barrier
'
# -N2 -n4 puts ranks 0-2 on n1 and 3 on n2 here: both absent ranks are on
# n1, and rank 3 learns of them from n1's leader.
test_expect_success 'ranks 1 and 2 never enter: the others fail after DDP_TIMEOUT' '
	skip_run skip.2 1,2 0,3 4.5 6
'
test_expect_success 'ranks 1 and 2 never enter: every error names both' '
	REL_DIR=$PWD/skip.2 && rel_check_survivors 1,2 ddp_barrier
'
# Two per node (n1: 0 1, n2: 2 3), one absent rank on each: each leader
# knows only its own node's, and they swap lists before reporting.
test_expect_success 'ranks 1 and 3 (one per node) never enter: the others fail after DDP_TIMEOUT' '
	skip_run skip.4 1,3 0,2 4.5 6 -N2 -n4 --ntasks-per-node=2
'
test_expect_success 'ranks 1 and 3 (one per node) never enter: every error names both' '
	REL_DIR=$PWD/skip.4 && rel_check_survivors 1,3 ddp_barrier
'
# The absent rank 2 is n2's leader, and only leaders hold the links between
# nodes: rank 3 stands in for it, takes n2's list to rank 0 at its
# listening socket while rank 0 gathers lists, and gets n1's in return.
test_expect_success 'ranks 1 and 2 (2 is a leader) never enter: the others fail after DDP_TIMEOUT' '
	skip_run skip.5 1,2 0,3 4.5 6 -N2 -n4 --ntasks-per-node=2
'
test_expect_success 'ranks 1 and 2 (2 is a leader) never enter: every error names both' '
	REL_DIR=$PWD/skip.5 && rel_check_survivors 1,2 ddp_barrier
'
# Three per node (n1: 0-2, n2: 3-5); n2's leader 3 and rank 4 are absent.
# n1 is complete, so rank 0 waits for n2 in its exchange with the other
# leaders (DDP_TIMEOUT, as n2's own wait) before it gathers lists; rank 5,
# the stand-in, must be heard then, and the error names both, not just n2's
# leader.
REL_NTASKS=6
test_expect_success 'ranks 3 and 4 (3 is a leader) never enter, n1 complete: the others fail in time' '
	skip_run skip.6 3,4 0,1,2,5 4.5 6 -N2 -n6 --ntasks-per-node=3
'
test_expect_success 'ranks 3 and 4 (3 is a leader) never enter, n1 complete: every error names both' '
	REL_DIR=$PWD/skip.6 && rel_check_survivors 3,4 ddp_barrier
'
REL_NTASKS=4
# Every rank of n2 (2 and 3) is absent: nobody speaks for n2, so rank 0
# names all of its ranks, not only its leader, and rank 1 hears it from 0.
test_expect_success 'ranks 2 and 3 (all of n2) never enter: the others fail in time' '
	skip_run skip.7 2,3 0,1 4.5 6 -N2 -n4 --ntasks-per-node=2
'
test_expect_success 'ranks 2 and 3 (all of n2) never enter: every error names both' '
	REL_DIR=$PWD/skip.7 && rel_check_survivors 2,3 ddp_barrier
'
test_expect_success 'ddp_abort on rank 2: the others fail at once naming rank 2, srun exits non-zero' '
	rel_start abort.1 abort 2 -N2 -n4 &&
	rel_wait &&
	rel_show &&
	rel_check_bound &&
	! grep -q "ddp_abort returned" "$REL_DIR.out" &&
	! grep -q "NOT NOTICED" "$REL_DIR.out" &&
	grep -q "aborting on purpose" "$REL_DIR.err" &&
	rel_check_survivors 2 ddp_barrier &&
	rel_check_clean
'
test_expect_success 'the timeout is DDP_TIMEOUT, not a fixed one: with 2 s they fail sooner' '
	REL_TIMEOUT=2 &&
	rel_start skip.3 skip 2 -N2 -n4 &&
	REL_TIMEOUT=5 &&
	rel_wait &&
	rel_show &&
	rel_check_bound &&
	rel_check_survivors 2 ddp_barrier nocheck &&
	rel_check_call_time 0,1,3 1.5 3 &&
	rel_check_clean
'
test_done
