#!/bin/sh
test_description='a collective timeout says, on every rank, which collective number each absent rank is at'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# ddp_victim late: the late ranks stay away before the 5th barrier of a
# loop (until the others ended, at most 2 x DDP_TIMEOUT + 1 s); the others
# time out in it.  Collectives are
# numbered per rank from 1 (ddp_init's own barrier is #1), so every error
# must say the late rank "never entered ddp_barrier #N" (its node-mates
# see that in its flags), or, when it is alone on its node, "sent nothing
# in ddp_barrier #N" (its node took the swap's connection and did not
# answer: all a remote node can observe), with one N on all ranks, and name
# its node.
REL_BOUND=20

# late_numbers FILE RANK: the numbers of "rank RANK (node K) never entered
# (or sent nothing in) ddp_barrier #N" in the libddp errors of FILE, one
# line per error.
late_numbers () {
	grep -F "error: " "$1" |
		sed -n "s/.*rank $2 (node [0-9]*) \(never entered\|sent nothing in\) ddp_barrier #\([0-9]*\).*/\2/p"
}

# late_run NAME LATE PRESENT [SRUN ARGS...]: every rank of PRESENT failed
# the barrier with DDP_ETIMEDOUT, and each error says the same number for
# LATE.
late_run () {
	local name=$1 late=$2 present=$3 n
	shift 3
	rel_start "$name" late "$late" "$@" &&
	rel_wait && rel_show && rel_check_bound &&
	rel_check_survivors "$late" ddp_barrier &&
	n=$(echo "$present" | tr , "\n" | wc -l) &&
	late_numbers "$REL_DIR.err" "$late" >"$name.numbers" &&
	say "numbers: $(tr "\n" " " <"$name.numbers")" &&
	test "$(wc -l <"$name.numbers")" = "$n" &&
	test "$(sort -u "$name.numbers" | wc -l)" = 1 &&
	test "$(sort -u "$name.numbers")" -ge 5 &&
	rel_check_clean
}

test_expect_success 'a rank late to a barrier in a loop: every error says which barrier number it never entered (one node)' '
	late_run late.1 1 0,2,3 -N1 -n4
'
test_expect_success 'the same across nodes: the late rank alone on its node, named by the others' '
	late_run late.2 3 0,1,2 -N2 -n4
'
test_expect_success 'the same across nodes: a late rank on the first node, named by the second' '
	late_run late.3 1 0,2,3 -N2 -n4 --ntasks-per-node=2
'
# A rank stuck in a collective because another is missing: rank 2 waits in
# the barrier for its node-mate rank 3, which never enters it; ranks 0 and 1
# wait for node 1.  Every error names rank 3 alone (it "never entered"),
# none blames rank 2, which is in the barrier like the others.  ("is still
# in ddp_barrier #N" is the wording for a listed rank that entered the
# collective and stopped inside it, which a program cannot do through the
# API; mismatched calls on one node are not told apart, see doc/ddp.7.)
test_expect_success 'a rank stuck waiting in a barrier for its missing node-mate: only the missing rank is named' '
	late_run late.4 3 0,1,2 -N2 -n4 --ntasks-per-node=2 &&
	! grep -F "error: " "$REL_DIR.err" | grep -E "rank 2 \(node|still in"
'
# ddp_victim slow: rank 5 sleeps 20 ms before each of 50 allreduces; the
# straggler report rank 0 logs at ddp_finalize (DDP_STRAGGLERS=1, or
# DDP_DEBUG) names it first, last in most of them, about 20 ms late.
# slow_report NAME ENV...: run it on 2 nodes, keep rank 0's report line.
slow_report () {
	local name=$1 dir=$PWD/$1
	shift
	rm -rf "$dir" && mkdir -p "$dir" &&
	(export "$@" DDP_VICTIM_RANKS=5 &&
	 ddp_srun --ddp=host -N2 -n8 --ntasks-per-node=4 \
		"$DDP_PROGS/ddp_victim" slow "$dir") >"$name.out" 2>"$name.err" &&
	grep -F "[ddp rank 0/8] stragglers over " "$name.err" >"$name.report" &&
	cat "$name.report" &&
	test "$(wc -l <"$name.report")" = 1
}
# check_first NAME: rank 5 (node 1) comes first, in 40 or more of the 50,
# 10 ms late or more on average.
check_first () {
	sed -n "s/.*collectives: rank 5 (node 1) last in \([0-9]*\) ([0-9]*%), \([0-9]*\)\.[0-9] ms late on average.*/\1 \2/p" \
		"$1.report" >"$1.first" &&
	test -s "$1.first" &&
	read n ms <"$1.first" &&
	test "$n" -ge 40 && test "$ms" -ge 10
}
test_expect_success 'a rank made consistently slow comes first in the straggler report (DDP_STRAGGLERS=1)' '
	slow_report slow.1 DDP_STRAGGLERS=1 && check_first slow.1
