#!/bin/sh
test_description='--ddp steps in the life of jobs: failures end the step, arrays, concurrent steps, requeue, torchrun, heterogeneous steps'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

VARS="RANK WORLD_SIZE LOCAL_RANK NODE_RANK NNODES MASTER_ADDR MASTER_PORT
DDP_BACKEND DDP_RESTART_COUNT SLURM_PROCID SLURM_NODEID"

# ports FILE: the distinct MASTER_PORT values in FILE.
ports () {
	sed -n "s/.*MASTER_PORT=\([0-9]*\).*/\1/p" "$1" | sort -u
}

# ends_early CMD...: CMD fails, but not because ddp_srun's bound
# (DDP_SRUN_TIMEOUT, 60 s) killed it: its step ended as a whole although
# one task sleeps 100 s.  Judged by the time it took (ddp_at_bound), not
# by the status: srun itself exits 137 when Slurm SIGKILLs a task of a
# step it ends (Slurm 24.11, kill-on-bad-exit: twice in the Debian 13
# suite, the second time with the logs below showing the step over in 2
# s), the status timeout(1) gives when it kills at the bound.
ends_early () {
	t0=$(date +%s)
	"$@"
	rc=$?
	took=$(( $(date +%s) - t0 ))
	echo "exit status $rc after $took s"
	if ddp_at_bound "$t0"; then
		# Cut at the bound: show where the step stood.
		{ squeue -s; squeue; tail -n 40 "$DDP_CLUSTER_DIR"/log/slurmctld.log \
			"$DDP_CLUSTER_DIR"/log/slurmd-n1.log \
			"$DDP_CLUSTER_DIR"/log/slurmd-n2.log; } 2>&1 | ddp_show
		return 1
	fi
	test $rc != 0
}

# with_env NAME=VALUE ARGS...: ddp_srun ARGS with NAME=VALUE in its
# environment only.
with_env () {
	(export "$1" && shift && ddp_srun "$@")
}

test -x "$DDP_PROGS/pmix_probe" && test_set_prereq PMIX_PROBE

test_expect_success 'one node'"'"'s tasks refused at launch: the other node'"'"'s tasks do not wait' '
	ends_early ddp_srun --ddp=nccl -N2 -n3 --gres=gpu:1 \
		sh -c "exec sleep 100" 2>refused.err &&
	cat refused.err &&
	grep "ddp: --ddp=nccl needs a GPU per task, but this node has 2 local tasks and 1 GPUs" refused.err &&
	grep "task 2: Terminated" refused.err
'
test_expect_success 'a task exiting non-zero ends the whole step' '
	ends_early ddp_srun --ddp=host -N2 -n2 \
		sh -c "test \$RANK = 0 && exit 3; exec sleep 100" 2>exit3.err &&
	cat exit3.err &&
	grep "task 0: Exited with exit code 3" exit3.err
'
test_expect_success '-K0, --kill-on-bad-exit=0 and SLURM_KILL_BAD_EXIT=0 keep the other tasks running' '
	for how in -K0 --kill-on-bad-exit=0 env; do
		rm -f k0.out &&
		if test $how = env; then
			test_expect_code 3 with_env SLURM_KILL_BAD_EXIT=0 --ddp=host -N2 -n2 \
				sh -c "test \$RANK = 0 && exit 3; sleep 2; echo rank \$RANK done" >k0.out
		else
			test_expect_code 3 ddp_srun $how --ddp=host -N2 -n2 \
				sh -c "test \$RANK = 0 && exit 3; sleep 2; echo rank \$RANK done" >k0.out
		fi &&
		echo "rank 1 done" >k0.expected &&
		test_cmp k0.expected k0.out || return 1
	done
'
test_expect_success 'SLURM_KILL_BAD_EXIT set by the plugin does not reach the tasks; the user'"'"'s own does' '
	ddp_srun --ddp=host -N1 "$DDP_PROGS/rankview" SLURM_KILL_BAD_EXIT >kbe.out &&
	echo SLURM_KILL_BAD_EXIT=- >kbe.expected &&
	test_cmp kbe.expected kbe.out &&
	with_env SLURM_KILL_BAD_EXIT=1 --ddp=host -N1 "$DDP_PROGS/rankview" SLURM_KILL_BAD_EXIT >kbe1.out &&
	echo SLURM_KILL_BAD_EXIT=1 >kbe1.expected &&
	test_cmp kbe1.expected kbe1.out
'
test_expect_success 'DDP_RESTART_COUNT is 0 on a first run' '
	ddp_srun --ddp=host -N2 -n2 "$DDP_PROGS/rankview" DDP_RESTART_COUNT >restart0 &&
	test $(grep -c "^DDP_RESTART_COUNT=0$" restart0) = 2
