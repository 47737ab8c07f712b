#!/bin/sh
test_description='the test cluster runs real multi-node steps, gres and PMIx'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

# The shared cluster has more nodes (t0000): -w names the two these expect.
test_expect_success 'srun -N2 -n4 runs 4 tasks on two nodes' '
	ddp_srun -N2 -n4 -w "n[1-2]" "$DDP_PROGS/rankview" >out &&
	cat out &&
	test $(wc -l <out) = 4 &&
	grep -q "node=n1 " out &&
	grep -q "node=n2 " out &&
	for r in 0 1 2 3; do grep -q "^procid=$r " out || return 1; done
'
test_expect_success 'each node has its own /tmp' '
	ddp_srun -N2 -n2 -w "n[1-2]" sh -c "echo \$SLURMD_NODENAME >/tmp/who; sleep 1; cat /tmp/who" >who &&
	sort who >who.sorted &&
	printf "n1\nn2\n" >who.expected &&
	test_cmp who.expected who.sorted
'
test_expect_success 'gres: --gres=gpu:2 gives a step two of the fake GPUs' '
	ddp_srun -N1 -n1 --gres=gpu:2 printenv CUDA_VISIBLE_DEVICES >cvd &&
	echo 0,1 >cvd.expected &&
	test_cmp cvd.expected cvd
'
test_expect_success 'MpiDefault=none: a plain step has no PMIx server' '
	ddp_srun -N1 -n1 env >plain.env &&
	! grep "^PMIX_SERVER_URI" plain.env
'
test_expect_success 'srun --mpi=pmix -N2 -n4 reaches a real PMIx server' '
	ddp_srun --mpi=pmix -N2 -n4 "$DDP_PROGS/pmix_probe" >pmix.out &&
	cat pmix.out &&
	test $(grep -c "^pmix ok" pmix.out) = 4 &&
	for r in 0 1 2 3; do
		grep -q "^pmix ok rank=$r size=4 procid=$r nspace=slurm.pmix." pmix.out || return 1
	done
'
test_done
