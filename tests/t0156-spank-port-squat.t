#!/bin/sh
test_description='MASTER_PORT: another user squatting the port range (every claim name the plugin once used, a TCP listener on all ports but one) blocks no step; with nothing left, the refusal names the holders'
. "$(dirname "$0")/test-lib.sh"

# Issue 48: the user nobody, with no privilege, bound the abstract
# AF_UNIX name of every port of port_range ("slurm-ddp/master-port/PORT",
# how steps claimed their port) and so made every --ddp step on the node
# refused, told that another step held the port.  Here nobody
# (progs/port_squatter.py) binds all those names and listens on every TCP
# port of a 6-port range but its last one before the steps start: a
# one-node and a two-node step must still run, on that last port, and
# meet there (progs/port_rendezvous.py, as env:// would); once a step of
# ours holds that port too, the next steps are refused naming both
# holders: the step (job, step, uid) and the listeners' uid 65534; and a
# step whose slurmstepd is killed with -9 leaves no claim behind.
why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"
test -f "$DDP_PLUGIN" || ddp_cluster_unavailable "$DDP_PLUGIN not built"
# The system's python3: the user nobody runs it (not a shim under /root).
PY=/usr/bin/python3
test -x $PY || ddp_cluster_unavailable "no $PY"
command -v setpriv >/dev/null || ddp_cluster_unavailable "no setpriv"
id -u nobody >/dev/null 2>&1 || ddp_cluster_unavailable "no user nobody"

SQUAT=$DDP_SRC_DIR/tests/progs/port_squatter.py
MEET=$DDP_SRC_DIR/tests/progs/port_rendezvous.py
SPAN=6
# free_range LO: the first LO' >= LO, in steps of SPAN, where no TCP socket
# uses any of SPAN ports.  11000-11999: below the ephemeral range and
# apart from t0150's 12000-15999 and t0155's 16000-19999.
free_range () {
	lo=$1
	while ss -Hatn "( sport >= :$lo and sport <= :$((lo + SPAN - 1)) )" 2>/dev/null | grep -q . ; do
		lo=$((lo + SPAN))
	done
	echo $lo
}
LO=$(free_range $(( 11000 + ($$ % 100) * 8 )))
HI=$((LO + SPAN - 1))
PRIVATE=$(DDP_PLUGSTACK_ARGS="port_range=$LO-$HI" "$DDP_CLUSTER" start \
	2>"$SHARNESS_TEST_DIRECTORY/.t0156-start.err") ||
	ddp_cluster_unavailable "start failed: $(tail -n 20 "$SHARNESS_TEST_DIRECTORY/.t0156-start.err")"
rm -f "$SHARNESS_TEST_DIRECTORY/.t0156-start.err"
trap 'test -z "$squatter" || kill $squatter; test -z "$orphan" || kill $orphan
	"$DDP_CLUSTER" stop "$PRIVATE"; die' EXIT
. "$PRIVATE/env"
squatter= orphan=

# no_jobs: wait (30 s at most) until no job is left.
no_jobs () {
	i=0 && while squeue -h | grep -q . ; do
		test $i -lt 300 || return 1; sleep 0.1; i=$((i + 1)); done
}

test_expect_success "nobody squats all $SPAN claim names and listens on $LO-$((HI - 1)), before any step" '
	grep "port_range=$LO-$HI" "$PRIVATE/etc/plugstack.conf" &&
	ddp_node_exec n1 setpriv --reuid=nobody --regid=nogroup --clear-groups \
		$PY "$SQUAT" $LO $HI 600 $HI >squat.out 2>squat.err 3>&- 4>&- &
	i=0 && while ! grep -q "^squatting" squat.out 2>/dev/null; do
		test $i -lt 300 || { cat squat.err; return 1; }
		sleep 0.1; i=$((i + 1)); done &&
	squatter=$(sed -n "s/^pid //p" squat.out) &&
	cat squat.out squat.err &&
	grep -x "squatting $SPAN names, $((SPAN - 1)) listeners as uid 65534" squat.out
'
test_expect_success 'a one-node step runs on the one port left, and its ranks meet there' '
	ddp_srun --ddp=host -N1 -n2 -w n1 $PY "$MEET" >one.out 2>one.err ||
		{ cat one.out one.err; return 1; } &&
	cat one.out &&
	grep -x "rendezvous of 2 ranks on $HI" one.out &&
	grep -x "rank 1 met rank 0 on $HI" one.out
