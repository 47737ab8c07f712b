#!/bin/sh
test_description='contrib/gpu-check.sh: no GPU, a GPU CUDA cannot use, and every step on the stand-in

The script is meant for a GPU machine (doc/nccl.md); here it runs without
one: no nvidia-smi or one that lists no GPU is exit 77, a GPU that CUDA
cannot use is a failed probe, a step that hangs is cut at its limit and the
budget then stops the rest, and --stand-in (tests/progs/nccl_mock.so) runs
every step of a packed build and writes a report with each of them.'
. "$(dirname "$0")/test-lib.sh"

script=$DDP_SRC_DIR/contrib/gpu-check.sh
mock=$DDP_BUILD_DIR/tests/progs/.libs/nccl_mock.so
if ! test -f "$mock"; then
    skip_all="built without NCCL (no stand-in)"
    test_done
fi
steps="probe check-1 avg-probe check-2x1gpu check-4x1gpu avg-2x1gpu check-pergpu bench
kill-barrier kill-allreduce skip abort train"

if unshare -u true 2>/dev/null || unshare -r -u true 2>/dev/null; then
    test_set_prereq UTSNS
fi

# verdict REPORT STEP: the verdict in REPORT's summary row of STEP.
verdict () {
    sed -n "s/^| $2 | \([A-Z ]*\) | .*/\1/p" "$1"
}

# A fake nvidia-smi: "none" lists no GPU, "one" lists one.
fake_smi () {
    case $1 in
    none) printf '#!/bin/sh\necho "No devices were found"\nexit 6\n' ;;
    one) printf '#!/bin/sh\ncase "$*" in\n-L) echo "GPU 0: Fake GPU (UUID: GPU-0)" ;;\n*driver_version*) echo 999.1 ;;\n*--query-gpu*) echo "0, Fake GPU, 80 MiB, 00000000:01:00.0" ;;\n*) echo "CUDA Version: 13.0" ;;\nesac\n' ;;
    esac >smi-$1 &&
    chmod +x smi-$1
}

test_expect_success 'no nvidia-smi: says so, exit 77, a report saying no GPU' '
	test_expect_code 77 env GPU_CHECK_NVIDIA_SMI=/nonexistent/nvidia-smi \
		"$script" --build "$DDP_BUILD_DIR" --out nosmi.md 2>nosmi.err &&
	ddp_show nosmi.err &&
	grep "no GPU here: no nvidia-smi (/nonexistent/nvidia-smi not found)" nosmi.err &&
	grep "^# libddp GPU check: no GPU" nosmi.md
'
test_expect_success 'nvidia-smi lists no GPU: exit 77 with its words' '
	fake_smi none &&
	test_expect_code 77 env GPU_CHECK_NVIDIA_SMI="$PWD/smi-none" \
		"$script" --build "$DDP_BUILD_DIR" --out nodev.md 2>nodev.err &&
	grep "nvidia-smi lists no GPU: No devices were found" nodev.err
'
test_expect_success 'a GPU CUDA cannot use: the probe fails, the rest is not run, exit 1' '
	fake_smi one &&
	test_expect_code 1 env GPU_CHECK_NVIDIA_SMI="$PWD/smi-one" LD_PRELOAD="$mock" \
		MOCK_CUDA_DRIVER=none "$script" --build "$DDP_BUILD_DIR" \
		--out nocuda.md --work nocuda 2>nocuda.err &&
	ddp_show nocuda.md &&
	test "$(verdict nocuda.md probe)" = FAIL &&
	grep "^| probe | FAIL | .*CUDA cannot use a GPU: no usable GPU: CUDA driver version is insufficient" nocuda.md &&
	grep "^- GPUs: 0, Fake GPU, 80 MiB" nocuda.md &&
	grep "^- driver: 999.1; CUDA of the driver (nvidia-smi): 13.0" nocuda.md &&
	for s in $steps; do
		test "$s" = probe || test "$(verdict nocuda.md $s)" = "NOT RUN" || return 1
	done
'
test_expect_success 'bad command lines and build trees: exit 2, saying what is wrong' '
	test_expect_code 2 "$script" --frobnicate 2>bad1.err &&
	grep "unknown argument .--frobnicate." bad1.err &&
	test_expect_code 2 "$script" --build /nonexistent 2>bad2.err &&
	grep "no build tree at ./nonexistent." bad2.err &&
	test_expect_code 2 "$script" --budget 5 2>bad3.err &&
	grep "budget .5.: give a number of seconds, 20 or more" bad3.err
