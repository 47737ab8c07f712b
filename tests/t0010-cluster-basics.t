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
# A run killed before its stop leaves its daemons behind, marked with a
# DIR that is gone.  reap kills those and nothing of a live cluster.
test_expect_success 'reap: kills what a cluster whose DIR is gone left, nothing of a live one' '
	gone=/var/tmp/ddp-cluster.gone-t0010-$$ &&
	{ DDP_CLUSTER_MARK=$gone sleep 300 & } &&
	stray=$! &&
	{ DDP_CLUSTER_MARK=$DDP_CLUSTER_DIR sleep 300 & } &&
	live=$! &&
	test_when_finished "kill $stray $live 2>/dev/null; true" &&
	"$DDP_CLUSTER" reap 2>reap.err &&
	cat reap.err &&
	grep "reaping $stray (sleep) of $gone\$" reap.err &&
	! grep "reaping $live " reap.err &&
	{ wait $stray; test $? = 143; } &&
	kill -0 $live &&
	"$DDP_CLUSTER" status "$DDP_CLUSTER_DIR"
'

# A cluster inside a chroot (the Debian 13 stage's) has its DIR there: the
# first reap took its daemons for strays (DIR looked up in this file
# system) and killed that stage's slurmctld.
test_expect_success 'reap: a cluster whose DIR is inside a chroot is not a stray' '
	root=$PWD/chroot &&
	mkdir -p "$root/usr" "$root/var/tmp/ddp-cluster.inroot-t0010/etc" &&
	: >"$root/var/tmp/ddp-cluster.inroot-t0010/etc/slurm.conf" &&
	for l in bin lib lib64; do ln -sfn usr/$l "$root/$l" || return 1; done &&
	mount --bind /usr "$root/usr" &&
	test_when_finished "umount \"$root/usr\"" &&
	{ DDP_CLUSTER_MARK=/var/tmp/ddp-cluster.inroot-t0010 chroot "$root" /usr/bin/sleep 300 & } &&
	inroot=$! &&
	test_when_finished "kill $inroot 2>/dev/null; wait $inroot 2>/dev/null; true" &&
	sleep 0.5 &&
	test -f /proc/$inroot/root/var/tmp/ddp-cluster.inroot-t0010/etc/slurm.conf &&
	! test -e /var/tmp/ddp-cluster.inroot-t0010 &&
	"$DDP_CLUSTER" reap 2>reap2.err &&
	cat reap2.err &&
	! grep "reaping $inroot " reap2.err &&
	kill -0 $inroot
'

test_done
