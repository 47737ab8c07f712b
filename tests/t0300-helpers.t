#!/bin/sh
test_description='libddp helpers on real steps: main-process helpers, variable-size
data, failures on one rank reaching every rank without a hang'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

CHECK=$DDP_PROGS/helpers_check
DDP_SRUN_TIMEOUT=${DDP_SRUN_TIMEOUT:-90}

# run_check NAME NTASKS SRUN_ARGS... : run the whole check in a fresh
# directory and require every rank to finish with no failure.
run_check () {
	name=$1 n=$2
	shift 2
	rm -rf "$name" && mkdir "$name" &&
	ddp_srun "$@" "$CHECK" "$PWD/$name" $HELPERS_EXTRA >"$name.out" 2>"$name.err"
	rc=$?
	grep -v " ok$" "$name.out"
	cat "$name.err" >&2
	test $rc = 0 &&
	test $(grep -c "done failures=0$" "$name.out") = "$n" &&
	! grep -q FAIL "$name.out"
}

test_expect_success 'a single process without srun: every helper' '
	rm -rf single && mkdir single &&
	env -u WORLD_SIZE "$CHECK" "$PWD/single" >single.out &&
	grep -q "^rank 0/1 done failures=0$" single.out
'
test_expect_success 'srun -N1 -n1: every helper' '
	run_check n1 1 --mpi=pmix -N1 -n1
'
test_expect_success 'srun -N1 -n4: every helper, failures reach every rank' '
	run_check n4 4 --mpi=pmix -N1 -n4
'
test_expect_success 'srun -N2 -n4: every helper, failures reach every rank' '
	run_check n2n4 4 --mpi=pmix -N2 -n4
'
test_expect_success 'srun -N2 -n3 (uneven): every helper' '
	run_check n2n3 3 --mpi=pmix -N2 -n3
'
test_expect_success 'srun --ddp=host -N2 -n3 (the plugin): every helper' '
	run_check plugin 3 --ddp=host -N2 -n3
'
test_expect_success 'DDP_DEBUG=1: the other ranks log which rank failed and how' '
	rm -rf dbg && mkdir dbg &&
	(export DDP_DEBUG=1 &&
	 ddp_srun --mpi=pmix -N1 -n2 "$CHECK" "$PWD/dbg" >dbg.out 2>dbg.err) &&
	grep "failed\|different" dbg.err &&
	grep -q "^\[ddp rank 1/2\] ddp_run_on_main: rank 0 failed: a user callback failed$" dbg.err &&
	grep -q "^\[ddp rank 0/2\] ddp_rank0_first: rank 1 failed: a user callback failed$" dbg.err &&
	grep -q "^\[ddp rank 0/2\] ddp_compute_and_bcast: rank 1 failed: a user callback failed$" dbg.err &&
	grep -q "^\[ddp rank 1/2\] ddp_average_named: ranks passed different names$" dbg.err
'
test_expect_success 'srun -N2 -n4: tens of MiB through the variable-size paths' '
	(HELPERS_EXTRA=big && run_check big 4 --mpi=pmix -N2 -n4)
'
test_expect_success 'rank 0 failing in run_on_main: EUSER on 0, EREMOTE on all others' '
	for r in 1 2 3; do
		grep -q "^rank $r/4 run_on_main main fails: EUSER on main, EREMOTE elsewhere, no post ok$" n2n4.out || return 1
	done &&
	grep -q "^rank 0/4 run_on_main main fails: EUSER on main, EREMOTE elsewhere, no post ok$" n2n4.out
'
test_expect_success 'rank 0 failing in rank0_first: the others skip fn, get EREMOTE' '
	test $(grep -c "rank0_first rank 0 fails: the others do not run fn, EREMOTE ok$" n2n4.out) = 4
'
test_expect_success 'average_named with a different name: EMISMATCH on every rank' '
	test $(grep -c "average_named a name differs on the last rank: EMISMATCH everywhere ok$" n2n4.out) = 4
'
test_expect_success 'every failure inside the helpers is noticed at once (no timeout)' '
	rm -rf prompt && mkdir prompt &&
	(export DDP_TIMEOUT=600 &&
	 ddp_srun --mpi=pmix -N2 -n4 "$CHECK" "$PWD/prompt" >prompt.out) &&
	grep elapsed prompt.out &&
	test $(grep -c "done failures=0$" prompt.out) = 4 &&
	awk "/ elapsed / && \$4 >= 20 { bad = 1 } END { exit bad }" prompt.out
'
test_expect_success 'callbacks longer than DDP_TIMEOUT: nobody times out' '
	rm -rf slow && mkdir slow &&
	(export DDP_TIMEOUT=1 &&
	 ddp_srun --mpi=pmix -N2 -n3 "$CHECK" "$PWD/slow" slow >slow.out 2>slow.err);
	rc=$?;
	grep -v " ok$" slow.out; cat slow.err;
	test $rc = 0 && test $(grep -c "done failures=0$" slow.out) = 3 &&
	test $(grep -c "slow run_on_main (main 2.5 s, DDP_TIMEOUT 1 s) ok$" slow.out) = 3
'
# Each step says what it found when it fails (a failure under load was
# once seen with no clue which step failed).
test_expect_success 'ddp_log: lines of 4 ranks logging at once never interleave' '
	ddp_srun --mpi=pmix -N2 -n4 "$CHECK" "$PWD" log 2>log.err &&
	grep -v "^srun: " log.err >log.ddp &&
	{ test $(wc -l <log.ddp) = $((4 * 400 + 1)) ||
	  { say "$(wc -l <log.ddp) lines, expected $((4 * 400 + 1))"; false; }; } &&
	grep -c "^\[ddp rank 0/4\] main says 4$" log.ddp &&
	grep -v "^\[ddp rank 0/4\] main says 4$" log.ddp >lines &&
	! grep -Ev "^\[ddp rank ([0-3])/4\] line [0-9]+\+? (a{200}|b{200}|c{200}|d{200})$" lines &&
	for r in 0 1 2 3; do
		c=$(echo abcd | cut -c$((r + 1))) &&
		n=$(grep -c "^\[ddp rank $r/4\] line [0-9]*+\{0,1\} $c\{200\}$" lines) &&
		{ test "$n" = 400 || { say "rank $r: $n whole lines, expected 400"; false; }; } ||
		return 1
	done
'
# Not hanging is judged by the time (ddp_srun's bound is 60 s), not by
# the status: srun itself exits 137 where Slurm SIGKILLs a task of the
# step it ends (seen on Slurm 24.11 in t0160), timeout(1)'s status at the
# bound.
test_expect_success 'main dies inside run_on_main: nobody hangs' '
	rm -rf die && mkdir die &&
	start=$(date +%s);
	(export DDP_TIMEOUT=20 DDP_SRUN_TIMEOUT=60 &&
	 ddp_srun --mpi=pmix -N2 -n4 "$CHECK" "$PWD/die" die >die.out 2>die.err);
	rc=$? end=$(date +%s);
	cat die.out; tail -5 die.err;
	echo "rc $rc, took $((end - start)) s";
	test $rc != 0 && test $((end - start)) -lt 50 &&
	! grep -q "rc=0 " die.out
'
test_done
