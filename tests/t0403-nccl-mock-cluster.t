#!/bin/sh
test_description='NCCL backend under srun on a stand-in CUDA/NCCL: the one fence across ranks

With tests/progs/nccl_mock.c preloaded into the tasks, the GPU identity each
rank publishes follows its CUDA_VISIBLE_DEVICES (the fake gres GPUs):
two tasks on one GPU are reported by every rank before NCCL is called, and
a communicator that never forms (the mock cannot connect ranks) ends on
every rank at the DDP_TIMEOUT deadline.'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

mock=$DDP_BUILD_DIR/tests/progs/.libs/nccl_mock.so
probe=$DDP_PROGS/nccl_probe
if ! test -f "$mock"; then
    skip_all="built without NCCL (no mock library)"
    test_done
fi

test_expect_success 'two ranks on one GPU: every rank says which, before NCCL' '
	test_must_fail ddp_srun --mpi=pmix -N1 -n2 --gres=gpu:1 \
		env LD_PRELOAD="$mock" DDP_BACKEND=nccl "$probe" >dup.out 2>dup.err &&
	cat dup.out dup.err &&
	test $(grep -c "^init failed rank=[01] rc=-12 " dup.out) = 2 &&
	test $(grep -c "ranks 0,1 on host [^ ]* share GPU 0000:10:00.0 (GPU-" dup.err) = 2 &&
	! grep "mock: ncclCommAbort" dup.err
'
test_expect_success 'distinct GPUs, NCCL never connects: every rank times out, aborted' '
	start=$(date +%s) &&
	test_must_fail ddp_srun --mpi=pmix -N1 -n2 --gres=gpu:2 \
		env LD_PRELOAD="$mock" DDP_BACKEND=nccl DDP_TIMEOUT=3 "$probe" >slow.out 2>slow.err &&
	cat slow.out slow.err &&
	elapsed=$(( $(date +%s) - start )) &&
	test $elapsed -ge 2 && test $elapsed -le 20 &&
	test $(grep -c "^init failed rank=[01] rc=-7 " slow.out) = 2 &&
	test $(grep -c "mock: ncclCommAbort" slow.err) = 2
'
test_expect_success 'under the plugin (--ddp=nccl, one GPU bound per task): the same' '
	test -f "$DDP_PLUGIN" || { say "# no plugin built"; return 0; }
	test_must_fail ddp_srun --ddp=nccl -N1 -n2 --gres=gpu:2 \
		env LD_PRELOAD="$mock" DDP_TIMEOUT=3 "$probe" >plug.out 2>plug.err &&
	cat plug.out plug.err &&
	test $(grep -c "^init failed rank=[01] rc=-7 " plug.out) = 2
'
test_done
