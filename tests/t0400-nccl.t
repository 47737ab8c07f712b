#!/bin/sh
test_description='NCCL backend in one process: backend choice, and every collective on a GPU

Without a GPU (CI): auto picks the host backend and DDP_BACKEND=nccl fails
with a clear error.  With a GPU: nccl_check runs every collective, dtype and
op on device and host buffers against a CPU reference (world size 1, the
singleton path), and nccl_bench --quick compares ddp with raw NCCL calls.
Needs no test cluster.'
. "$(dirname "$0")/test-lib.sh"

probe=$DDP_PROGS/nccl_probe
check=$DDP_PROGS/nccl_check
bench=$DDP_PROGS/nccl_bench

# A single process: hide any launcher an enclosing job may have set.
single () {
    env -u WORLD_SIZE -u RANK -u LOCAL_RANK -u LOCAL_WORLD_SIZE \
        -u SLURM_STEP_NUM_TASKS -u SLURM_NTASKS -u PMI_SIZE \
        -u OMPI_COMM_WORLD_SIZE -u PMIX_NAMESPACE -u PMIX_SERVER_URI \
        -u PMIX_SERVER_URI2 -u PMIX_SERVER_URI21 -u PMIX_SERVER_URI3 \
        -u PMIX_SERVER_URI4 -u PMIX_SERVER_URI41 "$@"
}

if test -x "$check"; then
    test_set_prereq NCCL_BUILT
    if "$check" --probe >gpu.out 2>&1; then
        test_set_prereq GPU
        say "# $(cat gpu.out)"
    else
        say "# GPU tests skipped, $(cat gpu.out)"
    fi
else
    say "# built without NCCL: GPU tests skipped"
fi

test_expect_success '!GPU' 'auto without a GPU picks the host backend' '
	single env DDP_BACKEND=auto "$probe" >auto.out &&
	cat auto.out &&
	grep "^init ok rank=0 size=1 backend=host comm=no stream=no device=-1$" auto.out &&
	grep "^allreduce rc=0 sum=1$" auto.out
'
test_expect_success '!GPU' 'the NCCL section says ENOTSUP on the host backend' '
	grep "^allreduce_stream rc=-11 " auto.out &&
	grep "^gpu_mem_info rc=-11 " auto.out
'
test_expect_success '!GPU' 'DDP_BACKEND=nccl without a GPU fails with a clear error' '
	test_expect_code 1 single env DDP_BACKEND=nccl DDP_DEBUG=1 "$probe" >nccl.out 2>nccl.err &&
	cat nccl.out nccl.err &&
	if test_have_prereq NCCL_BUILT; then
		grep "^init failed rank=? rc=-13 " nccl.out &&
		grep "rank 0 (host [^)]*) cannot use NCCL: \(no NVIDIA driver on this node (libcuda.so.1 cannot be loaded)\|the NVIDIA driver on this node is older\|no CUDA device visible\|cudaGetDeviceCount: \)" nccl.err
	else
		grep "^init failed rank=? rc=-11 " nccl.out &&
		grep -i "no NCCL backend\|without NCCL" nccl.err
	fi
'
test_expect_success '!GPU' 'the same without DDP_DEBUG: the same code' '
	test_expect_code 1 single env -u DDP_DEBUG DDP_BACKEND=nccl "$probe" >nccl2.out &&
	grep "^init failed rank=? rc=-1[13] " nccl2.out
'
test_expect_success '!GPU' 'DDP_BACKEND=nccl without a GPU fails fast' '
	start=$(date +%s) &&
	test_expect_code 1 single env DDP_BACKEND=nccl DDP_TIMEOUT=60 "$probe" >/dev/null 2>&1 &&
	test $(( $(date +%s) - start )) -lt 20
'
test_expect_success GPU 'auto with a GPU picks nccl' '
	single env DDP_BACKEND=auto "$probe" >gauto.out &&
	cat gauto.out &&
	grep "^init ok rank=0 size=1 backend=nccl comm=yes stream=yes device=0$" gauto.out &&
	grep "^allreduce_stream rc=0 " gauto.out &&
	grep "^gpu_mem_info rc=0 " gauto.out &&
	grep "^allreduce rc=0 sum=1$" gauto.out
'
test_expect_success GPU 'nccl_check: every collective, dtype and op, device and host buffers' '
	single env DDP_BACKEND=nccl "$check" >check.out 2>check.err;
	rc=$?
	cat check.out check.err &&
	test $rc = 0 &&
	grep -q "^ok " check.out &&
	! grep "^not ok" check.out
'
test_expect_success GPU 'the core'"'"'s ddp_check passes on the GPU, re-init included' '
	single env DDP_BACKEND=nccl "$DDP_PROGS/ddp_check" -r >ddpcheck.out 2>&1;
	rc=$?
	cat ddpcheck.out &&
	test $rc = 0 &&
	grep "backend nccl: [0-9]* checks, 0 failed here, 0 failed in all" ddpcheck.out
'
test_expect_success GPU 'DDP_NCCL_RANKS_PER_ROOT=0 is refused with the reason' '
	test_expect_code 1 single env DDP_BACKEND=nccl DDP_NCCL_RANKS_PER_ROOT=0 \
		DDP_DEBUG=1 "$probe" >rpr.out 2>rpr.err &&
	cat rpr.out rpr.err &&
	grep "rc=-1 " rpr.out &&
	grep DDP_NCCL_RANKS_PER_ROOT rpr.err
'
test_expect_success GPU 'nccl_bench --quick: ddp against raw NCCL' '
	single env DDP_BACKEND=nccl "$bench" --quick --max-bytes 1048576 >bench.out &&
	cat bench.out &&
	grep -q "^  allreduce" bench.out
'
test_done
