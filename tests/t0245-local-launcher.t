#!/bin/sh
test_description='several ranks without Slurm: ddp-local-run starts a program
as the ranks of a job in simulated nodes; libddp runs its collectives,
helpers and failures there as on a cluster; nothing is left behind'
. "$(dirname "$0")/test-lib.sh"

RUN=$DDP_PROGS/ddp-local-run
CHECK=$DDP_PROGS/ddp_check
FAULT=$DDP_PROGS/ddp_fault
HELPERS=$DDP_PROGS/helpers_check
# Not in a Slurm step or a PMIx job, whatever the caller is in.
unset PMIX_NAMESPACE SLURM_STEP_NUM_TASKS WORLD_SIZE RANK DDP_BOOTSTRAP
unset DDP_TIMEOUT DDP_INIT_TIMEOUT DDP_DEBUG DDP_BACKEND

# run NAME ARGS...: ddp-local-run ARGS, bounded, its exit status in
# NAME.rc and the seconds it took in NAME.secs, output in NAME.out/.err.
run () {
	name=$1; shift
	start=$(date +%s.%N)
	timeout --kill-after=5 120 "$RUN" "$@" >"$name.out" 2>"$name.err"
	echo $? >"$name.rc"
	echo "$start $(date +%s.%N)" | awk '{ printf "%.1f\n", $2 - $1 }' >"$name.secs"
	cat "$name.out"; cat "$name.err" >&2
	echo "exit $(cat "$name.rc") after $(cat "$name.secs") s"
}

# within NAME SECONDS: the run took less.
within () {
	awk -v t="$(cat "$1.secs")" -v b="$2" 'BEGIN { exit !(t < b) }'
}

test_expect_success 'ddp_check on 4 ranks over 2 simulated nodes: every check passes' '
	run check -n 4 -N 2 -- "$CHECK" -q -l 300000 &&
	test "$(cat check.rc)" = 0 &&
	test $(grep -c "0 failed in all" check.out) = 4 &&
	grep -q "^ddp_check rank 0/4 local 0/2 node 0/2 backend host:" check.out &&
	grep -q "^ddp_check rank 3/4 local 1/2 node 1/2 backend host:" check.out
'
test_expect_success 'uneven and interleaved layouts (--map 0,1,0,1,1; 3 nodes)' '
	run map -m 0,1,0,1,1 -- "$CHECK" -q -l 0 &&
	test "$(cat map.rc)" = 0 &&
	test $(grep -c "0 failed in all" map.out) = 5 &&
	grep -q "^ddp_check rank 2/5 local 1/2 node 0/2 " map.out &&
	grep -q "^ddp_check rank 4/5 local 2/3 node 1/2 " map.out &&
	run three -n 7 -N 3 -- "$CHECK" -q -l 0 &&
	test $(grep -c "0 failed in all" three.out) = 7 &&
	grep -q "^ddp_check rank 6/7 local 1/2 node 2/3 " three.out
'
test_expect_success 'ddp_init again after ddp_finalize, and DDP_DEBUG says local' '
	run again -n 3 -N 2 -- env DDP_DEBUG=1 "$CHECK" -q -r -l 0 &&
	test "$(cat again.rc)" = 0 &&
	test $(grep -c "init again: allreduce ok" again.out) = 3 &&
	grep -q "^\[ddp rank 0/3\] init: .*bootstrap local (job local\.[0-9]*), rank 0/3, local 0/2, node 0/2" again.err &&
	grep -q "bootstrap: local: offered: DDP_LOCAL_FD=[0-9]* is set" again.err
'
test_expect_success 'the bootstrap'"'"'s rounds (boot_check) on 6 ranks over 3 interleaved nodes' '
	run rounds -m 0,1,2,0,1,2 -- "$DDP_PROGS/boot_check" -i 2 &&
	test "$(cat rounds.rc)" = 0 &&
	test $(grep -c " local: .* 0 failed$" rounds.out) = 6 &&
	test $(grep -c "^boot_check rank [0-5]/6 init: first" rounds.out) = 6 &&
	grep -q "^boot_check rank 4/6 node 1/3 local: .*for 5 blobs) 0 failed$" rounds.out
'
test_expect_success 'every helper on 4 ranks over 2 nodes, failures reach every rank' '
	rm -rf helpers && mkdir helpers &&
	run helpers-run -n 4 -N 2 -- "$HELPERS" "$PWD/helpers" &&
	test "$(cat helpers-run.rc)" = 0 &&
	test $(grep -c "done failures=0$" helpers-run.out) = 4
