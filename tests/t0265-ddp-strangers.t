#!/bin/sh
test_description='libddp host backend: strangers cost nothing: another
user holding 30 silent connections to every listening port of a job'"'"'s
ranks, from its start, leaves its loop of collectives at >= 0.95 of its
rate'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require 2

# progs/ddp_loop runs a loop of collectives (a 1 MiB all-reduce, an 8-byte
# all-reduce, a barrier) in 9 phases of SECS seconds and prints each one's
# rate; progs/stranger_flood.py, as root, finds the ports the ranks listen
# on (as `ss -ltnp` would) from the moment they open, and its child, as
# the user nobody, holds CONNS silent connections to each of them in the
# even phases (0, from set-up on; 2, 4, 6, 8), opening a new
# one for each the ranks close, and none in the odd ones (1, 3, 5, 7).  The
# flooded and quiet phases alternate so that the machine's own ups and
# downs (other jobs) weigh on both alike; the ratio is of their sums.
# The last task starts ddp_init 2 s late, so that the others listen in
# set-up for that long: the strangers are on their ports before the links
# are made (opened_in_setup).  On the code
# before the gate (libjob/host/gate.c), every connection a rank accepted
# held it up for 0.1 s waiting for a hello: the flooded rate fell to 1-20%
# of the quiet one, or set-up failed (the strangers filled the table of
# connections being made, and the partner's was refused).
LOOP=$DDP_PROGS/ddp_loop
FLOOD=$DDP_SRC_DIR/tests/progs/stranger_flood.py
SECS=${DDP_STRANGERS_SECS:-3}
CONNS=${DDP_STRANGERS_CONNS:-30}
DDP_SRUN_TIMEOUT=$((SECS * 9 + 90))

test_expect_success 'python3 and the user nobody are here' '
	python3 -c "import pwd; pwd.getpwnam(\"nobody\")"
'

test_expect_success 'a loop of collectives with strangers on every port: right results' '
	rm -f phase &&
	{ python3 "$FLOOD" ddp_loop $CONNS "$PWD/phase" >flood.out 2>flood.err &
	  fpid=$!; } &&
	ddp_srun --mpi=pmix -N2 -n4 "$LOOP" $SECS 9 "$PWD/phase" 2 \
		>loop.out 2>loop.err
	rc=$?
	wait $fpid
	frc=$?
	cat loop.out loop.err flood.out flood.err
	uptime
	test $rc = 0 && test $frc = 0 &&
	test "$(grep -c "^ddp_loop rank .*: ok" loop.out)" = 4 &&
	test "$(grep -c "^ddp_loop phase" loop.out)" = 9
'

test_expect_success 'the strangers held their connections on the ports, from set-up on' '
	grep "^stranger_flood: ports [1-9][0-9]* conns $CONNS opened [1-9].* opened_in_setup [1-9]" \
		flood.out
'

# rate PHASE: the loop's iterations per second in that phase.
rate () {
	sed -n "s/^ddp_loop phase $1 .* rate \([0-9.]*\)$/\1/p" loop.out
}
# sum PHASES...: the sum of their rates.
sum () {
	for p in "$@"; do rate $p; done | awk "{ s += \$1 } END { printf \"%.1f\", s }"
}
ON=$(sum 2 4 6 8)
OFF=$(sum 1 3 5 7)
RATIO=$(awk -v a="$ON" -v b="$OFF" 'BEGIN { printf "%.3f", (b > 0 ? a / b : 0) }')

test_expect_success "flooded, the loop keeps >= 0.95 of its quiet rate: ratio $RATIO (it/s flooded $(echo $(rate 2) $(rate 4) $(rate 6) $(rate 8)), quiet $(echo $(rate 1) $(rate 3) $(rate 5) $(rate 7)); phase 0, flooded from set-up: $(rate 0))" '
	awk -v r="$RATIO" "BEGIN { exit !(r >= 0.95) }"
'

test_done
