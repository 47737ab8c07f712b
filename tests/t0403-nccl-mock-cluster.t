#!/bin/sh
test_description='NCCL backend under srun on a stand-in CUDA/NCCL: the one fence across ranks

With tests/progs/nccl_mock.c preloaded into the tasks, the GPU identity each
rank publishes follows its CUDA_VISIBLE_DEVICES (the fake gres GPUs):
two tasks on one GPU are reported by every rank before NCCL is called, and
a communicator that never forms (the mock cannot connect ranks) ends on
every rank at the DDP_TIMEOUT deadline.  With the ranks seeing each other
(MOCK_NCCL_PEER_DIR), a rank that never enters a barrier and one killed
are named by every survivor, across nodes.'
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
	test $elapsed -ge 2 && test $elapsed -le 45 &&
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

# Node 0's tasks see CUDA in name only (no driver), node 1's a GPU.
cat >gpu_on_node1.sh <<EOF
#!/bin/sh
if test "\$SLURM_NODEID" = 0; then MOCK_CUDA_DRIVER=none; export MOCK_CUDA_DRIVER; fi
exec "$probe"
EOF
chmod +x gpu_on_node1.sh

test_expect_success 'auto with a GPU on one node only: host on every rank, rank 0 says why' '
	ddp_srun --mpi=pmix -N2 -n3 --gres=gpu:1 \
		env LD_PRELOAD="$mock" DDP_BACKEND=auto ./gpu_on_node1.sh >half.out 2>half.err &&
	cat half.out half.err &&
	test $(grep -c "^init ok rank=[0-2] size=3 backend=host comm=no" half.out) = 3 &&
	test $(grep -c "^allreduce rc=0 sum=6$" half.out) = 3 &&
	grep "rank 0/3\] warning: auto: the host backend on every rank, because ranks 0-1 of 3 cannot use NCCL (rank 0, host [^:]*: no usable CUDA device: \(no NVIDIA driver on this node\|the NVIDIA driver on this node is older\)" half.err &&
	test $(grep -c "warning: auto" half.err) = 1 &&
	! grep "mock: ncclComm" half.err
'

# The ranks see each other through files (MOCK_NCCL_PEER_DIR, in the
# test's directory, which every node shares): rank 1 never enters the
# barrier after init's and the next one, on another node than rank 0.
test_expect_success 'a rank that never enters a barrier: every survivor names it and the barrier, under srun' '
	rm -rf skip.peers && mkdir skip.peers &&
	test_must_fail ddp_srun --mpi=pmix -N2 -n3 env LD_PRELOAD="$mock" \
		MOCK_NCCL_PEERS=fake MOCK_GPU_ID=rank \
		MOCK_NCCL_PEER_DIR="$PWD/skip.peers" DDP_BACKEND=nccl \
		DDP_TIMEOUT=3 DDP_VICTIM_RANKS=1 DDP_VICTIM_SKIP_SLEEP=5 \
		"$DDP_PROGS/ddp_victim" skip "$PWD/skip.peers" >skip.out 2>skip.err &&
	cat skip.out skip.err &&
	for r in 0 2; do
		grep "^ddp_barrier -7 " "skip.peers/exit.$r" &&
		grep "^\[ddp rank $r/3\] error: nccl: ddp_barrier #3 did not complete within DDP_TIMEOUT=3 s: rank 1 (host [^)]*) never entered ddp_barrier #3\( (noticed by rank [02])\)\{0,1\}; communicator aborted$" skip.err || return 1
	done
'

test_expect_success 'kill -9 of a rank in a barrier loop: every survivor names it and its host, under srun' '
	rm -rf kill.peers && mkdir kill.peers &&
	{ ddp_srun --mpi=pmix -N2 -n3 env LD_PRELOAD="$mock" \
		MOCK_NCCL_PEERS=fake MOCK_GPU_ID=rank \
		MOCK_NCCL_PEER_DIR="$PWD/kill.peers" DDP_BACKEND=nccl \
		DDP_TIMEOUT=10 "$DDP_PROGS/ddp_fault" kill 1 >kill.out 2>kill.err
	  echo $? >kill.rc; } &&
	cat kill.out kill.err &&
	test "$(cat kill.rc)" != 0 &&
	for r in 0 2; do
		grep "^rank $r: failed after 200 calls in [0-9.]* s: -8 " kill.out &&
		grep "^\[ddp rank $r/3\] error: nccl: ddp_barrier #202: rank 1 (host [^)]*) $DDP_KILLED_SEEN\( (noticed by rank [02])\)\{0,1\}; NCCL: remote process exited" kill.err || return 1
	done
'

# The set-up path at scale: DDP_NCCL_SCALE_RANKS ranks on the two nodes
# (overcommitted).  128 costs a few seconds here; doc/nccl.md has the runs
# at a few hundred.  At least 16 (four ranks share each GPU of a node);
# check.sh's sanitizer stage runs 32.
n=${DDP_NCCL_SCALE_RANKS:-128}
test_expect_success "set-up at $n ranks (a GPU each, 4 NCCL roots): every rank inits and finalizes" '
	ddp_srun --mpi=pmix -O -N2 -n$n env LD_PRELOAD="$mock" MOCK_NCCL_PEERS=fake \
		MOCK_GPU_ID=rank DDP_NCCL_RANKS_PER_ROOT=$(( (n + 3) / 4 )) \
		DDP_BACKEND=nccl DDP_DEBUG=1 DDP_TIMEOUT=120 "$probe" >scale.out 2>scale.err &&
	test $(grep -c "^init ok rank=[0-9]* size=$n backend=nccl comm=yes" scale.out) = $n &&
	test $(grep -c "NCCL [0-9]*, 4 root(s) of $n ranks" scale.err) = $n &&
	test $(grep -c "mock: ncclCommDestroy" scale.err) = $n &&
	grep "init: bootstrap" scale.err | sed "s/.*init: //" | sort -g -k17 | tail -n 1
'
test_expect_success "$n ranks on 4 GPUs per node: every rank names the shared GPU" '
	test_must_fail ddp_srun --mpi=pmix -O -N2 -n$n --gres=gpu:4 \
		env LD_PRELOAD="$mock" DDP_BACKEND=nccl DDP_TIMEOUT=120 "$probe" >sdup.out 2>sdup.err &&
	test $(grep -c "^init failed rank=[0-9]* rc=-12 " sdup.out) = $n &&
	test $(grep -c "error: nccl: ranks 0,4,8,12[0-9,]* on host n[0-9]* share GPU 0000:10:00.0" sdup.err) = $n &&
	! grep "mock: ncclComm" sdup.err
'
test_done
