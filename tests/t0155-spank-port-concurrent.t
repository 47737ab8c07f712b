#!/bin/sh
test_description='MASTER_PORT: many steps at once on one node get distinct ports, each held for the step'
. "$(dirname "$0")/test-lib.sh"

# 24 one-task jobs started together on one node, as 24 one-GPU jobs on a
# node with 8 GPUs a few times over, each listening on its MASTER_PORT with
# SO_REUSEADDR as PyTorch's TCPStore does (port_holder).  The plugin's
# port_range is shrunk to 30 ports, so ports derived from the job and step
# ids alone would collide on almost every run (the birthday bound: all 24
# distinct with odds below 1e-4); the claim each step's first node takes
# (sp_port_lock), and the walk of a step to a free port, must
# give every step its own.
why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"
test -f "$DDP_PLUGIN" || ddp_cluster_unavailable "$DDP_PLUGIN not built"
test -x "$DDP_PROGS/port_holder" || ddp_cluster_unavailable "tests/progs/port_holder not built"

N=24
SPAN=${DDP_T0155_SPAN:-30}   # by hand: 500, the default range
# free_range LO: the first LO' >= LO, in steps of SPAN, where no TCP socket
# uses any of SPAN ports.  16000-19999: below the ephemeral range (32768
# up) and the test clusters' 20000-29499, apart from t0150's 12000-15999.
free_range () {
	lo=$1
	while ss -Hatn "( sport >= :$lo and sport <= :$((lo + SPAN - 1)) )" 2>/dev/null | grep -q . ; do
		lo=$((lo + SPAN))
	done
	echo $lo
}
LO=$(free_range $(( 16000 + ($$ % 100) * 30 )))
HI=$((LO + SPAN - 1))
PRIVATE=$(DDP_PLUGSTACK_ARGS="port_range=$LO-$HI" "$DDP_CLUSTER" start --nodes 1 \
	2>"$SHARNESS_TEST_DIRECTORY/.t0155-start.err") ||
	ddp_cluster_unavailable "start failed: $(tail -n 20 "$SHARNESS_TEST_DIRECTORY/.t0155-start.err")"
rm -f "$SHARNESS_TEST_DIRECTORY/.t0155-start.err"
trap '"$DDP_CLUSTER" stop "$PRIVATE"; die' EXIT
. "$PRIVATE/env"

# listening: how many steps listen now.
listening () {
	cat h*.out 2>/dev/null | grep -c "^listening on"
}
# ended: how many sruns have ended (each writes its status to hI.rc).
ended () {
	ls h*.rc 2>/dev/null | wc -l
}

# start_holders: N one-task steps on n1 at once, each holding its
# MASTER_PORT (port_holder); wait (3 min at most) until all listen or one
# ended, and say which.
start_holders () {
	rm -f h*.out h*.err h*.rc &&
	for i in $(seq $N); do
		( DDP_SRUN_TIMEOUT=300 ddp_srun -s --ddp=host -N1 -n1 -w n1 \
			"$DDP_PROGS/port_holder" 240 >h$i.out 2>h$i.err;
		  echo $? >h$i.rc ) &
	done &&
	i=0 && while test $(listening) -lt $N && test $(ended) = 0; do
		test $i -lt 1800 || break
		sleep 0.1; i=$((i + 1))
	done &&
	echo "after $((i / 10)) s: $(listening) listening, $(ended) ended"
}
# end_holders: cancel them; wait (1 min at most) until every srun ended.
end_holders () {
	scancel --quiet --user=root
	i=0 && while test $(ended) -lt $N; do
		test $i -lt 600 || return 1; sleep 0.1; i=$((i + 1)); done
}

test_expect_success "port_range is $SPAN ports, for $N steps" '
	grep "port_range=$LO-$HI" "$PRIVATE/etc/plugstack.conf"
'
test_expect_success "$N one-task steps started together on one node all listen at once, on $N distinct ports" '
	start_holders &&
	cat h*.out &&
	cat h*.err &&
	test $(ended) = 0 &&
	test $(listening) = $N &&
	cat h*.out | sed -n "s/^listening on //p" | sort -u >ports &&
	test $(wc -l <ports) = $N &&
	test $(head -n 1 ports) -ge $LO && test $(tail -n 1 ports) -le $HI
'
test_expect_success 'the steps end, and give their ports back: another '"$N"' get ports' '
	end_holders &&
	i=0 && while squeue -h | grep -q . ; do
		test $i -lt 600 || return 1; sleep 0.1; i=$((i + 1)); done &&
	start_holders &&
	test $(ended) = 0 &&
	test $(listening) = $N &&
	cat h*.out | sed -n "s/^listening on //p" | sort -u >ports2 &&
	test $(wc -l <ports2) = $N
'
test_expect_success 'cleanup' '
	end_holders
'
test_done