'
test_expect_success 'kill -9 of a rank in a barrier loop: the others name it' '
	run kill -n 4 -N 2 -- "$FAULT" kill 2 &&
	test "$(cat kill.rc)" = 137 &&
	grep -q "ddp-local-run: rank 2 killed by signal 9" kill.err &&
	test $(grep -c "failed after .* calls .*: -8 " kill.out) = 3 &&
	test $(grep -c "error: rank 2 died" kill.err) = 3 &&
	within kill 30
'
test_expect_success 'a leader killed from outside (--kill) in large all-reduces' '
	run killout -n 4 -N 2 --kill 2@3 -- "$FAULT" absent 9 allreduce &&
	test "$(cat killout.rc)" = 137 &&
	test $(grep -c "failed after .* calls .*: -8 " killout.out) = 3 &&
	test $(grep -c "error: rank 2 died" killout.err) = 3
'
test_expect_success 'a rank that never comes: the others time out naming it' '
	run absent -n 4 -N 2 --kill 1@12 -- env DDP_TIMEOUT=2 "$FAULT" absent 1 &&
	test $(grep -c "failed after .* calls .*: -7 " absent.out) = 3 &&
	test $(grep -c "error: rank 1 did not arrive within DDP_TIMEOUT (2 s)" absent.err) = 3
'
test_expect_success 'ddp_abort ends the job with its status' '
	run abort -n 4 -N 2 -- "$FAULT" abort 1 &&
	test "$(cat abort.rc)" = 7 &&
	grep -q "\[ddp rank 1/4\] error: ddp_abort (7): ddp_fault: giving up on purpose" abort.err &&
	grep -q "ddp-local-run: rank 1 aborted the job (status 7)" abort.err &&
	within abort 30
'
test_expect_success 'a rank killed before ddp_init: init fails at once, naming it' '
	run early -n 4 -N 2 -- "$FAULT" early 3 &&
	test $(grep -c "init failed after [0-9.]* s: -8" early.out) = 3 &&
	test $(grep -c "error: .*rank 3 never reached ddp_init: rank 3 killed by signal 9" early.err) = 3 &&
	within early 20
'
test_expect_success 'a rank late to ddp_init: the others time out naming it' '
	run late -n 3 -N 2 -- env DDP_TIMEOUT=1 sh -c \
		"test \$RANK != 1 || sleep 4; exec \"$CHECK\" -q -l 0" &&
	test "$(cat late.rc)" != 0 &&
	test $(grep -c "rank 1 did not reach ddp_init within 1 s (DDP_.*): rank 1 still running" late.err) -ge 2
'
test_expect_success 'the launcher: its own bound, bad arguments, a missing program' '
	run slow -n 2 -t 1 -- sleep 30 &&
	test "$(cat slow.rc)" = 124 &&
	grep -q "the job ran past its 1 s" slow.err &&
	within slow 10 &&
	run noprog -n 2 -- /nonexistent/prog &&
	test "$(cat noprog.rc)" = 127 &&
	grep -q "cannot run /nonexistent/prog" noprog.err &&
	test_expect_code 2 "$RUN" -n 0 -- true 2>bad1 &&
	grep -q "give 1 to 4096 ranks" bad1 &&
	test_expect_code 2 "$RUN" -n 2 -N 3 -- true 2>bad2 &&
	grep -q "more nodes than the 2 ranks" bad2 &&
	test_expect_code 2 "$RUN" -n 2 -k 5@1 -- true 2>bad3 &&
	grep -q "the job has ranks 0 to 1" bad3 &&
	test_expect_code 2 "$RUN" -n 2 2>bad4 &&
	grep -q "no program to run" bad4 &&
	test_expect_code 2 "$RUN" -m 0,2 -- true 2>bad5 &&
	grep -q "node 1 has no rank" bad5
'
# A malformed DDP_* value fails ddp_init on every rank, naming the variable,
# the value and what is allowed (env.c): one case a line, VAR=VALUE|TEXT.
while IFS="|" read -r setting text; do
	test_expect_success "malformed $setting: ddp_init refuses it, saying so" '
		run bad -n 2 -- env "$setting" "$CHECK" -q -l 0 &&
		test "$(cat bad.rc)" != 0 &&
		test $(grep -cF "error: $text" bad.err) = 2 &&
		test $(grep -c "^ddp_init: invalid argument" bad.err) = 2 &&
		! grep -q "failed in all" bad.out
	'
