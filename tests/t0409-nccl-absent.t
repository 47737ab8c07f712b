#!/bin/sh
test_description='one build for every node: a build made with CUDA and NCCL
starts and runs the host backend on a node without them, and --ddp=nccl
fails there naming what was looked for and where'
. "$(dirname "$0")/test-lib.sh"

# A private cluster whose node n2 has no CUDA runtime and no NCCL
# (DDP_CLUSTER_NO_CUDA: its mount namespace covers their directories), as
# a CPU node of a site that installs one software stack everywhere; n1
# keeps them.  Neither node has an NVIDIA driver (CI has no GPU).
grep -q 'define HAVE_NCCL 1' "$DDP_BUILD_DIR/config.h" 2>/dev/null || {
	skip_all="this build has no NCCL backend (configure found no CUDA/NCCL): nothing to load at run time"
	test_done
}
test -f "$DDP_PLUGIN" || ddp_cluster_unavailable "$DDP_PLUGIN not built"
DDP_CLUSTER_NO_CUDA=n2 ddp_cluster_private --nodes 2
PROBE=$DDP_PROGS/nccl_probe
LIBDDP=$DDP_BUILD_DIR/libjob/.libs/libddp.so.0
# The CUDA runtime and NCCL this machine has (the files n2 must not see).
CUDART=$(ldconfig -p | awk '$1 ~ /^libcudart\.so\./ { print $NF; exit }')
NCCL=$(ldconfig -p | awk '$1 ~ /^libnccl\.so\./ { print $NF; exit }')
. "$DDP_BUILD_DIR/libjob/python/build.env"
test "$DDP_PYTHON_BUILT" = yes && test_set_prereq PYMOD
# ./python: the build's interpreter (ASan preloaded in a sanitizer build:
# ddp_python_script), the build tree's module on PYTHONPATH, which srun
# passes on to the tasks.
if test_have_prereq PYMOD; then
	PYTHONPATH=$DDP_PYTHON_STAGE
	export PYTHONPATH
	ddp_python_script "$(ls "$DDP_PYTHON_STAGE"/ddp/_ddp*.so)" "$DDP_PYTHON"
fi

# cuda_needed FILE...: the CUDA or NCCL libraries the files need (ldd).
cuda_needed () {
	for f; do
		ldd "$f" | grep -E "lib(cudart|nccl|cuda)\.so" | sed "s|^|$f: |"
	done
}

test_expect_success 'no binary of the build links CUDA or NCCL' '
	bins="$LIBDDP $DDP_PLUGIN $DDP_BUILD_DIR/contrib/ddp-run/ddp-run $PROBE" &&
	if test_have_prereq PYMOD; then
		bins="$bins $(ls "$DDP_PYTHON_STAGE"/ddp/_ddp*.so)"
	fi &&
	for f in $bins; do test -e "$f" || { echo "missing: $f"; exit 1; }; done &&
	cuda_needed $bins >needed &&
	test_must_be_empty needed
'

test_expect_success 'n2 has no CUDA runtime and no NCCL, n1 has both' '
	test -n "$CUDART" && test -n "$NCCL" &&
	ddp_node_exec n1 test -s "$CUDART" &&
	ddp_node_exec n1 test -s "$NCCL" &&
	test_must_fail ddp_node_exec n2 test -s "$CUDART" &&
	test_must_fail ddp_node_exec n2 test -s "$NCCL"
'

test_expect_success 'a C program starts on n2 and picks the host backend (auto)' '
	DDP_BACKEND=auto DDP_DEBUG=1 ddp_srun --mpi=pmix -N2 --ntasks-per-node=1 \
		--export=ALL,DDP_BACKEND=auto,DDP_DEBUG=1 "$PROBE" >auto.out 2>auto.err &&
	cat auto.out &&
	test $(grep -c "^init ok rank=[01] size=2 backend=host" auto.out) = 2 &&
	grep "nccl: not loaded: CUDA runtime libcudart.so.[0-9]* not found" auto.err
'

test_expect_success '--ddp=auto runs on both nodes' '
	ddp_srun --ddp=auto -N2 --ntasks-per-node=1 "$PROBE" >ddpauto.out &&
	test $(grep -c "^init ok rank=[01] size=2 backend=host" ddpauto.out) = 2
'

# Without kill-on-bad-exit, so that neither rank is stopped before it
# says why (Slurm 24.11's srun then also exits 1, not by a signal).
test_expect_success '--ddp=nccl: every rank fails in init, each naming its own cause' '
	ddp_step_fails --ddp=nccl --kill-on-bad-exit=0 --gres=gpu:1 -N2 \
		--ntasks-per-node=1 "$PROBE" >nccl.out 2>nccl.err &&
	cat nccl.err &&
	grep "\[ddp rank 1/2\] error: nccl: rank 1 (host n2) cannot use NCCL: CUDA runtime libcudart.so.[0-9]* not found (looked in LD_LIBRARY_PATH, .*): install it, or use --ddp=host" nccl.err &&
	grep "\[ddp rank 0/2\] error: nccl: rank 0 (host n1) cannot use NCCL: no NVIDIA driver on this node (libcuda.so.1 cannot be loaded)" nccl.err &&
	! grep "^init ok" nccl.out
'

test_expect_success 'ddp-run on n2: the host backend (-b host, -b auto)' '
	ddp_node_exec n2 "$DDP_BUILD_DIR/contrib/ddp-run/ddp-run" -n 2 -b host \
		"$PROBE" >run.out &&
	test $(grep -c "^init ok rank=[01] size=2 backend=host" run.out) = 2 &&
	DDP_BACKEND=auto ddp_node_exec n2 "$DDP_BUILD_DIR/contrib/ddp-run/ddp-run" \
		-n 2 -b auto "$PROBE" >runauto.out &&
	test $(grep -c "^init ok rank=[01] size=2 backend=host" runauto.out) = 2
'

test_expect_success PYMOD 'import ddp on n2: the host backend, and nccl_info says where NCCL is looked for' '
	ddp_srun --ddp=auto -N1 -w n2 ./python -c \
		"import ddp; ddp.init(); print(ddp.backend()); print(ddp.nccl_info()); ddp.finalize()" >py.out &&
	cat py.out &&
	test "$(sed -n 1p py.out)" = host &&
	grep "loaded at run time by the steps that use it: libnccl.so.2 and libcudart.so.[0-9]*" py.out &&
	ddp_srun -N1 -w n2 ./python -m ddp --version >version.out &&
	cat version.out &&
	grep "^slurm-ddp [0-9]" version.out &&
	grep "^CUDA and NCCL: loaded at run time by the steps that use it: libnccl.so.2 and libcudart.so.[0-9]* from the process, LD_LIBRARY_PATH, " version.out
'

test_done
