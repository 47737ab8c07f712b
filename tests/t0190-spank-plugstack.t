#!/bin/sh
test_description='plugstack.conf keys, and no trace of the plugin in jobs without --ddp'
. "$(dirname "$0")/test-lib.sh"

# These tests rewrite plugstack.conf, which slurmstepd rereads for every
# step, so they run on a private cluster and never disturb the shared one.
why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"
test -f "$DDP_PLUGIN" || ddp_cluster_unavailable "$DDP_PLUGIN not built"
PRIVATE=$("$DDP_CLUSTER" start 2>"$SHARNESS_TEST_DIRECTORY/.t0190-start.err") ||
	ddp_cluster_unavailable "start failed: $(tail -n 20 "$SHARNESS_TEST_DIRECTORY/.t0190-start.err")"
rm -f "$SHARNESS_TEST_DIRECTORY/.t0190-start.err"
trap '"$DDP_CLUSTER" stop "$PRIVATE"; die' EXIT
. "$PRIVATE/env"

# plugstack ARGS...|--none: what every new step loads.
plugstack () {
	"$DDP_CLUSTER" plugstack "$PRIVATE" "$@"
}

# Variables that differ between any two jobs, plugin or not (Slurm 24.11
# adds the job's start and end times, in seconds).
PER_JOB='^[0-9]+: SLURM_(JOB_?ID|SRUN_COMM_PORT|STEP_LAUNCHER_PORT|TASK_PID|JOB_START_TIME|JOB_END_TIME)='

test_expect_success 'no --ddp: byte-identical task environment with and without the plugin' '
	plugstack &&
	ddp_srun -N2 -n3 -l env | sort >with.env &&
	plugstack --none &&
	ddp_srun -N2 -n3 -l env | sort >without.env &&
	plugstack &&
	test $(wc -l <with.env) -gt 40 &&
	grep -Ev "$PER_JOB" with.env >with.cmp &&
	grep -Ev "$PER_JOB" without.env >without.cmp &&
	test_cmp without.cmp with.cmp
'
test_expect_success 'the comparison would see one more variable' '
	ddp_srun -N2 -n3 -l --export=ALL,EXTRA=1 env | sort | grep -Ev "$PER_JOB" >extra.cmp &&
	test_must_fail test_cmp without.cmp extra.cmp
'
test_expect_success 'default=auto: a plain srun gets ddp and PMIx, --ddp=off opts out' '
	plugstack default=auto &&
	ddp_srun -N2 -n2 "$DDP_PROGS/rankview" RANK DDP_BACKEND PMIX_RANK >auto &&
	ddp_srun --ddp=off -N1 -n1 "$DDP_PROGS/rankview" RANK DDP_BACKEND PMIX_RANK >off &&
	plugstack &&
	cat auto off &&
	grep -qx "RANK=0 DDP_BACKEND=host PMIX_RANK=0" auto &&
	grep -qx "RANK=1 DDP_BACKEND=host PMIX_RANK=1" auto &&
	grep -qx "RANK=- DDP_BACKEND=- PMIX_RANK=-" off
'
test_expect_success 'torch_env=no: only DDP_BACKEND and the binding' '
	plugstack torch_env=no &&
	ddp_srun --ddp=nccl -N1 -n2 --gres=gpu:2 env >notorch.env &&
	plugstack &&
	! grep -E "^(RANK|WORLD_SIZE|LOCAL_RANK|LOCAL_WORLD_SIZE|NODE_RANK|NNODES|MASTER_ADDR|MASTER_PORT|GROUP_RANK|ROLE_RANK|TORCHELASTIC_RUN_ID|OMP_NUM_THREADS)=" notorch.env &&
	test $(grep -c "^DDP_BACKEND=nccl$" notorch.env) = 2 &&
	grep -qx CUDA_VISIBLE_DEVICES=0 notorch.env &&
	grep -qx CUDA_VISIBLE_DEVICES=1 notorch.env
