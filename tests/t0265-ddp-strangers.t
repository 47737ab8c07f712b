#!/bin/sh
test_description='libddp host backend: strangers cost nothing: another
user holding 30 silent connections to every listening port of a job'"'"'s
ranks, from its start, leaves its loop of collectives at its rate'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require 2

# progs/ddp_loop runs a loop of collectives (a 1 MiB all-reduce, an 8-byte
# all-reduce, a barrier) in 49 phases of SECS seconds and prints each
# one's rate; progs/stranger_flood.py, as root, finds the ports the ranks
# listen on (as `ss -ltnp` would) from the moment they open, and its
# child, as the user nobody, holds CONNS silent connections to each of
# them in phase 0 (from set-up on) and in the flooded phases of the 48
# that follow, opening a new one for each the ranks close, and none in
# the quiet ones.  The measured phases go quiet, flooded, flooded, quiet,
# twelve times over, each short (0.6 s, counted from 0.2 s in), so that the
# machine's own ups and downs (other jobs: on the shared 2-CPU machine of
# 2026-11-28 the rate swung 2-4x over seconds, and with no strangers at
# all the same ratio of 4 x 1.5 s phases read 0.74 to 1.26) weigh on both
# alike; the ratio is of the sums of their rates.  The last task starts ddp_init 2 s late, so
# that the others listen in set-up for that long: the strangers are on
# their ports before the links are made (opened_in_setup).  On the code
# before the gate (libjob/host/gate.c), every connection a rank accepted
# held it up for 0.1 s waiting for a hello: the flooded rate was 2% of
# the quiet one.
LOOP=$DDP_PROGS/ddp_loop
FLOOD=$DDP_SRC_DIR/tests/progs/stranger_flood.py
SECS=${DDP_STRANGERS_SECS:-0.6}
# By hand: DDP_STRANGERS_CONNS (connections per port), DDP_STRANGERS_SECS
# (a phase), DDP_STRANGERS_WRAP (a command before the program, e.g.
# "nice -n -15" to take the ranks out of the machine's noise).
CONNS=${DDP_STRANGERS_CONNS:-30}
# The least flooded/quiet ratio passed.  The goal is 0.95, but on the
# shared 2-CPU machine runs with no strangers at all read 0.91-0.97 (and
# with strangers 0.92-1.05): a timed test cannot hold 0.95 there without
# failing one run in two.  0.5 fails the defect (0.02) at once and never
# the noise; the ratio is printed, and DDP_STRANGERS_MIN=0.95 holds the
# goal on a quiet machine (doc/threat-model.md has the measured runs).
MIN=${DDP_STRANGERS_MIN:-0.5}
FLOODED=$(seq 1 48 | awk '$1 % 4 == 2 || $1 % 4 == 3' | paste -sd, -)
QUIET=$(seq 1 48 | awk '$1 % 4 == 1 || $1 % 4 == 0' | paste -sd, -)
DDP_SRUN_TIMEOUT=180

test_expect_success 'python3 and the user nobody are here' '
	python3 -c "import pwd; pwd.getpwnam(\"nobody\")"
'

# The flooders: one on each node of the job when the nodes have their own
# network namespaces (a stranger reaches the ranks of its own node), one
# for all on a loopback cluster.
if [ -f "$DDP_CLUSTER_DIR/net.conf" ]; then FLOOD_NODES="n1 n2"; else FLOOD_NODES=n1; fi

test_expect_success 'a loop of collectives with strangers on every port: right results' '
	rm -f phase &&
	fpids= &&
	for n in $FLOOD_NODES; do
		ddp_node_exec $n python3 "$FLOOD" ddp_loop $CONNS "$PWD/phase" 0,$FLOODED \
			>flood.$n.out 2>flood.$n.err &
		fpids="$fpids $!"
	done &&
	ddp_srun --mpi=pmix -N2 -n4 -w "n[1-2]" $DDP_STRANGERS_WRAP "$LOOP" $SECS 49 \
		"$PWD/phase" 2 >loop.out 2>loop.err
	rc=$?
	frc=0
	for p in $fpids; do wait $p || frc=$?; done
	cat loop.out loop.err flood.*.out flood.*.err
	uptime
	test $rc = 0 && test $frc = 0 &&
	test "$(grep -c "^ddp_loop rank .*: ok" loop.out)" = 4 &&
	test "$(grep -c "^ddp_loop phase" loop.out)" = 49
'

test_expect_success 'the strangers held their connections on the ports, from set-up on' '
	for n in $FLOOD_NODES; do
		grep "^stranger_flood: ports [1-9][0-9]* conns $CONNS opened [1-9].* opened_in_setup [1-9]" \
			flood.$n.out || return 1
	done
'

# rate PHASE: the loop's iterations per second in that phase.
rate () {
	sed -n "s/^ddp_loop phase $1 .* rate \([0-9.]*\) .*/\1/p" loop.out
}
# sum PHASES...: the sum of their rates.
sum () {
	for p in "$@"; do rate $p; done | awk "{ s += \$1 } END { printf \"%.1f\", s }"
}
ON=$(sum $(echo $FLOODED | tr , " "))
OFF=$(sum $(echo $QUIET | tr , " "))
RATIO=$(awk -v a="$ON" -v b="$OFF" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')

test_expect_success "flooded, the loop keeps >= $MIN of its quiet rate: ratio $RATIO (it/s summed over 24 phases each: flooded $ON, quiet $OFF; phase 0, flooded from set-up: $(rate 0))" '
	awk -v r="$RATIO" -v m="$MIN" "BEGIN { exit !(r >= m) }"
'

test_done