'
test_expect_success 'a requeued job: DDP_RESTART_COUNT follows SLURM_RESTART_COUNT' '
	cat >requeue.sh <<-EOF &&
	#!/bin/sh
	#SBATCH --requeue
	srun --ddp=host -N2 -n2 "$DDP_PROGS/rankview" SLURM_RESTART_COUNT DDP_RESTART_COUNT >>requeue.out
	if [ "\${SLURM_RESTART_COUNT:-0}" = 0 ]; then
		scontrol requeue "\$SLURM_JOB_ID"
		sleep 60
	fi
	EOF
	rm -f requeue.out &&
	job=$(sbatch --parsable -N2 -n2 -o requeue.log requeue.sh) &&
	ddp_wait_job_gone "$job" 240 &&
	cat requeue.out &&
	test $(grep -c "^SLURM_RESTART_COUNT=- DDP_RESTART_COUNT=0$" requeue.out) = 2 &&
	test $(grep -c "^SLURM_RESTART_COUNT=1 DDP_RESTART_COUNT=1$" requeue.out) = 2
'
test_expect_success 'a job array: every array task'"'"'s --ddp step is right, on its own port' '
	cat >array.sh <<-EOF &&
	#!/bin/sh
	srun --ddp=host "$DDP_PROGS/rankview" $(echo $VARS) >array.\$SLURM_ARRAY_TASK_ID
	EOF
	timeout 120 sbatch --wait --array=1-3 -N2 -n3 -o array.log array.sh &&
	for t in 1 2 3; do
		cat array.$t &&
		test $(wc -l <array.$t) = 3 &&
		test $(grep -c " WORLD_SIZE=3 .* NNODES=2 .* DDP_BACKEND=host " array.$t) = 3 &&
		test $(ports array.$t | wc -l) = 1 || return 1
	done &&
	cat array.1 array.2 array.3 | sed -n "s/^RANK=\([0-9]\) .*SLURM_PROCID=\([0-9]\) .*/\1 \2/p" >ranks &&
	! awk "\$1 != \$2" ranks | grep . &&
	test $(wc -l <ranks) = 9
'
test_expect_success 'concurrent --ddp steps with --exact in one allocation: own ports, own GPUs' '
	cat >exact.sh <<-EOF &&
	#!/bin/sh
	for s in a b; do
		srun --exact --ddp=nccl -N2 -n4 --ntasks-per-node=2 --gres=gpu:2 sh -c \
			"\"$DDP_PROGS/rankview\" SLURMD_NODENAME MASTER_PORT CUDA_VISIBLE_DEVICES; sleep 2" >exact.\$s &
	done
	wait
	EOF
	timeout 60 salloc -N2 --ntasks-per-node=4 --gres=gpu:4 sh exact.sh &&
	cat exact.a exact.b &&
	test $(wc -l <exact.a) = 4 && test $(wc -l <exact.b) = 4 &&
	test "$(ports exact.a)" != "$(ports exact.b)" &&
	cat exact.a exact.b | sed "s/ MASTER_PORT=[0-9]*//" | sort | uniq -d >shared &&
	test_must_be_empty shared
'
# The steps before may leave a node completing for a while (once 76 s on
# n1 under Slurm 22.05, the step's tasks long gone: the next allocation of
# two nodes, and -w n[1-2], then waited past their timeout): wait for it.
test_expect_success 'concurrent --ddp steps with --overlap: both run, own ports' '
	ddp_wait_idle 120 &&
	cat >overlap.sh <<-EOF &&
	#!/bin/sh
	for s in a b; do
		srun --overlap --ddp=host -N2 -n2 sh -c \
			"\"$DDP_PROGS/rankview\" RANK MASTER_PORT; sleep 2" >overlap.\$s &
	done
	wait
	EOF
	timeout 60 salloc -N2 -n2 sh overlap.sh &&
	cat overlap.a overlap.b &&
	test $(wc -l <overlap.a) = 2 && test $(wc -l <overlap.b) = 2 &&
	test "$(ports overlap.a)" != "$(ports overlap.b)"
'
test_expect_success 'sbatch --ddp with srun inside: every step is a --ddp step, the batch step is not' '
	cat >batch.sh <<-EOF &&
	#!/bin/sh
	"$DDP_PROGS/rankview" RANK DDP_BACKEND SLURM_MPI_TYPE >batch.env
	srun "$DDP_PROGS/rankview" RANK DDP_BACKEND SLURM_MPI_TYPE >batch.step
	EOF
	timeout 60 sbatch --wait --ddp=host -N2 -n2 -o batch.log batch.sh &&
	cat batch.env batch.step &&
	echo "RANK=- DDP_BACKEND=- SLURM_MPI_TYPE=-" >batch.expected &&
	test_cmp batch.expected batch.env &&
	test $(grep -c "DDP_BACKEND=host SLURM_MPI_TYPE=pmix" batch.step) = 2
'

# A stand-in for torchrun: PyTorch is not installable here.
test_expect_success 'a fake torchrun for the tests below' '
	mkdir -p bin &&
	cat >bin/torchrun <<-EOF &&
	#!/bin/sh
	echo "\$SLURMD_NODENAME PET_NNODES=\$PET_NNODES PET_NODE_RANK=\$PET_NODE_RANK PET_MASTER_ADDR=\$PET_MASTER_ADDR PET_MASTER_PORT=\$PET_MASTER_PORT MASTER_PORT=\$MASTER_PORT CUDA_VISIBLE_DEVICES=\$CUDA_VISIBLE_DEVICES args=\$*"
	EOF
	chmod +x bin/torchrun