'
ELASTIC="GROUP_RANK GROUP_WORLD_SIZE ROLE_RANK ROLE_WORLD_SIZE ROLE_NAME TORCHELASTIC_RESTART_COUNT TORCHELASTIC_MAX_RESTARTS"
test_expect_success 'torchrun parity: what torchrun gives a worker, as for one agent a node' '
	ddp_srun --ddp -N2 -n4 --ntasks-per-node=2 -l "$DDP_PROGS/rankview" $ELASTIC \
		OMP_NUM_THREADS | sort >elastic &&
	cat elastic &&
	grep -qx "0: GROUP_RANK=0 GROUP_WORLD_SIZE=2 ROLE_RANK=0 ROLE_WORLD_SIZE=4 ROLE_NAME=default TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 OMP_NUM_THREADS=1" elastic &&
	grep -qx "1: GROUP_RANK=0 GROUP_WORLD_SIZE=2 ROLE_RANK=1 ROLE_WORLD_SIZE=4 ROLE_NAME=default TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 OMP_NUM_THREADS=1" elastic &&
	grep -qx "3: GROUP_RANK=1 GROUP_WORLD_SIZE=2 ROLE_RANK=3 ROLE_WORLD_SIZE=4 ROLE_NAME=default TORCHELASTIC_RESTART_COUNT=0 TORCHELASTIC_MAX_RESTARTS=0 OMP_NUM_THREADS=1" elastic &&
	ddp_srun --ddp -N2 -n2 "$DDP_PROGS/rankview" TORCHELASTIC_RUN_ID SLURM_JOB_ID \
		SLURM_STEP_ID >runid &&
	cat runid &&
	test $(sort -u runid | wc -l) = 1 &&
	sed -n "s/^TORCHELASTIC_RUN_ID=\([0-9]*\.[0-9]*\) SLURM_JOB_ID=\([0-9]*\) SLURM_STEP_ID=\([0-9]*\)\$/\1 \2.\3/p" runid >ids &&
	read a b <ids && test "$a" = "$b"
'
test_expect_success 'OMP_NUM_THREADS: the task'"'"'s CPUs, never over the user'"'"'s own' '
	ddp_srun --ddp -N1 -n2 -c 3 "$DDP_PROGS/rankview" OMP_NUM_THREADS >omp3 &&
	ddp_srun --ddp -N1 -n2 --export=ALL,OMP_NUM_THREADS=7 "$DDP_PROGS/rankview" \
		OMP_NUM_THREADS >omp7 &&
	ddp_srun -N1 -n1 "$DDP_PROGS/rankview" OMP_NUM_THREADS GROUP_RANK >nodpp &&
	cat omp3 omp7 nodpp &&
	test $(grep -cx OMP_NUM_THREADS=3 omp3) = 2 &&
	test $(grep -cx OMP_NUM_THREADS=7 omp7) = 2 &&
	grep -qx "OMP_NUM_THREADS=- GROUP_RANK=-" nodpp
'
test_expect_success 'torch_env=GROUP,...: each group alone' '
	plugstack torch_env=env,omp &&
	ddp_srun --ddp -N1 -n2 "$DDP_PROGS/rankview" RANK GROUP_RANK OMP_NUM_THREADS >envomp &&
	plugstack torch_env=elastic &&
	ddp_srun --ddp -N1 -n2 "$DDP_PROGS/rankview" RANK GROUP_RANK OMP_NUM_THREADS >elastic1 &&
	plugstack &&
	cat envomp elastic1 &&
	grep -qx "RANK=1 GROUP_RANK=- OMP_NUM_THREADS=1" envomp &&
	grep -qx "RANK=- GROUP_RANK=0 OMP_NUM_THREADS=-" elastic1
'
test_expect_success 'bind=none: the admin turns binding off' '
	plugstack bind=none &&
	ddp_srun --ddp=nccl -N1 -n2 --gres=gpu:2 "$DDP_PROGS/rankview" CUDA_VISIBLE_DEVICES >nobind &&
	plugstack &&
	test $(grep -cx CUDA_VISIBLE_DEVICES=0,1 nobind) = 2
'
test_expect_success 'port_range=LO-HI: MASTER_PORT comes from it' '
	plugstack port_range=41000-41000 &&
	ddp_srun --ddp -N2 -n2 "$DDP_PROGS/rankview" MASTER_PORT >port &&
	plugstack &&
	test $(grep -cx MASTER_PORT=41000 port) = 2
'
test_expect_success 'a bad key in the cluster plugstack.conf: srun refuses, naming it' '
	plugstack oops=1 &&
	test_must_fail ddp_srun -N1 true 2>oops.err &&
	plugstack &&
	cat oops.err &&
	grep "ddp: plugstack.conf: unknown key .oops." oops.err
