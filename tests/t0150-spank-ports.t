#!/bin/sh
test_description='MASTER_PORT: Slurm reserved ports when there are some, a claim for the step, a clear refusal when the port is taken'
. "$(dirname "$0")/test-lib.sh"

# A private cluster: it has reserved ports (MpiParams=ports=), and the
# tests shrink port_range to one port in its plugstack.conf.
why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"
test -f "$DDP_PLUGIN" || ddp_cluster_unavailable "$DDP_PLUGIN not built"
test -x "$DDP_PROGS/port_holder" || ddp_cluster_unavailable "tests/progs/port_holder not built"

# free_port LO: the first port from LO on that no TCP socket uses.
free_port () {
	p=$1
	while ss -Hatn "sport = :$p" 2>/dev/null | grep -q . ; do
		p=$((p + 1))
	done
	echo $p
}
# The ports lie in 12000-15999: below the ephemeral range (32768 up), where
# any connection (Slurm's own RPCs) may take the one port the tests hold
# (a CI run: port_holder's bind failed), and below the test clusters'
# 20000-29499.
RESV_LO=$(( 12000 + ($$ % 100) * 40 ))
RESV_HI=$(( RESV_LO + 19 ))
ONE=$(free_port $(( RESV_LO + 20 )))
PRIVATE=$(DDP_CLUSTER_RESV_PORTS=$RESV_LO-$RESV_HI "$DDP_CLUSTER" start \
	2>"$SHARNESS_TEST_DIRECTORY/.t0150-start.err") ||
	ddp_cluster_unavailable "start failed: $(tail -n 20 "$SHARNESS_TEST_DIRECTORY/.t0150-start.err")"
rm -f "$SHARNESS_TEST_DIRECTORY/.t0150-start.err"
trap '"$DDP_CLUSTER" stop "$PRIVATE"; die' EXIT
. "$PRIVATE/env"

# ports FILE: the distinct MASTER_PORT values in FILE.
ports () {
	sed -n "s/.*MASTER_PORT=\([0-9]*\).*/\1/p" "$1" | sort -u
}

# hold NAME ARGS...: start srun ARGS port_holder 60 in the background and
# wait until it listens; its output goes to NAME.out.
hold () {
	name=$1; shift
	rm -f "$name.out"
	( ddp_srun "$@" "$DDP_PROGS/port_holder" 60 >"$name.out" 2>"$name.err" & ) &&
	i=0 && while ! grep -q "^listening on" "$name.out" 2>/dev/null; do
		test $i -lt 300 || { cat "$name.err"; return 1; }
		sleep 0.1; i=$((i + 1))
	done &&
	cat "$name.out"
}

test_expect_success 'with reserved ports, MASTER_PORT is the step'"'"'s last reserved port, the same on every task' '
	grep -x "MpiParams=ports=$RESV_LO-$RESV_HI" "$SLURM_CONF" &&
	ddp_srun --ddp=host -N2 -n3 "$DDP_PROGS/rankview" MASTER_PORT \
		SLURM_STEP_RESV_PORTS >resv.out &&
	cat resv.out &&
	test $(ports resv.out | wc -l) = 1 &&
	last=$(sed -n "1s/.*SLURM_STEP_RESV_PORTS=//p" resv.out | tr ",-" "\n\n" | tail -n 1) &&
	test "$(ports resv.out)" = "$last" &&
	test $last -ge $RESV_LO && test $last -le $RESV_HI
'
test_expect_success 'port_range shrunk to one free port, for the tests below' '
	"$DDP_CLUSTER" plugstack "$PRIVATE" port_range=$ONE-$ONE &&
	ddp_srun --resv-ports=0 --ddp=host -N1 "$DDP_PROGS/rankview" MASTER_PORT \
		SLURM_STEP_RESV_PORTS >one.out &&
	echo "MASTER_PORT=$ONE SLURM_STEP_RESV_PORTS=-" >one.expected &&
	test_cmp one.expected one.out
'
test_expect_success 'a step holds the one port; another job'"'"'s step on the same node is refused, naming it' '
	hold a --resv-ports=0 --ddp=host -N1 -w n1 &&
	grep -x "listening on $ONE" a.out &&
	job=$(squeue -h -n port_holder -o %i | head -n 1) &&
	rm -f ran &&
	test_must_fail ddp_srun --resv-ports=0 --ddp=host -N1 -w n1 touch ran 2>b.err &&
	cat b.err &&
	grep "ddp: no free MASTER_PORT on n1, the step.s first node: of the 1 ports of port_range tried, from this step.s own ($ONE) on, 1 claimed by other steps running there (the first: job $job step 0 (uid 0))" b.err &&
	grep "srun --resv-ports" b.err &&
	grep "wider port_range (now $ONE-$ONE)" b.err &&
	test ! -e ran