'
test_expect_success 'a hanging step is cut at its limit and the budget stops the rest' '
	start=$(date +%s) &&
	test_expect_code 1 env MOCK_NCCL_INIT=hang DDP_INIT_TIMEOUT=300 \
		"$script" --build "$DDP_BUILD_DIR" --stand-in --quick --budget 20 \
		--out hang.md --work hang 2>hang.err &&
	elapsed=$(( $(date +%s) - start )) &&
	ddp_show hang.err &&
	test $elapsed -le 30 &&
	test "$(verdict hang.md probe)" = PASS &&
	grep "^| check-1 | FAIL | .*cut at its time limit" hang.md &&
	test "$(verdict hang.md train)" = "NOT RUN" &&
	grep "^| train | NOT RUN | [0-9.]* | the time budget (--budget 20 s) is spent" hang.md &&
	! pgrep -f "$DDP_BUILD_DIR/tests/progs/nccl_check"
'
test_expect_success '--pack: the programs, libddp and the libraries to carry' '
	"$script" --build "$DDP_BUILD_DIR" --pack packed 2>pack.err &&
	ddp_show pack.err &&
	for p in nccl_check nccl_bench ddp-local-run ddp_fault ddp_victim; do
		test -x packed/tests/progs/$p || return 1
	done &&
	test -f packed/tests/progs/.libs/nccl_mock.so &&
	test -f packed/libjob/.libs/libddp.so.0 &&
	if ldd "$DDP_BUILD_DIR/libjob/.libs/libddp.so" | grep -q libpmix; then
		test -f packed/lib/libpmix.so.2
	fi &&
	! ls packed/lib | grep -E "^(libc|libcudart|libnccl)\."
'
test_expect_success 'the stand-in, from the packed build: a report with every step' '
	test_expect_code 1 "$script" --build packed --stand-in --quick \
		--out standin.md --work standin 2>standin.err &&
	ddp_show standin.md &&
	grep "^# libddp GPU check: FAIL" standin.md &&
	grep "^\*\*Stand-in run\*\*" standin.md &&
	grep "^- build: $PWD/packed (libddp [0-9]" standin.md &&
	grep "^- CUDA runtime: [0-9]" standin.md &&
	grep "^- NCCL: 2\.[0-9]*\.[0-9]" standin.md &&
	grep "^- libddp loaded at run time: NCCL [0-9]* from .*, CUDA runtime from " standin.md &&
	for s in $steps; do
		grep "^### $s: " standin.md &&
		verdict standin.md $s | grep -E "^(PASS|FAIL|SKIP)$" || return 1
	done &&
	test "$(verdict standin.md probe)" = PASS &&
	grep "^| probe | PASS | .* 2 GPU(s) in CUDA.s view, device 0: mock GPU 0" standin.md &&
	test "$(verdict standin.md check-1)" = PASS &&
	grep "^| check-1 | PASS | [0-9.]* | rank 0: \([0-9]*\)/\1 |" standin.md &&
	grep "^| avg-probe | PASS | .* unwritten in 8 of 8 cases (defect present); libddp in 0 of 8 |" standin.md &&
	grep "^| bench | PASS | .*allreduce 8 B: raw [0-9.]* us, ddp [0-9.]* us" standin.md
'
test_expect_success 'the stand-in: failing checks of several ranks are named, per rank' '
	for s in check-2x1gpu check-4x1gpu avg-2x1gpu check-pergpu; do
		test "$(verdict standin.md $s)" = FAIL || return 1
	done &&
	grep "^| check-pergpu | FAIL | .*rank 0: [0-9]* of [0-9]* passed, [1-9][0-9]* failed; rank 1: " standin.md &&
	grep -q "^not ok " standin.md
'
test_expect_success UTSNS 'the stand-in: a killed, an absent and an aborting rank' '
	grep "^| kill-barrier | PASS | .*survivor: -8 (a peer died or aborted) after [0-9.]* s; names rank 1: yes; message: .*rank 1 (host h1) is gone: its process exited" standin.md &&
	grep "^| kill-allreduce | PASS | .*survivor: -8 .*; names rank 1: yes; message: .*ddp_allreduce #202: rank 1 (host h1) is gone" standin.md &&
	grep "^| skip | PASS | .*survivor: ddp_barrier -7 after [5-6]\.[0-9]* s; names rank 1: yes; message: .*rank 1 (host h1) never entered ddp_barrier #3" standin.md &&
	grep "^| abort | PASS | .*job status 7 " standin.md
'
test_expect_success !UTSNS 'no UTS namespace here: the one-GPU steps say why' '
	grep "^| kill-barrier | FAIL | .*cannot create a UTS namespace" standin.md
'
test_done