'
# A bad line in the nodes' plugstack.conf only (srun's own copy is good):
# Slurm would launch no task and 22.05's srun exit 0; the plugin loads
# there, refuses the --ddp steps saying why, and lets the others run.
test_expect_success 'a bad line on the nodes only: --ddp steps fail with the reason, plain steps run' '
	sed "s|^PlugStackConfig=.*|PlugStackConfig=\"$PWD/good-plugstack.conf\"|" \
		"$SLURM_CONF" >srun.conf &&
	echo "required $DDP_PLUGIN" >good-plugstack.conf &&
	plugstack oops=1 &&
	rm -f ran.* randdp.* &&
	env SLURM_CONF="$PWD/srun.conf" timeout 60 srun -N2 -n2 \
		sh -c "touch ran.\$SLURM_PROCID" &&
	test_expect_code 1 env SLURM_CONF="$PWD/srun.conf" timeout 60 srun --ddp \
		-N2 -n2 sh -c "touch randdp.\$SLURM_PROCID" 2>nodes.err;
	rc=$? &&
	plugstack &&
	cat nodes.err &&
	test $rc = 0 &&
	test -e ran.0 && test -e ran.1 &&
	! ls randdp.* 2>/dev/null &&
	grep "ddp: plugstack.conf: unknown key .oops. .* (the plugstack.conf of node n[12]; srun.s copy was accepted): this node refuses --ddp steps until an admin fixes it; steps without --ddp run" nodes.err
'
test_expect_success 'socket_ifname: a malformed value is refused at load, naming key, value and grammar' '
	plugstack socket_ifname=eth0,,ib &&
	test_must_fail ddp_srun -N1 true 2>ifname.err &&
	plugstack socket_ifname= &&
	test_must_fail ddp_srun -N1 true 2>ifname_empty.err &&
	plugstack &&
	cat ifname.err ifname_empty.err &&
	grep "ddp: plugstack.conf: bad value for key .socket_ifname.: socket_ifname=.eth0,,ib. has an empty name: give interface names or name prefixes separated by commas" ifname.err &&
	grep "ddp: plugstack.conf: bad value .. for key .socket_ifname." ifname_empty.err
'
test_expect_success 'socket_ifname=VALUE: --ddp tasks get it unless they have their own, other steps nothing' '
	plugstack socket_ifname=^docker,lo &&
	ddp_srun --ddp -N2 -n2 "$DDP_PROGS/rankview" DDP_SOCKET_IFNAME NCCL_SOCKET_IFNAME >ifsite &&
	ddp_srun --ddp -N1 -n1 --export=ALL,DDP_SOCKET_IFNAME=eth "$DDP_PROGS/rankview" \
		DDP_SOCKET_IFNAME NCCL_SOCKET_IFNAME >ifuser &&
	ddp_srun -N1 -n1 "$DDP_PROGS/rankview" DDP_SOCKET_IFNAME NCCL_SOCKET_IFNAME >ifoff &&
	plugstack socket_ifname=eth0:1 &&
	ddp_srun --ddp -N1 -n1 "$DDP_PROGS/rankview" DDP_SOCKET_IFNAME NCCL_SOCKET_IFNAME >iflabel &&
	plugstack &&
	cat ifsite ifuser ifoff iflabel &&
	test "$(grep -cx "DDP_SOCKET_IFNAME=^docker,lo NCCL_SOCKET_IFNAME=^docker,lo" ifsite)" = 2 &&
	grep -qx "DDP_SOCKET_IFNAME=eth NCCL_SOCKET_IFNAME=eth" ifuser &&
	grep -qx "DDP_SOCKET_IFNAME=- NCCL_SOCKET_IFNAME=-" ifoff &&
	grep -qx "DDP_SOCKET_IFNAME=eth0:1 NCCL_SOCKET_IFNAME=-" iflabel
'
# Before, slurmstepd's refusal to load made Slurm launch no task, and
# Slurm 22.05's srun exit 0 ("task 0 launch failed: Plugin initialization
# failed"): a job that "succeeded" without running.  Now the plugin loads
# there and the step runs; the node's log names the key.
test_expect_success 'a bad key seen only by slurmstepd, srun without the plugin: the step runs, the log names it' '
	sed "s|^PlugStackConfig=.*|PlugStackConfig=/nonexistent/plugstack.conf|" \
		"$SLURM_CONF" >slurm.conf &&
	plugstack oops=1 &&
	rm -f ran &&
	env SLURM_CONF="$PWD/slurm.conf" timeout 60 srun -N1 touch ran 2>remote.err;
	rc=$?
	plugstack &&
	cat remote.err &&
	test $rc = 0 &&
	test -e ran &&
	! grep "launch failed" remote.err &&
	grep "error: ddp: plugstack.conf: unknown key .oops..*; this node refuses every --ddp step until its plugstack.conf is fixed (steps without --ddp run)" "$PRIVATE"/log/slurmd-n1.log
'
test_done
