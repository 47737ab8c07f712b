#!/bin/sh
test_description='NCCL backend on a stand-in CUDA/NCCL, several ranks under
ddp-local-run: a dead or late rank is named on every survivor

The stand-in (tests/progs/nccl_mock.c) with MOCK_NCCL_PEERS=fake and
MOCK_NCCL_PEER_DIR lets the ranks see each other as NCCL would: a
collective completes once every rank entered it, and a rank that exited
before it did becomes NCCL'"'"'s remote error on the others ("remote process
exited or there was a network error"), which names no rank.  libddp'"'"'s
watch (libjob/nccl/watch.h) must then name the rank, its host and what it
was doing, in one line on every survivor, within DDP_TIMEOUT, keeping
NCCL'"'"'s words at the end.  No test cluster.'
. "$(dirname "$0")/test-lib.sh"

mock=$DDP_BUILD_DIR/tests/progs/.libs/nccl_mock.so
RUN=$DDP_PROGS/ddp-local-run
FAULT=$DDP_PROGS/ddp_fault
VICTIM=$DDP_PROGS/ddp_victim
if ! test -f "$mock"; then
    skip_all="built without NCCL (no mock library)"
    test_done
fi
# Not in a Slurm step or a PMIx job, whatever the caller is in.
unset PMIX_NAMESPACE SLURM_STEP_NUM_TASKS WORLD_SIZE RANK DDP_BOOTSTRAP
unset DDP_TIMEOUT DDP_INIT_TIMEOUT DDP_DEBUG DDP_BACKEND SLURM_PROCID
unset CUDA_VISIBLE_DEVICES
HOST=$(uname -n)

# ranks NAME N NODES [VAR=VALUE...] PROG ARGS...: N ranks of PROG under
# ddp-local-run in NODES simulated nodes, on the stand-in with every rank
# its own GPU and the peers seen through NAME.peers; stdout and stderr in
# NAME.out and NAME.err, the exit status in NAME.rc, seconds in NAME.secs.
ranks () {
	name=$1 n=$2 nodes=$3
	shift 3
	rm -rf "$name.peers" && mkdir "$name.peers" &&
	start=$(date +%s.%N)
	timeout --kill-after=5 60 "$RUN" -n "$n" -N "$nodes" -t 50 -- \
		env LD_PRELOAD="$mock" MOCK_NCCL_PEERS=fake MOCK_GPU_ID=rank \
		MOCK_NCCL_PEER_DIR="$PWD/$name.peers" DDP_BACKEND=nccl "$@" \
		>"$name.out" 2>"$name.err"
	echo $? >"$name.rc"
	echo "$start $(date +%s.%N)" | awk '{ printf "%.1f\n", $2 - $1 }' >"$name.secs"
	cat "$name.out" "$name.err"
	echo "exit $(cat "$name.rc") after $(cat "$name.secs") s"
}

# errors NAME R: rank R's library error lines in NAME.err.
errors () {
	grep "^\[ddp rank $2/[0-9]*\] error: " "$1.err"
}

# one_verdict NAME: every survivor's error says the same of who is at
# fault (whatever call it was in); those that say who noticed name a rank that found out itself (a
# collector: its own error says no "noticed by").  Survivors that fail at
# the same moment may each collect.
one_verdict () {
	grep "error: nccl: " "$1.err" >"$1.lines" &&
	test $(sed "s/ (noticed by rank [0-9]*)//; s/^.*error: nccl: [a-z_]* #[0-9]*\( did not complete within [^:]*\)\{0,1\}: //" "$1.lines" | sort -u | wc -l) = 1 &&
	grep -v "(noticed by rank" "$1.lines" | sed -n "s/^\[ddp rank \([0-9]*\)\/.*/\1/p" >"$1.collectors" &&
	test -s "$1.collectors" &&
	for c in $(sed -n "s/.*(noticed by rank \([0-9]*\)).*/\1/p" "$1.lines"); do
		grep -qx "$c" "$1.collectors" || return 1
	done
}

# within NAME SECONDS: the run took less.
within () {
	awk -v t="$(cat "$1.secs")" -v b="$2" 'BEGIN { exit !(t < b) }'
}

