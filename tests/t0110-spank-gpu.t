#!/bin/sh
test_description='srun --ddp binds each task to one GPU of its step, or says why not'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

# gpus ARGS...: srun ARGS rankview with the GPU view, one line per task.
gpus () {
	ddp_srun "$@" "$DDP_PROGS/rankview" SLURMD_NODENAME LOCAL_RANK \
		DDP_BACKEND CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS
}

# check_bound FILE: each task has one GPU, taken from its step's GPUs on
# its node, and no two tasks of a node share one.
check_bound () {
	awk '
	{
		delete v
		for (i = 1; i <= NF; i++) {
			eq = index($i, "="); v[substr($i, 1, eq - 1)] = substr($i, eq + 1)
		}
		g = v["CUDA_VISIBLE_DEVICES"]; node = v["SLURMD_NODENAME"]
		if (g !~ /^[0-9]+$/) { print "not one GPU: " $0; errors++ }
		if (("," v["SLURM_STEP_GPUS"] ",") !~ ("," g ","))
			{ print "GPU outside the step: " $0; errors++ }
		if (used[node, g]++) { print "GPU shared: " $0; errors++ }
		if (v["DDP_BACKEND"] != "nccl") { print "backend: " $0; errors++ }
	}
	END { exit errors ? 1 : 0 }' "$1"
}

# -w: the checks name n1 and n2, and the shared cluster has more nodes (t0000).
# The fake GPUs have no driver, so --ddp=auto refuses nccl here; t0140 runs
# auto on a cluster whose nodes have a fake driver.
test_expect_success '--gres=gpu:2, 2 tasks per node: distinct GPUs, nccl' '
	gpus --ddp=nccl -N2 -w "n[1-2]" --ntasks-per-node=2 --gres=gpu:2 >two &&
	cat two &&
	test $(wc -l <two) = 4 &&
	check_bound two &&
	grep -q "^SLURMD_NODENAME=n1 LOCAL_RANK=0 DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=0 " two &&
	grep -q "^SLURMD_NODENAME=n2 LOCAL_RANK=1 DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=1 " two
'
test_expect_success 'the checker catches a shared GPU' '
	sed "s/CUDA_VISIBLE_DEVICES=1 /CUDA_VISIBLE_DEVICES=0 /" two >shared &&
	test_must_fail check_bound shared
'
test_expect_success 'GPUs held by another job: binding stays inside this step' '
	rm -f holder.started &&
	( ddp_srun -N1 -w n1 --gres=gpu:2 sh -c \
		"echo \$SLURM_JOB_ID >holder.job;
		 echo \$CUDA_VISIBLE_DEVICES >holder.started; sleep 30" & ) &&
	i=0 && while [ ! -s holder.started ] && [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1)); done &&
	held=$(cat holder.started) && test -n "$held" &&
	gpus --ddp=nccl -N1 -w n1 -n2 --gres=gpu:2 >inside;
	rc=$? &&
	scancel --quiet "$(cat holder.job)";
	cat inside && echo "holder has $held" &&
	test $rc = 0 && check_bound inside &&
	for g in $(echo $held | tr , " "); do
		! grep -q "CUDA_VISIBLE_DEVICES=$g " inside || return 1
	done
'
test_expect_success '--gpus-per-task=1: each task keeps its own GPU' '
	gpus --ddp=nccl -N1 -n2 --gpus-per-task=1 >pertask &&
	cat pertask &&
	check_bound pertask &&
	test $(cut -d" " -f4 pertask | sort -u | wc -l) = 2
'
test_expect_success '3 tasks on 2 GPUs with nccl fails and names the counts' '
	test_must_fail gpus --ddp=nccl -N1 -n3 --gres=gpu:2 >three.out 2>three.err &&
	cat three.err &&
	grep "ddp: --ddp=nccl needs a GPU per task, but this node has 3 local tasks and 2 GPUs" three.err
'
test_expect_success '3 tasks on 2 GPUs with auto falls back to host, GPUs untouched' '
	gpus --ddp=auto -N1 -n3 --gres=gpu:2 >three.auto &&
	cat three.auto &&
	test $(grep -c "DDP_BACKEND=host CUDA_VISIBLE_DEVICES=0,1 " three.auto) = 3
'
test_expect_success 'nccl on a step without GPUs fails and says so' '
	test_must_fail ddp_srun --ddp=nccl -N1 -n1 true 2>nogpu.err &&
	cat nogpu.err &&
	grep "ddp: --ddp=nccl needs a GPU per task, but this step has no GPU on this node (1 local tasks, 0 GPUs)" nogpu.err
'
test_expect_success '--ddp=nccl,nobind: the user keeps every GPU visible' '
	gpus --ddp=nccl,nobind -N1 -n2 --gres=gpu:2 >nobind &&
	cat nobind &&
	test $(grep -c "DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=0,1 " nobind) = 2
'
test_expect_success '--ddp=host with one GPU per task binds too' '
	gpus --ddp=host -N1 -n2 --gres=gpu:2 >host &&
	cat host &&
	grep -q "LOCAL_RANK=1 DDP_BACKEND=host CUDA_VISIBLE_DEVICES=1 " host
'
test_done
