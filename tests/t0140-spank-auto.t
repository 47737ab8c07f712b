#!/bin/sh
test_description='--ddp=auto resolves to one backend for the whole step, or refuses with the reason'
. "$(dirname "$0")/test-lib.sh"

# These tests give the nodes a fake NVIDIA driver and take it away again,
# so they run on a private cluster whose /proc/driver is a directory of its
# own per node (DDP_CLUSTER_FAKE_DRIVER=1), never on the shared one.
why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"
test -f "$DDP_PLUGIN" || ddp_cluster_unavailable "$DDP_PLUGIN not built"
PRIVATE=$(DDP_CLUSTER_FAKE_DRIVER=1 "$DDP_CLUSTER" start \
	2>"$SHARNESS_TEST_DIRECTORY/.t0140-start.err") ||
	ddp_cluster_unavailable "start failed: $(tail -n 20 "$SHARNESS_TEST_DIRECTORY/.t0140-start.err")"
rm -f "$SHARNESS_TEST_DIRECTORY/.t0140-start.err"
trap '"$DDP_CLUSTER" stop "$PRIVATE"; die' EXIT
. "$PRIVATE/env"

# driver NODE...: these nodes have an NVIDIA driver, the others none.
driver () {
	for n in n1 n2; do
		rm -rf "$PRIVATE/driver-$n/nvidia"
	done
	for n in "$@"; do
		mkdir -p "$PRIVATE/driver-$n/nvidia" &&
		echo "NVRM version: fake for t0140" >"$PRIVATE/driver-$n/nvidia/version" ||
		return 1
	done
}

# view ARGS...: srun ARGS rankview with the backend view, one line per task.
view () {
	ddp_srun "$@" "$DDP_PROGS/rankview" SLURMD_NODENAME RANK DDP_BACKEND \
		CUDA_VISIBLE_DEVICES SLURM_SPANK_DDP_PLAN
}

# view_fails ARGS...: the same, for a step that must fail (on some node;
# the others' tasks may have run or been stopped by srun).
view_fails () {
	ddp_step_fails "$@" "$DDP_PROGS/rankview" SLURMD_NODENAME RANK \
		DDP_BACKEND CUDA_VISIBLE_DEVICES SLURM_SPANK_DDP_PLAN
}

# backends FILE: the distinct DDP_BACKEND values of FILE, one a line.
backends () {
	sed -n "s/.* DDP_BACKEND=\([a-z-]*\) .*/\1/p" "$1" | sort -u
}

test_expect_success 'the fake driver is seen by the tasks of a node, and only there' '
	driver n1 &&
	ddp_srun -N2 -n2 sh -c "if test -e /proc/driver/nvidia/version; then echo \$SLURMD_NODENAME; fi" >seen &&
	echo n1 >seen.expected &&
	test_cmp seen.expected seen &&
	driver &&
	ddp_srun -N1 -w n1 sh -c "test ! -e /proc/driver/nvidia/version"
'
test_expect_success '-N2 -n3 --gpus-per-node=1 (auto): host on every task' '
	driver n1 n2 &&
	view --ddp -N2 -n3 --gpus-per-node=1 >pernode1 &&
	cat pernode1 &&
	test $(wc -l <pernode1) = 3 &&
	test "$(backends pernode1)" = host &&
	grep -q "SLURMD_NODENAME=n2 .* CUDA_VISIBLE_DEVICES=0 " pernode1
'
test_expect_success 'the plan variable does not reach the tasks' '
	grep -c "SLURM_SPANK_DDP_PLAN=-$" pernode1 >count &&
	echo 3 >count.expected &&
	test_cmp count.expected count
'
test_expect_success 'the same with srun --export=NONE: the plan still reaches the nodes' '
	view --export=NONE --ddp -N2 -n3 --gpus-per-node=1 >exportnone &&
	cat exportnone &&
	test $(wc -l <exportnone) = 3 &&
	test "$(backends exportnone)" = host
