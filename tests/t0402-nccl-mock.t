#!/bin/sh
test_description='NCCL backend on a stand-in CUDA/NCCL (LD_PRELOAD): data paths and failures

tests/progs/nccl_mock.c replaces libcudart and libnccl, so the backend runs
here without a GPU: every collective, dtype, op and buffer kind through
nccl_check (world size 1; reduce-scatter also with fake peers under the
local launcher; the backend'"'"'s split, with and without ncclCommSplit),
and the failure paths a real GPU rarely shows on
demand: init that never finishes or fails, a stream that never drains, an
asynchronous remote error.  One process (three under the local launcher
for reduce-scatter with fake peers), no test cluster.'
. "$(dirname "$0")/test-lib.sh"

mock=$DDP_BUILD_DIR/tests/progs/.libs/nccl_mock.so
probe=$DDP_PROGS/nccl_probe
if ! test -f "$mock"; then
    skip_all="built without NCCL (no mock library)"
    test_done
fi

# One process on the mock, with no launcher around it.
on_mock () {
    env -u WORLD_SIZE -u RANK -u SLURM_STEP_NUM_TASKS -u PMIX_NAMESPACE \
        -u PMIX_SERVER_URI2 -u PMIX_SERVER_URI3 -u PMIX_SERVER_URI4 \
        -u PMIX_SERVER_URI41 -u CUDA_VISIBLE_DEVICES \
        DDP_BOOTSTRAP=single LD_PRELOAD="$mock" "$@"
}

# loop_breaks NAME RC VAR=VALUE...: nccl_probe's loop of 10 allreduces,
# on the mock set up by the VARs to break at the third call, exits 2 within
# 10 s: the third call (index 2) failed with RC, and a call after it fails
# with RC again (sticky), and the communicator was aborted once.  Output
# in NAME.out and NAME.err.
loop_breaks () {
    name=$1 rc=$2
    shift 2
    start=$(date +%s)
    test_expect_code 2 on_mock env "$@" DDP_BACKEND=nccl "$probe" loop 10 \
        >"$name.out" 2>"$name.err" &&
    cat "$name.out" "$name.err" &&
    test $(( $(date +%s) - start )) -le 10 &&
    grep "^loop failed at 2 rc=$rc " "$name.out" &&
    grep "^again rc=$rc\$" "$name.out" &&
    test $(grep -c "mock: ncclCommAbort" "$name.err") = 1
}

test_expect_success 'nccl_check: every collective, dtype, op and buffer kind' '
	on_mock env DDP_BACKEND=nccl "$DDP_PROGS/nccl_check" --quick >check.out 2>check.err &&
	test $(grep -c "^ok " check.out) -ge 200 &&
	! grep "^not ok" check.out &&
	grep "mock: ncclCommFinalize" check.err &&
	grep "mock: ncclCommDestroy" check.err
'
test_expect_success 'the core'"'"'s ddp_check passes on the nccl backend, re-init included' '
	on_mock env DDP_BACKEND=nccl "$DDP_PROGS/ddp_check" -q -r >ddpcheck.out 2>&1 &&
	grep "backend nccl: [0-9]* checks, 0 failed here, 0 failed in all" ddpcheck.out &&
	grep "init again: allreduce ok" ddpcheck.out
'
test_expect_success 'the helpers (host buffers, staged) pass on the nccl backend' '
	on_mock env DDP_BACKEND=nccl "$DDP_BUILD_DIR/libjob/helpers/test/helpers.t" >helpers.out 2>helpers.err &&
	grep "mock: ncclCommDestroy" helpers.err &&
	grep -q "^ok " helpers.out &&
	! grep "^not ok" helpers.out
'
test_expect_success 'auto with a device picks nccl; DDP_DEBUG shows the init phases' '
	on_mock env DDP_BACKEND=auto DDP_DEBUG=1 "$probe" >auto.out 2>auto.err &&
	cat auto.out &&
	grep "^init ok rank=0 size=1 backend=nccl comm=yes stream=yes device=0$" auto.out &&
	grep "^allreduce_stream rc=0 " auto.out &&
	grep "^gpu_mem_info rc=0 " auto.out &&
	grep "nccl: GPU 0 of this task" auto.err &&
	grep "nccl: init phases: local setup .* exchange .* communicator" auto.err
'
test_expect_success 'no device: auto is host, nccl fails naming cudaGetDeviceCount' '
	on_mock env MOCK_CUDA_DEVICES=0 DDP_BACKEND=auto "$probe" >nodev.out &&
	grep "backend=host" nodev.out &&
	test_expect_code 1 on_mock env MOCK_CUDA_DEVICES=0 DDP_BACKEND=nccl "$probe" >nodev2.out 2>nodev2.err &&
	grep "^init failed rank=? rc=-13 " nodev2.out &&
	grep "cannot use NCCL: no CUDA device visible to this task (CUDA_VISIBLE_DEVICES=unset): request GPUs" nodev2.err
'
test_expect_success 'CUDA in name only (no driver, stub, mismatch): auto is host, nccl says why' '
	for d in none stub mismatch; do
		on_mock env MOCK_CUDA_DRIVER=$d DDP_BACKEND=auto DDP_DEBUG=1 "$probe" >drv-$d.out 2>drv-$d.err &&
		grep "^init ok rank=0 size=1 backend=host " drv-$d.out &&
		grep "auto: host backend: no usable CUDA device: " drv-$d.err &&
		! grep "mock: ncclComm" drv-$d.err || return 1
	done &&
	grep "no NVIDIA driver on this node (libcuda.so.1 cannot be loaded)\|the NVIDIA driver on this node is older than the CUDA" drv-none.err &&
	grep "stub library" drv-stub.err &&
	test_expect_code 1 on_mock env MOCK_CUDA_DRIVER=none DDP_BACKEND=nccl "$probe" >drv.out 2>drv.err &&
	grep "^init failed rank=? rc=-13 " drv.out &&
	grep "cannot use NCCL: no NVIDIA driver on this node\|cannot use NCCL: the NVIDIA driver on this node is older" drv.err
'
test_expect_success 'init that never finishes: DDP_ETIMEDOUT at the deadline, aborted' '
	start=$(date +%s) &&
	test_expect_code 1 on_mock env MOCK_NCCL_INIT=hang DDP_TIMEOUT=2 DDP_BACKEND=nccl "$probe" >ihang.out 2>ihang.err &&
	cat ihang.out ihang.err &&
	elapsed=$(( $(date +%s) - start )) &&
	test $elapsed -ge 1 && test $elapsed -le 10 &&
	grep "^init failed rank=? rc=-7 " ihang.out &&
	grep "communicator init did not complete within DDP_INIT_TIMEOUT=2" ihang.err &&
	test $(grep -c "mock: ncclCommAbort" ihang.err) = 1
'
test_expect_success 'init that fails: DDP_ENCCL with NCCL'"'"'s reason, aborted' '
	test_expect_code 1 on_mock env MOCK_NCCL_INIT=fail DDP_BACKEND=nccl "$probe" >ifail.out 2>ifail.err &&
	cat ifail.out ifail.err &&
	grep "^init failed rank=? rc=-12 " ifail.out &&
	grep "communicator init: unhandled system error" ifail.err
'
test_expect_success 'a collective that never completes: DDP_ETIMEDOUT, then sticky' '
	loop_breaks hang -7 MOCK_NCCL_HANG_AFTER=3 DDP_TIMEOUT=2 &&
	grep "^comm after=no$" hang.out &&
	grep "nccl: ddp_allreduce #4 did not complete within DDP_TIMEOUT=2 s: a peer is missing, hung or unreachable" hang.err &&
	! grep "mock: ncclCommFinalize" hang.err
'
test_expect_success 'an asynchronous remote error: DDP_EPEER at once, not at the deadline' '
	loop_breaks aerr -8 MOCK_NCCL_ERROR_AFTER=3 DDP_TIMEOUT=60 &&
	grep "nccl: ddp_allreduce #4: remote process exited" aerr.err
'
test_expect_success 'a healthy loop finalizes cleanly' '
	on_mock env DDP_BACKEND=nccl "$probe" loop 100 >okloop.out 2>okloop.err &&
	grep "^loop ok 100$" okloop.out &&
	! grep "mock: ncclCommAbort" okloop.err
'
test_expect_success 'a finalize that never completes is bounded (5 s) and aborted' '
	start=$(date +%s) &&
	on_mock env MOCK_NCCL_FINALIZE=hang DDP_TIMEOUT=60 DDP_BACKEND=nccl "$probe" >fin.out 2>fin.err &&
	cat fin.out fin.err &&
	elapsed=$(( $(date +%s) - start )) &&
	test $elapsed -ge 4 && test $elapsed -le 15 &&
	grep "ncclCommFinalize did not complete within DDP_TIMEOUT=5" fin.err &&
	test $(grep -c "mock: ncclCommAbort" fin.err) = 1 &&
	! grep "mock: ncclCommDestroy" fin.err
'
# NCCL 2.28.3 on an H100: an out-of-place ncclAvg of 1048579 elements left
# the last 3 unwritten (doc/nccl.md).  MOCK_NCCL_AVG_TAIL=3 does the same.
test_expect_success 'the stand-in reproduces NCCL 2.28.3'"'"'s out-of-place ncclAvg tail; libddp writes it' '
	on_mock env DDP_BACKEND=nccl "$DDP_PROGS/nccl_bench" --avg-probe --quick >probe0.out 2>probe0.err &&
	ddp_show probe0.out &&
	test $(grep -c "^  avg-probe raw .* n=1048579 rank 0: all written$" probe0.out) = 8 &&
	on_mock env MOCK_NCCL_AVG_TAIL=3 DDP_BACKEND=nccl "$DDP_PROGS/nccl_bench" --avg-probe --quick >probe.out 2>probe.err &&
	ddp_show probe.out &&
	test $(grep -c "^  avg-probe raw .* n=1048579 rank 0: 3 unwritten from 1048576$" probe.out) = 8 &&
	test $(grep -c "^  avg-probe ddp .* n=1048579 rank 0: all written$" probe.out) = 8 &&
	grep "^# avg-probe rank 0: raw NCCL left elements unwritten in 8 of 8 cases, libddp in 0 of 8$" probe.out
'
test_expect_success 'DDP_AVG out of place is right there: float dtypes, allreduce and reduce, n=1048579' '
	on_mock env MOCK_NCCL_AVG_TAIL=3 DDP_BACKEND=nccl "$DDP_PROGS/nccl_check" --op avg --count 1048579 >avg.out 2>avg.err &&
	ddp_show avg.out &&
	! grep "^not ok" avg.out &&
	test $(grep -E -c "^ok [0-9]+ - allreduce/reduce (float16|bfloat16|float32|float64) avg on (device|managed|pinned|host) buffers$" avg.out) = 16 &&
	test $(grep -E -c "^ok [0-9]+ - reduce_scatter (float16|bfloat16|float32|float64) avg on (device|managed|pinned|host) buffers$" avg.out) = 16 &&
	! grep -E "^ok [0-9]+ - (allreduce/reduce|reduce_scatter) [a-z0-9]+ (sum|prod|min|max) " avg.out
'
test_expect_success 'reduce-scatter on a world of one: every dtype, op and buffer kind, in and out of place' '
	test $(grep -E -c "^ok [0-9]+ - reduce_scatter [a-z0-9]+ [a-z]+ on (device|managed|pinned|host) buffers$" check.out) = 200 &&
	on_mock env DDP_BACKEND=nccl "$probe" rs 5 >rs1.out 2>rs1.err &&
	cat rs1.out &&
	grep "^rs rank=0 rc=0 first=0 last=4$" rs1.out &&
	grep "^rs in-place rank=0 rc=0 first=0 last=4$" rs1.out
'
# 3 ranks under the local launcher with fake peers: each moves its own
# data only, so rank r receives its own block r (elements 1000 r + 5 r ..).
test_expect_success 'reduce-scatter with fake peers: each rank gets its own block, in and out of place' '
	rm -rf rs3.peers && mkdir rs3.peers &&
	env -u PMIX_NAMESPACE -u SLURM_STEP_NUM_TASKS -u WORLD_SIZE -u RANK \
		-u DDP_BOOTSTRAP -u CUDA_VISIBLE_DEVICES \
		timeout --kill-after=5 60 "$DDP_PROGS/ddp-local-run" -n 3 -N 2 -t 50 -- \
		env LD_PRELOAD="$mock" MOCK_NCCL_PEERS=fake MOCK_GPU_ID=rank \
		MOCK_NCCL_PEER_DIR="$PWD/rs3.peers" DDP_BACKEND=nccl \
		"$probe" rs 5 >rs3.out 2>rs3.err &&
	cat rs3.out &&
	for r in 0 1 2; do
		first=$((1005 * r)) last=$((1005 * r + 4)) &&
		grep "^rs rank=$r rc=0 first=$first last=$last$" rs3.out &&
		grep "^rs in-place rank=$r rc=0 first=$first last=$last$" rs3.out ||
		return 1
	done &&
	test $(grep -c "mock: ncclCommDestroy" rs3.err) = 3
'
# The backend's split, driven directly (libjob/nccl/test/split.c): with
# ncclCommSplit on the parent, and on a stand-in without it (NCCL < 2.18),
# where the group's communicator is made from the group's bootstrap.
split_t=$DDP_BUILD_DIR/libjob/nccl/test/split.t
nosplit=$DDP_BUILD_DIR/tests/progs/.libs/nccl_mock_nosplit.so
# split.t's TAP is shown indented: under prove -v its lines would be read
# as this file's.
test_expect_success 'split: a group through ncclCommSplit, a whole context; failures' '
	on_mock env DDP_DEBUG=1 "$split_t" >split.out 2>split.err &&
	sed "s/^/  /" split.out &&
	grep "^# the loaded NCCL has ncclCommSplit$" split.out &&
	! grep "^not ok" split.out &&
	grep -q "^ok .* - not even with DDP_UNDEFINED$" split.out &&
	test $(grep -c "nccl: group of colour [07]: rank 0 of 1, GPU 1, through ncclCommSplit" split.err) = 2 &&
	test $(grep -c "nccl: init phases" split.err) = 1
'
test_expect_success 'split without ncclCommSplit: the group is created from its bootstrap' '
	env -u WORLD_SIZE -u RANK -u CUDA_VISIBLE_DEVICES LD_PRELOAD="$nosplit" \
		DDP_DEBUG=1 "$split_t" >nosplit.out 2>nosplit.err &&
	sed "s/^/  /" nosplit.out &&
	grep "^# the loaded NCCL lacks ncclCommSplit$" nosplit.out &&
	! grep "^not ok" nosplit.out &&
	grep -q "^ok .* - a group that never forms: DDP_ETIMEDOUT$" nosplit.out &&
	! grep "through ncclCommSplit" nosplit.err &&
	test $(grep -c "nccl: init phases" nosplit.err) = 3
'
# mock_queries FILE: the cudaPointerGetAttributes count MOCK_CUDA_COUNTS=1
# logged in FILE.
mock_queries () {
    sed -n "s/^mock: counts: cudaPointerGetAttributes \([0-9]*\), .*/\1/p" "$1"
}
# On an H100 the two buffer-kind queries per call were most of libddp's
# own cost of a pipelined call (doc/nccl.md): 3000 calls on the same
# buffers must not ask 3000 times.
test_expect_success 'pipelined calls on the same device buffers ask the buffer kinds once, not per call' '
	on_mock env MOCK_CUDA_COUNTS=1 DDP_BACKEND=nccl "$DDP_PROGS/nccl_bench" --calls 1000 >calls.out 2>calls.err &&
	cat calls.out calls.err &&
	grep "^calls: 1000 of each, ok" calls.out &&
	grep "^mock: counts: cudaPointerGetAttributes [0-9]*, collectives 300[0-9]$" calls.err &&
	test "$(mock_queries calls.err)" -le 10 &&
	on_mock env MOCK_CUDA_COUNTS=1 DDP_NCCL_BUFFER_CACHE=0 DDP_BACKEND=nccl "$DDP_PROGS/nccl_bench" --calls 1000 >nocache.out 2>nocache.err &&
	cat nocache.err &&
	grep "^calls: 1000 of each, ok" nocache.out &&
	test "$(mock_queries nocache.err)" -ge 3000
'
test_expect_success 'with the kept buffer ranges: another GPU'"'"'s memory is refused, freed and reused memory is right' '
	on_mock env MOCK_CUDA_DEVICES=2 DDP_BACKEND=nccl "$DDP_PROGS/nccl_check" --quick >gpu2.out 2>gpu2.err &&
	! grep "^not ok" gpu2.out &&
	grep -q "^ok [0-9]* - memory of GPU 1 is refused (rc -1, -1), this GPU" gpu2.out &&
	grep -q "^ok [0-9]* - a device buffer freed, then managed memory at the same address: right sums" gpu2.out &&
	grep -q "^ok [0-9]* - then host memory: right sums" gpu2.out
'
test_expect_success 'nccl_bench --quick runs against the mock' '
	on_mock env DDP_BACKEND=nccl "$DDP_PROGS/nccl_bench" --quick --max-bytes 4096 >bench.out &&
	ddp_show bench.out &&
	grep -q "^  allreduce" bench.out &&
	grep -q "^  allgather" bench.out
'
# The core's communicators and requests on the NCCL backend, in one
# process: every group is this rank alone, split through ncclCommSplit
# (its rank without a colour fencing first) and, without it, from the
# group's bootstrap; the requests run the backend on the library's thread.
test_expect_success 'ddp_groups on the NCCL backend: splits, every collective per group, requests' '
	on_mock env DDP_BACKEND=nccl DDP_DEBUG=1 "$DDP_PROGS/ddp_groups" check >groups.out 2>groups.err &&
	cat groups.out &&
	grep -q "^ddp_groups rank 0/1: [0-9]* checks, 0 failed" groups.out &&
	grep -q "through ncclCommSplit" groups.err &&
	env -u PMIX_NAMESPACE -u SLURM_STEP_NUM_TASKS -u WORLD_SIZE -u RANK \
		LD_PRELOAD="$nosplit" DDP_BACKEND=nccl "$DDP_PROGS/ddp_groups" check >nosplit-groups.out 2>&1 &&
	grep -q "^ddp_groups rank 0/1: [0-9]* checks, 0 failed" nosplit-groups.out
'
# A group its members make alone (ddp_comm_create_group) takes the NCCL
# backend's join: a communicator from unique ids on the parent's GPU.
test_expect_success 'ddp_members on the NCCL backend: groups made by their members' '
	mkdir -p members.d &&
	on_mock env DDP_BACKEND=nccl DDP_DEBUG=1 "$DDP_PROGS/ddp_members" check "$PWD/members.d" >members.out 2>members.err &&
	cat members.out &&
	grep -q "^ddp_members rank 0/1: [0-9]* checks, 0 failed" members.out &&
	grep -q "ddp_comm_create_group: group [0-9]*: rank 0 of 1" members.err
'
test_done
