#!/bin/sh
test_description='srun --ddp binds each task to one GPU of its step, or says why not'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

# gpus ARGS...: srun ARGS rankview with the GPU view, one line per task.
gpus () {
	gpus_and "" "$@"
}

# gpus_and "VAR..." ARGS...: the same, with the VARs printed after the rest.
gpus_and () {
	extra=$1
	shift
	# shellcheck disable=SC2086
	ddp_srun "$@" "$DDP_PROGS/rankview" SLURMD_NODENAME LOCAL_RANK \
		DDP_BACKEND CUDA_VISIBLE_DEVICES SLURM_STEP_GPUS $extra
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

# check_shares FILE N BACKEND: each task keeps a share of N GPUs of its own
# (its SLURM_STEP_GPUS), no two tasks of a node share one, and the plugin
# told libddp to use the first (DDP_DEVICE=0).
check_shares () {
	awk -v n="$2" -v b="$3" '
	{
		delete v
		for (i = 1; i <= NF; i++) {
			eq = index($i, "="); v[substr($i, 1, eq - 1)] = substr($i, eq + 1)
		}
		g = v["CUDA_VISIBLE_DEVICES"]; node = v["SLURMD_NODENAME"]
		if (g != v["SLURM_STEP_GPUS"]) { print "not its share: " $0; errors++ }
		if (split(g, l, ",") != n) { print "not " n " GPUs: " $0; errors++ }
		for (j in l) if (used[node, l[j]]++) { print "GPU shared: " $0; errors++ }
		if (v["DDP_DEVICE"] != "0") { print "DDP_DEVICE: " $0; errors++ }
		if (v["DDP_BACKEND"] != b) { print "backend: " $0; errors++ }
	}
	END { exit errors ? 1 : 0 }' "$1"
}

test_expect_success '--gpus-per-task=2: each task keeps both its GPUs, DDP_DEVICE=0' '
	gpus_and DDP_DEVICE --ddp=nccl -N2 -w "n[1-2]" --ntasks-per-node=2 \
		--gpus-per-task=2 >pair &&
	cat pair &&
	test $(wc -l <pair) = 4 &&
	check_shares pair 2 nccl
'
test_expect_success 'the share checker catches a narrowed share and a missing DDP_DEVICE' '
	sed "1s/CUDA_VISIBLE_DEVICES=\([0-9]\),[0-9] /CUDA_VISIBLE_DEVICES=\1 /" pair >narrowed &&
	! cmp -s pair narrowed &&
	test_must_fail check_shares narrowed 2 nccl &&
	sed "1s/DDP_DEVICE=0/DDP_DEVICE=-/" pair >nodev &&
	! cmp -s pair nodev &&
	test_must_fail check_shares nodev 2 nccl
'
test_expect_success '--gpus-per-task=2 with --ddp=host: the same' '
	gpus_and DDP_DEVICE --ddp=host -N1 -n2 --gpus-per-task=2 >pairhost &&
	cat pairhost &&
	check_shares pairhost 2 host
'
test_expect_success '--gpus-per-task=2, a DDP_DEVICE of the user: kept' '
	DDP_DEVICE=1 && export DDP_DEVICE &&
	gpus_and DDP_DEVICE --ddp=nccl -N1 -n2 --gpus-per-task=2 >pairuser;
	rc=$? && unset DDP_DEVICE && test $rc = 0 &&
	cat pairuser &&
	test $(grep -c "DDP_DEVICE=1\$" pairuser) = 2
'
test_expect_success '--gpus-per-task=2 with nobind: shares untouched, no DDP_DEVICE' '
	gpus_and DDP_DEVICE --ddp=nccl,nobind -N1 -n2 --gpus-per-task=2 >pairnobind &&
	cat pairnobind &&
	test $(grep -c "CUDA_VISIBLE_DEVICES=[0-9],[0-9] .*DDP_DEVICE=-\$" pairnobind) = 2
'

mock=$DDP_BUILD_DIR/tests/progs/.libs/nccl_mock.so
test -f "$mock" && test_set_prereq MOCK

# The library on the stand-in CUDA/NCCL (tests/progs/nccl_mock.c): each
# rank sees its two GPUs as devices 0 and 1; without DDP_DEVICE local rank
# 1 would take device 1.
test_expect_success MOCK '--gpus-per-task=2: libddp uses device 0 of each share and says why' '
	ddp_srun --ddp=nccl -N1 -n2 --gpus-per-task=2 env LD_PRELOAD="$mock" \
		MOCK_NCCL_PEERS=fake DDP_DEBUG=1 "$DDP_PROGS/nccl_probe" \
		>pairlib.out 2>pairlib.err &&
	cat pairlib.out && grep "nccl: " pairlib.err &&
	test $(grep -c "^init ok rank=[01] size=2 backend=nccl comm=yes stream=yes device=0\$" pairlib.out) = 2 &&
	test $(grep -c "nccl: CUDA device 0 of the 2 this task sees (CUDA_VISIBLE_DEVICES=[0-9],[0-9]), as DDP_DEVICE says" pairlib.err) = 2
'
test_expect_success MOCK 'the user'"'"'s DDP_DEVICE=1 makes it device 1, and 2 is refused' '
	ddp_srun --ddp=nccl -N1 -n2 --gpus-per-task=2 env DDP_DEVICE=1 \
		LD_PRELOAD="$mock" MOCK_NCCL_PEERS=fake "$DDP_PROGS/nccl_probe" \
		>pairone.out 2>pairone.err &&
	cat pairone.out &&
	test $(grep -c "^init ok rank=[01] .* device=1\$" pairone.out) = 2 &&
	test_must_fail ddp_srun --ddp=nccl -N1 -n2 --gpus-per-task=2 \
		env DDP_DEVICE=2 LD_PRELOAD="$mock" MOCK_NCCL_PEERS=fake \
		"$DDP_PROGS/nccl_probe" >pairtwo.out 2>pairtwo.err &&
	cat pairtwo.out pairtwo.err &&
	grep "DDP_DEVICE=2, but this task sees 2 CUDA devices (CUDA_VISIBLE_DEVICES=[0-9],[0-9]): give an index from 0 to 1" pairtwo.err
'

# srun --gpu-bind=none: Slurm gives the tasks of a multi-task step no GPU
# list at all; the plugin takes the step's list, which user_init sees.
test_expect_success '--gpu-bind=none with --ddp=nccl: one GPU each from the step'"'"'s list' '
	gpus_and SLURMD_TRES_BIND --ddp=nccl -N2 -w "n[1-2]" \
		--ntasks-per-node=2 --gres=gpu:2 --gpu-bind=none >unbound &&
	cat unbound &&
	test $(grep -c "DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=[01] SLURM_STEP_GPUS=\(-\|0,1\) SLURMD_TRES_BIND=\(gres/\)\{0,1\}gpu:none\$" unbound) = 4 &&
	test $(cut -d" " -f1,4 unbound | sort -u | wc -l) = 4
'
test_expect_success '--gpu-bind=none, GPUs held by another job: bound inside this step' '
	rm -f holder.started holder.job &&
	( ddp_srun -N1 -w n1 --gres=gpu:2 sh -c \
		"echo \$SLURM_JOB_ID >holder.job;
		 echo \$CUDA_VISIBLE_DEVICES >holder.started; sleep 30" & ) &&
	i=0 && while [ ! -s holder.started ] && [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1)); done &&
	held=$(cat holder.started) && test -n "$held" &&
	gpus --ddp=nccl -N1 -w n1 -n2 --gres=gpu:2 --gpu-bind=none >uinside;
	rc=$? &&
	scancel --quiet "$(cat holder.job)";
	cat uinside && echo "holder has $held" &&
	test $rc = 0 && test $(wc -l <uinside) = 2 &&
	test $(cut -d" " -f4 uinside | sort -u | wc -l) = 2 &&
	for g in $(echo $held | tr , " "); do
		! grep -q "CUDA_VISIBLE_DEVICES=$g " uinside || return 1
	done
'
test_expect_success '--gpu-bind=none with --ddp=host: bound one each as well' '
	gpus --ddp=host -N1 -n2 --gres=gpu:2 --gpu-bind=none >uhost &&
	cat uhost &&
	grep -q "LOCAL_RANK=0 DDP_BACKEND=host CUDA_VISIBLE_DEVICES=0 " uhost &&
	grep -q "LOCAL_RANK=1 DDP_BACKEND=host CUDA_VISIBLE_DEVICES=1 " uhost
'
test_expect_success '--gpu-bind=none with nobind or too few GPUs: the step'"'"'s list' '
	gpus --ddp=nccl,nobind -N1 -n2 --gres=gpu:2 --gpu-bind=none >unobind &&
	cat unobind &&
	test $(grep -c "DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=[0-3],[0-3] " unobind) = 2 &&
	gpus --ddp=host -N1 -n3 --gres=gpu:2 --gpu-bind=none >uthree &&
	cat uthree &&
	test $(grep -c "DDP_BACKEND=host CUDA_VISIBLE_DEVICES=[0-3],[0-3] " uthree) = 3
'
test_done