'
test_expect_success 'a two-node step too: its first node skips the squatted ports, the other learns which it took' '
	ddp_srun --ddp=host -N2 -n3 -w "n[1-2]" $PY "$MEET" >two.out 2>two.err ||
		{ cat two.out two.err; return 1; } &&
	cat two.out &&
	grep -x "rendezvous of 3 ranks on $HI" two.out &&
	grep -x "rank 1 met rank 0 on $HI" two.out &&
	grep -x "rank 2 met rank 0 on $HI" two.out
'
test_expect_success 'every task of a two-node step sees the same MASTER_PORT, the one left' '
	ddp_srun --ddp=host -N2 -n4 "$DDP_PROGS/rankview" MASTER_PORT >view.out &&
	echo "MASTER_PORT=$HI" >view.expected &&
	sort -u view.out >view.got &&
	test_cmp view.expected view.got &&
	test $(wc -l <view.out) = 4
'
test_expect_success 'with a step of ours on the last port, a one-node step is refused naming the step and the listeners'"'"' uid' '
	rm -f g.out ran &&
	( ddp_srun --ddp=host -N1 -w n1 sh -c "echo started; exec sleep 120" >g.out 2>g.err & ) &&
	i=0 && while ! grep -q "^started" g.out 2>/dev/null; do
		test $i -lt 300 || { cat g.err; return 1; }
		sleep 0.1; i=$((i + 1)); done &&
	job=$(squeue -h -o %i | head -n 1) &&
	test_must_fail ddp_srun --ddp=host -N1 -w n1 touch ran 2>h.err &&
	cat h.err &&
	grep "ddp: no free MASTER_PORT on n1, the step.s first node: of the $SPAN ports of port_range tried, from this step.s own ([0-9]*) on, 1 claimed by other steps running there (the first: job $job step 0 (uid 0)), $((SPAN - 1)) with a listening program of another user or step (uid 65534)" h.err &&
	grep "wider port_range (now $LO-$HI)" h.err &&
	test ! -e ran
'
test_expect_success '... and a two-node step too, with the same reason' '
	test_must_fail ddp_srun --ddp=host -N2 -w "n[1-2]" true 2>h2.err &&
	cat h2.err &&
	grep "ddp: no free MASTER_PORT on n1, the step.s first node: .* 1 claimed by other steps running there (the first: job [0-9]* step 0 (uid 0)), $((SPAN - 1)) with a listening program of another user or step (uid 65534)" h2.err
'
test_expect_success 'the step ends: its port is free again, the squatter still there' '
	scancel --quiet --user=root;
	no_jobs &&
	kill -0 $squatter &&
	ddp_srun --ddp=host -N2 -n2 "$DDP_PROGS/rankview" MASTER_PORT >after.out &&
	echo "MASTER_PORT=$HI" >after.expected &&
	sort -u after.out >after.got &&
	test_cmp after.expected after.got
'
# Crash safety: the claim is a flock, which the kernel drops with its
# holder, so a slurmstepd killed with -9 leaves no port claimed.
test_expect_success 'a step whose slurmstepd is killed with -9 leaves no claim: the port serves the next step' '
	rm -f k.out &&
	( ddp_srun --ddp=host -N1 -w n1 sh -c "echo started; exec sleep 120" >k.out 2>k.err & ) &&
	i=0 && while ! grep -q "^started" k.out 2>/dev/null; do
		test $i -lt 300 || { cat k.err; return 1; }
		sleep 0.1; i=$((i + 1)); done &&
	job=$(squeue -h -o %i | head -n 1) &&
	stepd=$(ddp_cluster_pgrep "^slurmstepd: \[$job\.0\]") &&
	orphan=$(pgrep -P $stepd) &&
	echo "job $job: slurmstepd $stepd, task $orphan" &&
	test_must_fail ddp_srun --ddp=host -N1 -w n1 true 2>k1.err &&
	grep "1 claimed by other steps running there (the first: job $job step 0" k1.err &&
	kill -9 $stepd &&
	ddp_srun --ddp=host -N2 -n2 "$DDP_PROGS/rankview" MASTER_PORT >k2.out &&
	echo "MASTER_PORT=$HI" >k2.expected &&
	sort -u k2.out >k2.got &&
	test_cmp k2.expected k2.got
'
test_expect_success 'cleanup' '
	test -z "$orphan" || kill $orphan;
	scancel --quiet --user=root;
	kill $squatter &&
	i=0 && while kill -0 $squatter 2>/dev/null; do
		test $i -lt 100 || return 1; sleep 0.1; i=$((i + 1)); done &&
	squatter=
'
test_done
