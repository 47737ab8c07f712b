#!/bin/sh
test_description='NCCL backend under srun: the choice and its failure on every rank

On nodes without a usable GPU (the test cluster fakes GPUs through gres and
CUDA_VISIBLE_DEVICES), auto must pick the host backend on every rank, and
DDP_BACKEND=nccl must fail on every rank quickly, never hang.'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

probe=$DDP_PROGS/nccl_probe
check=$DDP_PROGS/nccl_check

if test -x "$check"; then
    test_set_prereq NCCL_BUILT
    if ddp_srun -N1 -n1 "$check" --probe >gpu.out 2>&1; then
        test_set_prereq GPU
    fi
fi

test_expect_success '!GPU' 'auto on nodes without GPUs: host on every rank' '
	ddp_srun --mpi=pmix -N2 -n4 env DDP_BACKEND=auto "$probe" >auto.out &&
	cat auto.out &&
	test $(grep -c "^init ok rank=[0-3] size=4 backend=host comm=no" auto.out) = 4 &&
	test $(grep -c "^allreduce rc=0 sum=10$" auto.out) = 4
'
test_expect_success '!GPU' 'auto with fake gres GPUs (CUDA_VISIBLE_DEVICES, no device): host' '
	ddp_srun --mpi=pmix -N2 -n2 --gres=gpu:1 env DDP_BACKEND=auto "$probe" >gres.out &&
	cat gres.out &&
	test $(grep -c "backend=host" gres.out) = 2
'
test_expect_success '!GPU' 'DDP_BACKEND=nccl without GPUs: every rank fails, none hangs' '
	start=$(date +%s) &&
	test_must_fail ddp_srun --mpi=pmix -N2 -n4 --gres=gpu:2 \
		env DDP_BACKEND=nccl DDP_TIMEOUT=30 "$probe" >nccl.out 2>nccl.err &&
	cat nccl.out &&
	test $(( $(date +%s) - start )) -lt 25 &&
	test $(grep -c "^init failed rank=[0-3] rc=-\(13\|9\|11\) " nccl.out) = 4
'
test_expect_success '!GPU,NCCL_BUILT' 'one fence: rank 0 failed, the others learn it from rank 0' '
	grep "^init failed rank=0 rc=-13 " nccl.out &&
	test $(grep -c "^init failed rank=[1-3] rc=-9 " nccl.out) = 3 &&
	test $(grep -c "rank 0 (host [^)]*) cannot use NCCL: cudaGetDeviceCount" nccl.err) = 4
'
test_expect_success '!GPU' 'auto under the plugin (--ddp=auto) on GPU-less nodes: host' '
	test -f "$DDP_PLUGIN" || { say "# no plugin built"; return 0; }
	ddp_srun --ddp=auto -N2 -n2 "$probe" >plugin.out &&
	cat plugin.out &&
	test $(grep -c "backend=host" plugin.out) = 2
'
test_done