'
test_expect_success 'DDP_DEBUG=1 prints the same report' '
	slow_report slow.2 DDP_DEBUG=1 && check_first slow.2
'
test_expect_success 'without either, no report' '
	rm -rf slow.3 && mkdir slow.3 &&
	DDP_VICTIM_RANKS=5 ddp_srun --ddp=host -N2 -n8 --ntasks-per-node=4 \
		"$DDP_PROGS/ddp_victim" slow "$PWD/slow.3" >slow.3.out 2>slow.3.err &&
	! grep -F stragglers slow.3.err
'
# ddp_victim late-first: rank 1 comes 1.5 s late to the first allreduce,
# with DDP_TIMEOUT=1.  A collective ends the same way on every rank: a
# rank that gives up on it leaves the fault record before it returns, and
# a rank that completes it checks for one.  The wait is DDP_TIMEOUT
# within a node and between nodes alike (no graces: a survivor returns
# within DDP_TIMEOUT + 1 s, ddp(3)), so everyone fails with
# DDP_ETIMEDOUT (-7), also with rank 1 alone on its node.
# agree_runs NAME CODE SRUN ARGS...: 3 runs, every rank prints code CODE
# (and the sum of the ranks' 1s when CODE is 0).
agree_runs () {
	local name=$1 code=$2 i n
	shift 2
	for i in 1 2 3; do
		rm -rf "$name.$i" && mkdir -p "$name.$i" &&
		(export DDP_TIMEOUT=1 DDP_VICTIM_RANKS=1 &&
		 ddp_srun --ddp=host --kill-on-bad-exit=0 "$@" \
			"$DDP_PROGS/ddp_victim" late-first "$PWD/$name.$i") \
			>"$name.$i.out" 2>"$name.$i.err" || return 1
		cat "$name.$i.out"
		n=$(grep -c "^ddp_victim: rank [0-9]*: allreduce " "$name.$i.out")
		test "$n" = "$(ddp_ntasks "$@")" || return 1
		sed -n "s/^ddp_victim: rank [0-9]*: allreduce \(-*[0-9]*\) .*/\1/p" \
			"$name.$i.out" | sort -u >"$name.$i.codes"
		test "$(cat "$name.$i.codes")" = "$code" || return 1
		test "$code" != 0 ||
		! grep "allreduce 0 " "$name.$i.out" | grep -v " allreduce 0 $n\$" ||
		return 1
	done
}
# ddp_ntasks SRUN ARGS...: the -nN of the arguments.
ddp_ntasks () {
	echo "$*" | sed -n "s/.*-n\([0-9]*\).*/\1/p"
}
test_expect_success 'a collective given up by one rank fails on the late rank too (-n2, one node, 3 runs)' '
	agree_runs agree.1 -7 -N1 -n2
'
test_expect_success 'the same with -n3 on one node' '
	agree_runs agree.2 -7 -N1 -n3
'
test_expect_success 'the same on two nodes, the late rank with an on-time node-mate (-N2 -n3)' '
	agree_runs agree.3 -7 -N2 -n3
'
test_expect_success 'on two nodes with one rank each, 1.5 s is past DDP_TIMEOUT there too: both fail (-N2 -n2)' '
	agree_runs agree.4 -7 -N2 -n2
'
# scancel signals every task, node by node, milliseconds apart: a rank
# that sees a peer die of it first must not name it dead (issue 15: "rank
# 0 died" before Slurm's "Terminated"); its own SIGTERM ends it within the
# grace libddp gives a death (DIED_GRACE, libjob/host/fault.c).
test_expect_success 'scancel of a barrier loop on 2 nodes: no rank names another dead (3 runs)' '
	for i in 1 2 3; do
		rel_start cancel.$i barrier - -N2 -n8 &&
		rel_wait_file "$REL_DIR/pid.0" 30 &&
		rel_wait_file "$REL_DIR/pid.7" 30 &&
		sleep 0.5 &&
		scancel "$(cut -d" " -f3 "$REL_DIR/pid.0")" &&
		rel_wait &&
		rel_show &&
		cat "$REL_DIR".e.* &&
		test "$REL_RC" != 0 &&
		! grep -h "died" "$REL_DIR".e.* "$REL_DIR.err" || return 1
	done
'
test_done