'
test_expect_success '--gpus-per-node=2, 2 tasks per node, a driver everywhere: nccl on every task' '
	view --ddp -N2 --ntasks-per-node=2 --gpus-per-node=2 >pernode2 &&
	cat pernode2 &&
	test $(wc -l <pernode2) = 4 &&
	test "$(backends pernode2)" = nccl &&
	grep -q "SLURMD_NODENAME=n2 RANK=3 DDP_BACKEND=nccl CUDA_VISIBLE_DEVICES=1 " pernode2
'
test_expect_success '-N2 -n3 --gpus-per-task=1: nccl on every task, each its own GPU' '
	view --ddp -N2 -n3 --gpus-per-task=1 >pertask &&
	cat pertask &&
	test $(wc -l <pertask) = 3 &&
	test "$(backends pertask)" = nccl
'
test_expect_success 'the job'"'"'s GPUs (sbatch --gres=gpu:1 -N2, srun --ddp -n3 inside): host everywhere' '
	cat >inherit.sh <<-EOF &&
	#!/bin/sh
	srun --ddp -n3 "$DDP_PROGS/rankview" SLURMD_NODENAME RANK DDP_BACKEND CUDA_VISIBLE_DEVICES >inherit.out
	EOF
	timeout 60 sbatch --wait -N2 -n3 --gres=gpu:1 -o inherit.log inherit.sh &&
	cat inherit.log inherit.out &&
	test $(wc -l <inherit.out) = 3 &&
	test "$(backends inherit.out)" = host
'
test_expect_success 'the job'"'"'s GPUs, one per task on every node: nccl everywhere' '
	sed "s/-n3/-n2/" inherit.sh >inherit2.sh &&
	timeout 60 sbatch --wait -N2 -n2 --gres=gpu:1 -o inherit2.log inherit2.sh &&
	cat inherit2.log inherit.out &&
	test $(wc -l <inherit.out) = 2 &&
	test "$(backends inherit.out)" = nccl
'
test_expect_success 'a driver on n1 only: the step is refused on n2, not run with two backends' '
	driver n1 &&
	view_fails --ddp -N2 --ntasks-per-node=1 --gpus-per-node=1 \
		>mixed.out 2>mixed.err &&
	cat mixed.out mixed.err &&
	grep "ddp: --ddp=auto chose nccl for the whole step because the step asks for the same GPU count on every node (--gpus-per-node, --gres=gpu:N), but n2 has no NVIDIA driver" mixed.err &&
	grep "use --ddp=host" mixed.err &&
	! grep "n1 has no NVIDIA driver" mixed.err &&
	! grep "DDP_BACKEND=host" mixed.out
'
test_expect_success 'no driver anywhere (fake GPUs): auto is refused with the fix, --ddp=host runs' '
	driver &&
	test_must_fail view --ddp -N2 --ntasks-per-node=1 --gpus-per-node=1 \
		>nodriver.out 2>nodriver.err &&
	cat nodriver.err &&
	test $(grep -c "has no NVIDIA driver (no /proc/driver/nvidia/version, no /dev/nvidiactl), so NCCL cannot run there; use --ddp=host" nodriver.err) = 2 &&
	view --ddp=host -N2 --ntasks-per-node=1 --gpus-per-node=1 >host.out &&
	test "$(backends host.out)" = host
'
test_expect_success '... and an explicit --ddp=nccl is the user'"'"'s choice: no driver check' '
	view --ddp=nccl -N2 --ntasks-per-node=1 --gpus-per-node=1 >nccl.out &&
	test "$(backends nccl.out)" = nccl
'
test_expect_success '--gpus=N (no count per node): nccl on every task or a refusal, never both backends' '
	driver n1 n2 &&
	if view --ddp -N2 -n2 --gpus=2 >total.out 2>total.err; then
		test "$(backends total.out)" = nccl
	else
		cat total.err &&
		grep "needs one backend for the whole step, but n[12] has 1 local tasks and 0 GPUs" total.err
	fi
'
test_expect_success 'no GPUs at all: host, no driver needed' '
	driver &&
	view --ddp -N2 -n3 >cpu.out &&
	test "$(backends cpu.out)" = host
'
test_done