done <<-\EOF
	DDP_SHM_SLOT=-1|DDP_SHM_SLOT='-1' is not a whole number from 4096 to 1073741824 (bytes, in decimal digits)
	DDP_SHM_SLOT=abc|DDP_SHM_SLOT='abc' is not a whole number from 4096 to 1073741824
	DDP_SHM_SLOT=99999999999999999999|DDP_SHM_SLOT='99999999999999999999' is not a whole number
	DDP_TIMEOUT=0x10|DDP_TIMEOUT='0x10' is not a number of seconds: give one in (0, 1000000], or inf for no timeout
	DDP_TIMEOUT=0|DDP_TIMEOUT='0' must be more than 0: give a number of seconds in (0, 1000000], or inf for no timeout
	DDP_DEBUG=yes|DDP_DEBUG='yes' is not 0 or 1: set 1 to log what libddp does, 0 or nothing to leave it off
	DDP_STRAGGLERS=x|DDP_STRAGGLERS='x' is not 0 or 1
	DDP_NCCL_BUFFER_CACHE=off|DDP_NCCL_BUFFER_CACHE='off' is not 0 or 1
	DDP_LANES=010|DDP_LANES='010' is not a whole number from 1 to 16 (ranks, in decimal digits)
	DDP_SPIN=1 2|DDP_SPIN='1 2' is not a whole number from 0 to 10000000
EOF
# The helpers pace their rounds by the DDP_TIMEOUT ddp_init took (env.c),
# not by the variable read again: DDP_TIMEOUT=1 at init, then 0x10 (which
# env.c refuses; strtod read 16 s) or 100 (well formed, not in force) set
# by the program; main's callbacks run 2.5 s.  Rounds 2 s apart (a quarter
# of 16 or 100, at most 2) made the waiting ranks time out after 1 s.
for value in 0x10 100; do
	test_expect_success "helpers keep ddp_init's DDP_TIMEOUT=1 after setenv DDP_TIMEOUT=$value" '
		rm -rf slowenv && mkdir slowenv &&
		run slowenv -n 3 -N 2 -- env DDP_TIMEOUT=1 "$HELPERS" \
			"$PWD/slowenv" slow-setenv $value &&
		test "$(cat slowenv.rc)" = 0 &&
		test $(grep -c "done failures=0$" slowenv.out) = 3 &&
		test $(grep -c "slow compute_and_bcast (root 2.5 s) ok$" slowenv.out) = 3
	'
done
test_expect_success 'a long or unprintable value is shown escaped, cut at 40 bytes' '
	run badlong -n 1 -- env "DDP_SEGMENT=$(printf "\033[31m%060d" 0)" \
		"$CHECK" -q -l 0 &&
	test "$(cat badlong.rc)" != 0 &&
	grep -F "error: DDP_SEGMENT='"'"'\\x1b[31m00000000000000000000000000000000000...'"'"' is not a whole number from 64" badlong.err
'
test_expect_success 'a forged WORLD_SIZE: the launcher'"'"'s world, a warning naming both' '
	run forged -n 4 -N 2 -- env WORLD_SIZE=1 "$CHECK" -q -l 0 &&
	test "$(cat forged.rc)" = 0 &&
	test $(grep -c "warning: WORLD_SIZE=1 but the launcher (local) says 4 ranks; using the launcher" forged.err) = 4 &&
	test $(grep -c "^ddp_check rank ./4 .* 0 failed in all" forged.out) = 4
'
# Each rank starts a child of its own and waits: the launcher's bound
# kills both (every rank's process group).  The sleeps' durations are this
# run's own, so other users' processes do not count.
test_expect_success 'nothing is left: no rank process, no child of one, no socket file' '
	n=77$$ &&
	touch stamp &&
	run left -n 3 -N 2 -t 2 -- sh -c "sleep $n & sleep $n" &&
	test "$(cat left.rc)" = 124 &&
	sleep 0.5 &&
	! ps -eo stat=,args= | awk "\$1 !~ /^Z/" | grep -x ". *sleep $n" &&
	test -z "$(find . /tmp -maxdepth 1 -type s -newer stamp 2>/dev/null)"
'
test_done