'
test_expect_success 'torchrun, one task per node: PET_* for its rendezvous, every GPU of the node' '
	ddp_wait_idle 120 &&
	ddp_srun --ddp=host -N2 -w "n[1-2]" --ntasks-per-node=1 --gres=gpu:2 \
		"$PWD/bin/torchrun" --nproc-per-node=2 train.py >torchrun.out &&
	sort torchrun.out >torchrun.sorted &&
	cat torchrun.sorted &&
	port=$(sed -n "1s/.* MASTER_PORT=\([0-9]*\) .*/\1/p" torchrun.sorted) &&
	addr=$(ddp_node_addr n1) &&
	cat >torchrun.expected <<-EOF &&
	n1 PET_NNODES=2 PET_NODE_RANK=0 PET_MASTER_ADDR=$addr PET_MASTER_PORT=$port MASTER_PORT=$port CUDA_VISIBLE_DEVICES=0,1 args=--nproc-per-node=2 train.py
	n2 PET_NNODES=2 PET_NODE_RANK=1 PET_MASTER_ADDR=$addr PET_MASTER_PORT=$port MASTER_PORT=$port CUDA_VISIBLE_DEVICES=0,1 args=--nproc-per-node=2 train.py
	EOF
	test_cmp torchrun.expected torchrun.sorted
'
test_expect_success 'torchrun with several tasks on a node: refused before launch, with what to run' '
	rm -f ran &&
	test_must_fail ddp_srun --ddp=host -N2 -n4 "$PWD/bin/torchrun" \
		--nproc-per-node=2 train.py >torchrun4.out 2>torchrun4.err &&
	cat torchrun4.err &&
	grep "ddp: this step runs torchrun, which starts its own workers, with 4 tasks on 2 nodes; run one task per node" torchrun4.err &&
	grep "or drop torchrun" torchrun4.err &&
	test_must_be_empty torchrun4.out
'
test_expect_success 'a program that is not torchrun gets no PET_* and its own GPU' '
	ddp_srun --ddp=host -N1 -n2 --gres=gpu:2 "$DDP_PROGS/rankview" PET_NNODES \
		CUDA_VISIBLE_DEVICES >notorch.out &&
	sort notorch.out >notorch.sorted &&
	printf "PET_NNODES=- CUDA_VISIBLE_DEVICES=0\nPET_NNODES=- CUDA_VISIBLE_DEVICES=1\n" >notorch.expected &&
	test_cmp notorch.expected notorch.sorted
'
test_expect_success 'a heterogeneous step is refused before launch, with the reason and what to do' '
	rm -f ran &&
	test_must_fail ddp_srun --ddp=host -N1 -n1 touch ran : -N1 -n1 touch ran 2>het.err &&
	cat het.err &&
	grep "ddp: --ddp does not support heterogeneous steps" het.err &&
	grep "drop --ddp and use --mpi=pmix" het.err &&
	test ! -e ran
'
# Slurm before 24.11: srun of a heterogeneous --mpi=pmix step hangs, about
# one time in three here, after its tasks have ended (each component joins
# the PMIx abort agent's thread, at the same time; SchedMD a2e9643694).
# What the test is about is the tasks' output: it waits for that (or for
# srun), then ends a hung srun and its job.  From 24.11 on (fixed there;
# re-checked on 24.11.5: 0 hangs in 20 runs) a hang is a failure.
# het_probe: run the step; true when srun ended by itself, or hung after
# both tasks reported on a Slurm older than 24.11.  The job's name is this
# run's own: the Debian 13 stage's suite may run this beside it.
het_probe () {
	p=$DDP_PROGS/pmix_probe
	: >het.out
	ddp_srun -J ddp-t0160-het-$$ --mpi=pmix -N1 -n1 "$p" : -N1 -n1 "$p" \
		>het.out 2>het.err &
	pid=$! end=$(( $(date +%s) + 60 ))
	while kill -0 $pid 2>/dev/null &&
	      test $(grep -c "^pmix ok" het.out) -lt 2 &&
	      test $(date +%s) -lt $end; do
		sleep 0.2
	done
	end=$(( $(date +%s) + 5 ))
	while kill -0 $pid 2>/dev/null && test $(date +%s) -lt $end; do
		sleep 0.2
	done
	if kill -0 $pid 2>/dev/null; then
		echo "srun still runs 5 s after its tasks reported: ended"
		scancel -n ddp-t0160-het-$$
		pkill -KILL -f "^srun -J ddp-t0160-het-$$ "
		wait $pid
		test $(grep -c "^pmix ok" het.out) = 2 &&
		test "$(ddp_slurm_version)" -lt 2411
	else
		wait $pid
	fi
}
test_expect_success PMIX_PROBE '... and PMIx does give its components one world, as the message says' '
	het_probe &&
	cat het.out &&
	test $(grep -c "^pmix ok rank=[01] size=2 " het.out) = 2 &&
	test $(sed -n "s/.* nspace=//p" het.out | sort -u | wc -l) = 1
'
test_done