'
# (A multi-node step is refused on its first node only: the other nodes'
# tasks start and are killed by kill-on-bad-exit, so they run "true".)
test_expect_success '... and a two-node step whose first node it is, naming the step' '
	test_must_fail ddp_srun --resv-ports=0 --ddp=host -N2 -w "n[1-2]" true 2>b2.err &&
	cat b2.err &&
	grep "ddp: no free MASTER_PORT on n1, the step.s first node: .* 1 claimed by other steps running there (the first: job [0-9]* step 0 (uid 0))" b2.err &&
	grep "MpiParams=ports=LO-HI" b2.err
'
test_expect_success '... while with reserved ports the same two steps get distinct ports and both run' '
	ddp_srun --ddp=host -N1 -w n1 "$DDP_PROGS/rankview" MASTER_PORT >c.out &&
	cat c.out &&
	test "$(ports c.out)" != "$ONE" &&
	test $(ports c.out) -ge $RESV_LO
'
test_expect_success 'two concurrent steps with reserved ports on the same nodes: distinct ports' '
	hold d --ddp=host -N1 -w n1 &&
	ddp_srun --ddp=host -N2 -n2 "$DDP_PROGS/rankview" MASTER_PORT >e.out &&
	d=$(sed -n "s/^listening on //p" d.out | sort -u) &&
	test $(echo "$d" | wc -l) = 1 &&
	test "$(ports e.out)" != "$d"
'
# no_jobs: wait (30 s at most) until no job is left.
no_jobs () {
	i=0 && while squeue -h | grep -q . ; do
		test $i -lt 300 || return 1; sleep 0.1; i=$((i + 1)); done
}
test_expect_success 'once the holder is gone, the one port works again' '
	scancel --quiet --user=root;
	i=0 && while ddp_node_exec n1 ss -Hltn "sport = :$ONE" | grep -q . ; do
		test $i -lt 300 || return 1; sleep 0.1; i=$((i + 1)); done &&
	no_jobs &&
	ddp_srun --resv-ports=0 --ddp=host -N1 -w n1 "$DDP_PROGS/rankview" MASTER_PORT >f.out &&
	echo "MASTER_PORT=$ONE" >f.expected &&
	test_cmp f.expected f.out
'
# The claim, not a listener: a step that has not listened yet (its rank 0
# still loading PyTorch, or never listening at all) holds its port all the
# same, until it ends.
test_expect_success 'a step that does not listen still holds its port: a second step on its node is refused' '
	rm -f g.out ran &&
	( ddp_srun --resv-ports=0 --ddp=host -N1 -w n1 sh -c "echo started; exec sleep 60" >g.out 2>g.err & ) &&
	i=0 && while ! grep -q "^started" g.out 2>/dev/null; do
		test $i -lt 300 || { cat g.err; return 1; }
		sleep 0.1; i=$((i + 1)); done &&
	! ddp_node_exec n1 ss -Hltn "sport = :$ONE" | grep -q . &&
	test_must_fail ddp_srun --resv-ports=0 --ddp=host -N1 -w n1 touch ran 2>h.err &&
	cat h.err &&
	grep "ddp: no free MASTER_PORT on n1" h.err &&
	test ! -e ran &&
	test_must_fail ddp_srun --resv-ports=0 --ddp=host -N2 -w "n[1-2]" true 2>h2.err &&
	cat h2.err &&
	grep "ddp: no free MASTER_PORT on n1, the step.s first node: .* 1 claimed by other steps" h2.err
'
test_expect_success 'the claim ends with the step: the port works again' '
	scancel --quiet --user=root;
	no_jobs &&
	ddp_srun --resv-ports=0 --ddp=host -N1 -w n1 "$DDP_PROGS/rankview" MASTER_PORT >i.out &&
	echo "MASTER_PORT=$ONE" >i.expected &&
	test_cmp i.expected i.out
'
test_expect_success 'a listener that is no step: a two-node step is refused, naming the port in use' '
	rm -f j.out &&
	ddp_node_exec n1 "$DDP_PROGS/port_holder" $ONE 60 >j.out 2>j.err &
	holder=$! &&
	i=0 && while ! grep -q "^listening on" j.out 2>/dev/null; do
		test $i -lt 300 || { cat j.err; kill $holder; return 1; }
		sleep 0.1; i=$((i + 1)); done &&
	test_must_fail ddp_srun --resv-ports=0 --ddp=host -N2 -w "n[1-2]" true 2>k.err;
	rc=$?; kill $holder; wait $holder;
	cat k.err &&
	test $rc = 0 &&
	grep "ddp: no free MASTER_PORT on n1, the step.s first node: of the 1 ports of port_range tried, from this step.s own ($ONE) on, 1 with a listening program of another user or step (uid 0)" k.err &&
	grep "wider port_range (now $ONE-$ONE)" k.err
'
test_done
