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
test_expect_success '!GPU,NCCL_BUILT' 'one fence: every rank failed, each names itself and why' '
	test $(grep -c "^init failed rank=[0-3] rc=-13 " nccl.out) = 4 &&
	for r in 0 1 2 3; do
		grep "rank $r/4\] error: nccl: rank $r (host [^)]*) cannot use NCCL: " nccl.err ||
		return 1
	done
'
# DDP_BACKEND by node: "$1" on node 0's tasks, "$2" on the others ("-": unset).
by_node () {
    cat >by_node.sh <<-EOF
	#!/bin/sh
	if test "\$SLURM_NODEID" = 0; then v="$1"; else v="$2"; fi
	if test "\$v" = -; then unset DDP_BACKEND; else DDP_BACKEND=\$v; export DDP_BACKEND; fi
	exec "$probe"
	EOF
    chmod +x by_node.sh
}

test_expect_success 'DDP_BACKEND host on one node, unset on the other: every rank says so' '
	by_node host - &&
	test_must_fail ddp_srun --mpi=pmix -N2 -n3 ./by_node.sh >mix.out 2>mix.err &&
	cat mix.out mix.err &&
	test $(grep -c "^init failed rank=[0-2] rc=-14 " mix.out) = 3 &&
	test $(grep -c "DDP_BACKEND differs between ranks: auto on rank 2, host on ranks 0-1 (unset counts as auto)" mix.err) = 3
'
test_expect_success NCCL_BUILT 'host on node 1, nccl on node 2 (the plugin bug): the same, no blob-size error' '
	by_node host nccl &&
	test_must_fail ddp_srun --mpi=pmix -N2 -n3 --gres=gpu:1 ./by_node.sh >hn.out 2>hn.err &&
	cat hn.out hn.err &&
	test $(grep -c "^init failed rank=[0-2] rc=-14 " hn.out) = 3 &&
	test $(grep -c "host on ranks 0-1, nccl on rank 2" hn.err) = 3 &&
	! grep "bootstrap blob" hn.err
'
test_expect_success 'a bad DDP_BACKEND on one node: its ranks say EINVAL, the others name them' '
	by_node - bogus &&
	test_must_fail ddp_srun --mpi=pmix -N2 -n3 ./by_node.sh >bad.out 2>bad.err &&
	cat bad.out bad.err &&
	test $(grep -c "^init failed rank=[01] rc=-9 " bad.out) = 2 &&
	grep "^init failed rank=2 rc=-1 " bad.out &&
	test $(grep -c "rank 2 cannot start; rank 2 (host [^)]*): DDP_BACKEND=.bogus. is not one of auto, host, nccl" bad.err) = 2
'
test_expect_success '!GPU' 'auto under the plugin (--ddp=auto) on GPU-less nodes: host' '
	test -f "$DDP_PLUGIN" || { say "# no plugin built"; return 0; }
	ddp_srun --ddp=auto -N2 -n2 "$probe" >plugin.out &&
	cat plugin.out &&
	test $(grep -c "backend=host" plugin.out) = 2
'
test_done