# quick NAME COUNT: COUNT survivors' failing call took under 5 s (a death
# is seen at once, far under DDP_TIMEOUT=10); the whole run's bound
# (within) is loose, as a loaded machine starts and ends processes slowly.
quick () {
	test $(grep -Ec "failed after [0-9]+ calls in [0-4]\.[0-9] s: " "$1.out") = $2
}

# What a survivor can observe of a killed rank (sharness.d/ddp.sh).
killed=$DDP_KILLED_SEEN
nccl_said='NCCL: remote process exited or there was a network error (mock) (socketProgress: Connection closed by remote peer (mock))$'

test_expect_success 'kill -9 of rank 1 in a barrier loop: the survivor names it and its host, NCCL'"'"'s words at the end' '
	ranks kill 2 1 DDP_TIMEOUT=10 "$FAULT" kill 1 barrier &&
	grep "^rank 0: failed after 200 calls in [0-9.]* s: -8 (a peer died or aborted): nccl: ddp_barrier #202: rank 1 " kill.out &&
	test $(errors kill 0 | wc -l) = 1 &&
	errors kill 0 | grep "error: nccl: ddp_barrier #202: rank 1 (host $HOST) $killed; $nccl_said" &&
	grep "^ddp-local-run: rank 1 killed by signal 9" kill.err &&
	quick kill 1 &&
	within kill 30
'
test_expect_success '4 ranks on 2 nodes, rank 2 killed in an allreduce loop: every survivor says the same' '
	ranks kill4 4 2 DDP_TIMEOUT=10 "$FAULT" kill 2 allreduce &&
	for r in 0 1 3; do
		grep "^rank $r: failed after 200 calls in [0-9.]* s: -8 " kill4.out &&
		errors kill4 $r | grep "error: nccl: ddp_allreduce #202: rank 2 (host $HOST) $killed\( (noticed by rank [0-3])\)\{0,1\}; $nccl_said" || return 1
	done &&
	one_verdict kill4 &&
	! errors kill4 2 &&
	quick kill4 3 &&
	within kill4 30
'
test_expect_success 'kill -9 of rank 0, the first one asked: another rank collects, and rank 0 is named' '
	ranks kill0 3 1 DDP_TIMEOUT=10 "$FAULT" kill 0 barrier &&
	for r in 1 2; do
		errors kill0 $r | grep "error: nccl: ddp_barrier #202: rank 0 (host $HOST) $killed\( (noticed by rank [12])\)\{0,1\}; $nccl_said" || return 1
	done &&
	one_verdict kill0 &&
	quick kill0 2 &&
	within kill0 30
'
test_expect_success 'rank 1 never enters a barrier: each survivor names it and the barrier at the deadline' '
	ranks skip 3 1 DDP_TIMEOUT=3 DDP_VICTIM_RANKS=1 DDP_VICTIM_SKIP_SLEEP=6 "$VICTIM" skip "$PWD/skip.peers" &&
	for r in 0 2; do
		grep "^ddp_barrier -7 [0-9.]* " "skip.peers/exit.$r" &&
		awk "{ exit !(\$3 >= 3 && \$3 < 5) }" "skip.peers/exit.$r" || return 1
	done &&
	for r in 0 2; do
		errors skip $r | grep "error: nccl: ddp_barrier #3 did not complete within DDP_TIMEOUT=3 s: rank 1 (host $HOST) never entered ddp_barrier #3\( (noticed by rank [02])\)\{0,1\}; communicator aborted$" || return 1
	done &&
	one_verdict skip &&
	! errors skip 1
'
test_expect_success 'rank 3 of 4 is late to the 5th barrier of a loop, on another node: named with the barrier on both nodes' '
	ranks late 4 2 DDP_TIMEOUT=3 DDP_VICTIM_RANKS=3 DDP_VICTIM_AT=5 DDP_VICTIM_SKIP_SLEEP=6 "$VICTIM" late "$PWD/late.peers" &&
	n=$(errors late 0 | sed -n "s/.*rank 3 (host [^)]*) never entered ddp_barrier #\([0-9]*\).*/\1/p") &&
	test -n "$n" &&
	for r in 0 1 2; do
		errors late $r | grep "error: nccl: ddp_barrier #$n did not complete within DDP_TIMEOUT=3 s: rank 3 (host $HOST) never entered ddp_barrier #$n\( (noticed by rank [0-2])\)\{0,1\}; communicator aborted$" || return 1
	done &&
	one_verdict late
'
test_done
