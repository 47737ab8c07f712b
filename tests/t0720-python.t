#!/bin/sh
test_description='the Python module ddp: every function, argument errors,
failures on one rank raised on all (RemoteError), a killed rank named
(PeerError), the sampler against the C one; several ranks through the local
launcher, the host backend, the build tree'"'"'s module'
. "$(dirname "$0")/test-lib.sh"

# What configure found (libjob/python/build.env): whether the module was
# built, for which interpreter, and if not, why.
ddp_python_require

RUN=$DDP_PROGS/ddp-local-run
CHECK=$DDP_SRC_DIR/tests/progs/py_check.py
SAMPLER=$DDP_PROGS/sampler_print
# The build tree's module (stage/ddp: links to ddp/__init__.py and the
# libtool module), no bytecode left in the source tree.
PYTHONPATH=$DDP_PYTHON_STAGE
PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH PYTHONDONTWRITEBYTECODE
unset PYTHONHOME PYTHONSTARTUP
# Not in a Slurm step or a PMIx job, whatever the caller is in.
unset PMIX_NAMESPACE SLURM_STEP_NUM_TASKS WORLD_SIZE RANK DDP_BOOTSTRAP
unset DDP_TIMEOUT DDP_INIT_TIMEOUT DDP_DEBUG DDP_BACKEND DDP_STOP_SIGNALS
unset SLURM_RESTART_COUNT
DDP_BACKEND=host
export DDP_BACKEND

# ./python: the interpreter the module was built for (ASan preloaded in a
# sanitizer build: ddp_python_script).
ddp_python_script "$(ls "$DDP_PYTHON_STAGE"/ddp/_ddp*.so)" "$DDP_PYTHON"
PY=$PWD/python

py () {
	"$PY" "$CHECK" "$@"
}

# run NAME ARGS...: ddp-local-run ARGS -- python py_check.py ..., bounded;
# its exit status in NAME.rc, seconds in NAME.secs, output in NAME.out/.err.
run () {
	name=$1; shift
	start=$(date +%s.%N)
	timeout --kill-after=5 60 "$RUN" "$@" >"$name.out" 2>"$name.err"
	echo $? >"$name.rc"
	echo "$start $(date +%s.%N)" | awk '{ printf "%.1f\n", $2 - $1 }' >"$name.secs"
	ddp_show "$name.out"; cat "$name.err" >&2
	echo "exit $(cat "$name.rc") after $(cat "$name.secs") s"
}

# within NAME SECONDS: the run took less.
within () {
	awk -v t="$(cat "$1.secs")" -v b="$2" 'BEGIN { exit !(t < b) }'
}

test_expect_success 'the module imports from the build tree, as built' '
	"$PY" -c "import ddp, sys; print(ddp.__file__, ddp._ddp.__file__)" >where &&
	cat where &&
	grep -q "^$DDP_PYTHON_STAGE/ddp/__init__.py $DDP_PYTHON_STAGE/ddp/_ddp" where
'

test_expect_success 'one process: identity, a world of one, help(ddp) documents every name' '
	py api >api.out 2>api.err; echo $? >api.rc &&
	ddp_show api.out && cat api.err &&
	test "$(cat api.rc)" = 0 &&
	grep -q "^api: 1[0-9] checks, 0 failed$" api.out
'

test_expect_success 'a malformed DDP_* variable: ddp.init raises, naming it' '
	test_must_fail env DDP_SHM_SLOT=abc "$PY" -c "import ddp; ddp.init()" \
		2>badenv.err &&
	cat badenv.err &&
	grep "^ddp.Error: ddp.init: invalid argument: DDP_SHM_SLOT='"'"'abc'"'"' is not a whole number from 4096" badenv.err &&
	test_must_fail env DDP_DEBUG=yes "$PY" -c "import ddp; ddp.log(1)" \
		2>baddebug.err &&
	cat baddebug.err &&
	grep "^ddp.Error: ddp.init: invalid argument: DDP_DEBUG='"'"'yes'"'"' is not 0 or 1" baddebug.err
'
test_expect_success 'bad arguments: TypeError / ValueError with the reason' '
	py args >args.out 2>args.err; echo $? >args.rc &&
	ddp_show args.out && cat args.err &&
	test "$(cat args.rc)" = 0 &&
	grep -q "^rank 0: args: [4-9][0-9] checks, 0 failed$" args.out &&
	! grep -q FAIL args.out
'

# CUDA tensors on the NCCL backend, on the stand-in CUDA and NCCL
# (tests/progs/nccl_mock.c, preloaded; built where NCCL's headers are):
# one process, a DLPack producer of its "device" memory.
mock=$DDP_BUILD_DIR/tests/progs/.libs/nccl_mock.so
test -f "$mock" && test_set_prereq NCCL_MOCK
test_expect_success NCCL_MOCK 'CUDA tensors on the (stand-in) NCCL backend: in place, ordered on libddp'"'"'s stream; refused where they cannot be' '
	env -u CUDA_VISIBLE_DEVICES DDP_BOOTSTRAP=single DDP_BACKEND=nccl \
		LD_PRELOAD="$mock" "$PY" "$CHECK" cuda >cuda.out 2>cuda.err ||
		{ cat cuda.out cuda.err; false; } &&
	ddp_show cuda.out &&
	grep -q "^rank 0: cuda: 9 checks, 0 failed$" cuda.out
'

test_expect_success 'every function on 4 ranks over 2 simulated nodes' '
	run coll -n 4 -N 2 -- "$PY" "$CHECK" collectives &&
	test "$(cat coll.rc)" = 0 &&
	test $(grep -c "^rank [0-3]: collectives: [4-9][0-9] checks, 0 failed$" coll.out) = 4 &&
	! grep -q FAIL coll.out &&
	grep -q "^\[ddp rank 3/4\] line two of 3$" coll.err
'

test_expect_success 'uneven layout (5 ranks, 2 nodes): every function' '
	run coll5 -m 0,1,0,1,1 -- "$PY" "$CHECK" collectives &&
	test "$(cat coll5.rc)" = 0 &&
	test $(grep -c "^rank [0-4]: collectives: [4-9][0-9] checks, 0 failed$" coll5.out) = 5
'

# Groups, requests and reduce-scatter (tests/progs/py_groups.py).
GROUPS=$DDP_SRC_DIR/tests/progs/py_groups.py

test_expect_success 'groups and requests in one process; finalize completes a request in flight' '
	"$PY" "$GROUPS" single >gsingle.out 2>gsingle.err ||
		{ cat gsingle.out gsingle.err; false; } &&
	ddp_show gsingle.out &&
	grep -q "^rank 0: single: 1[0-9] checks, 0 failed$" gsingle.out
'

# groups: split with keys, nested, new_group, create_group (members
# only), every collective with group=, requests (several in flight, test(), dropped), the errors.
for layout in "4 -n 4 -N 2" "5 -m 0,1,0,1,1"; do
	n=${layout%% *}; args=${layout#* }
	test_expect_success "groups and requests on $n ranks ($args)" '
		run groups$n $args -- "$PY" "$GROUPS" groups &&
		test "$(cat groups$n.rc)" = 0 &&
		! grep -q FAIL groups$n.out &&
		test $(grep -c "^rank [0-4]: groups: [6-9][0-9] checks, 0 failed$" groups$n.out) = $n &&
		test $(grep -c "^rank [0-4]: ok create_group" groups$n.out) = $((9 * n))
	'
	test_expect_success "reduce_scatter on $n ranks ($args): world, groups, in place, async" '
		run rs$n $args -- "$PY" "$GROUPS" rs &&
		test "$(cat rs$n.rc)" = 0 &&
		! grep -q FAIL rs$n.out &&
		test $(grep -c "^rank [0-4]: rs: [0-9]* checks, 0 failed$" rs$n.out) = $n
	'
done

# The same on torch tensors (tests/progs/torch_tensors.py groups; t0750
# runs it under srun), where this Python has torch.
# ./tpython: the interpreter with torch (ddp_torch_find: the module's own
# or Debian's of the same minor version); with DDP_REQUIRE_TORCH=1
# (contrib/check.sh) its absence fails.
if ddp_torch_find; then
	ddp_torch_python tpython && test_set_prereq TORCH
	say "# torch case: PyTorch under $TORCH_PY"
elif test "${DDP_REQUIRE_TORCH:-0}" = 1; then
	test_expect_success 'PyTorch is here (DDP_REQUIRE_TORCH=1)' '
		echo "no PyTorch for the module: $TORCH_WHY"; false
	'
else
	say "# torch case skipped: no PyTorch for the module: $TORCH_WHY"
fi
test_expect_success TORCH 'groups, requests and reduce_scatter on torch tensors (4 ranks, 2 nodes)' '
	run tgroups -n 4 -N 2 -- "$PWD/tpython" "$DDP_SRC_DIR/tests/progs/torch_tensors.py" groups &&
	test "$(cat tgroups.rc)" = 0 &&
	! grep -q FAIL tgroups.out &&
	test $(grep -c "^rank [0-3]: groups: [0-9]* checks, 0 failed$" tgroups.out) = 4
'

test_expect_success 'an exception on one rank is raised on every rank (RemoteError), long work does not time out' '
	run remote -n 4 -N 2 -- env DDP_TIMEOUT=1 "$PY" "$CHECK" remote &&
	test "$(cat remote.rc)" = 0 &&
	test $(grep -c "^rank [0-3]: remote: [0-9]* checks, 0 failed$" remote.out) = 4 &&
	! grep -q FAIL remote.out &&
	grep -q "^rank 2: ok run_on_main: RemoteError names rank, type and message$" remote.out &&
	grep -q "^rank 0: ok run_on_main: the rank that raised gets its own$" remote.out &&
	within remote 45
'

test_expect_success 'an int on one rank, a float on the others: every rank raises ddp.Error (EMISMATCH) saying so' '
	for l in "-n 2 -N 1" "-n 3 -N 1" "-n 2 -N 2" "-n 4 -N 2"; do
		run mixed $l -- "$PY" "$CHECK" mixed 1 &&
		test "$(cat mixed.rc)" = 0 &&
		n=${l#-n } && n=${n%% *} &&
		test $(grep -c "^rank [0-3]: Error code=-14 ddp.all_reduce: ranks disagree: " mixed.out) = $n &&
		grep -q "an int on some ranks and a float on others (an int is reduced as int64, a float as float64): pass the same type on every rank, e.g. float(x); .*rank 1: ddp_allreduce of 1 float64 with SUM" mixed.out ||
		return 1
	done
'

test_expect_success 'a rank killed in a barrier loop: the others raise PeerError naming it' '
	run kill -n 4 -N 2 -- "$PY" "$CHECK" kill 2 40 &&
	test "$(cat kill.rc)" = 137 &&
	grep -q "ddp-local-run: rank 2 killed by signal 9" kill.err &&
	test $(grep -c "^rank [013]: PeerError after 40 barriers in [0-9.]* s: code=-8 where=ddp.barrier ddp.barrier: a peer died or aborted: rank 2 died" kill.out) = 3 &&
	test $(grep -c "^rank [013]: next call: PeerError ddp.all_reduce: .*rank 2 died" kill.out) = 3 &&
	within kill 20
'

test_expect_success 'a late rank: the others raise TimeoutError naming it and the call' '
	run late -n 3 -N 2 -- env DDP_TIMEOUT=1 "$PY" "$CHECK" late 1 3 &&
	test $(grep -c "^rank [02]: TimeoutError code=-7 ddp.barrier: .*rank 1 did not arrive within DDP_TIMEOUT (1 s)" late.out) = 2
'

test_expect_success 'an uncaught exception: the rank exits without a final barrier, the others name it' '
	run uncaught -n 3 -N 2 -- "$PY" "$CHECK" uncaught 1 &&
	test "$(cat uncaught.rc)" = 1 &&
	grep -q "RuntimeError: uncaught on purpose" uncaught.err &&
	test $(grep -Ec "^rank [02]: PeerError after [0-9.]* s: .*rank 1 (died|exited with status 1 without ddp_finalize)" uncaught.out) = 2 &&
	within uncaught 20
'
# The module's excepthook tells the launcher (ddp_exit_reason): the last
# line names the exception, not only the status (before: "rank 1 exited
# with status 1"), and the rank says it with its rank, once.  (The others
# catch their PeerError here and exit 0; when they raise it too, they do
# not repeat it: a victim's reason is not logged, t0246.)
test_expect_success 'an uncaught exception: the last line and the rank name it' '
	tail -n 1 uncaught.err | grep "^ddp-local-run: rank 1 raised RuntimeError: uncaught on purpose (exited with status 1)$" &&
	test $(grep -c "this rank ends" uncaught.err) = 1 &&
	grep -q "^\[ddp rank 1/3\] this rank ends: it raised RuntimeError: uncaught on purpose$" uncaught.err
'
test_expect_success 'every rank raises, one first: the last line names its exception, then the victims' '
	run raise -n 4 -N 2 -- "$PY" "$CHECK" raise 2 &&
	test "$(cat raise.rc)" = 1 &&
	tail -n 1 raise.err | grep "^ddp-local-run: rank 2 raised ValueError: bad batch 7 (exited with status 1); ranks 0-1,3 failed after it, as victims: rank 2 exited with status 1 without ddp_finalize" &&
	test $(grep -c "^ddp.PeerError: .*rank 2 exited with status 1" raise.err) = 3 &&
	test $(grep -c "this rank ends" raise.err) = 1 &&
	within raise 20
'

test_expect_success 'should_stop: a signal on one rank stops every rank at the same step' '
	run stop -n 4 -N 2 -- "$PY" "$CHECK" stop 1 7 &&
	test "$(cat stop.rc)" = 0 &&
	test $(grep -c "^rank [0-3]: stopped at step 7, " stop.out) = 4 &&
	grep -q "^rank 1: stopped at step 7, signal here 10$" stop.out &&
	grep -q "^rank 0: stopped at step 7, signal here 0$" stop.out
'

test_expect_success 'the GIL is released while a rank waits in a collective' '
	run gil -n 3 -N 2 -- "$PY" "$CHECK" gil &&
	test "$(cat gil.rc)" = 0 &&
	sed -n "s/^rank [02]: waited \([0-9.]*\) s, the thread ran \([0-9]*\) times$/\1 \2/p" gil.out >gil.nums &&
	test $(wc -l <gil.nums) = 2 &&
	# waited at least 1 s, and the thread ran in it (1 ms naps: hundreds)
	awk "\$1 < 1.0 || \$2 < 200 { bad = 1 } END { exit bad }" gil.nums
'

# Main sleeps 5 s in run_on_main's func; rank 3, waiting for it, gets
# SIGINT at 1 s (a note: it takes effect when the wait ends) and at 1.5 s
# (the process ends by SIGINT).  Its node's leader (rank 2) names it at its
# next status round (DDP_TIMEOUT/4: 0.5 s); main when its func returns.
test_expect_success 'Ctrl-C twice while waiting for a busy main: the process ends, the others name it' '
	run int -n 4 -N 2 -- env DDP_TIMEOUT=2 "$PY" "$CHECK" interrupt 3 5 &&
	test "$(cat int.rc)" = 130 &&
	grep -q "ddp-local-run: rank 3 killed by signal 2" int.err &&
	test $(grep -c "^\[ddp rank 3/4\] interrupted while waiting for the other ranks" int.err) = 1 &&
	grep -q "^rank 2: PeerError after [1-3]\.[0-9] s: .*rank 3 died" int.out &&
	grep -q "^rank 1: PeerError after [0-9.]* s: .*rank 3 died" int.out &&
	grep -q "^rank 0: PeerError after [5-9]\.[0-9] s: ddp.run_on_main: a peer died" int.out &&
	! grep -q "^rank 3:" int.out
'

# sampler_cases: N WORLD RANK SHUFFLE SEED DROP_LAST EPOCH [START COUNT],
# one case a line: even and uneven sizes, shuffled or not, drop_last,
# a later epoch, a large seed, windows for a resume in mid-epoch.
cat >sampler_cases <<\EOF
10 4 0 1 0 0 0
10 4 3 1 0 0 0
10 4 3 1 0 1 0
103 8 5 1 11 0 4
103 8 7 0 11 0 4
103 8 7 0 11 1 4
1 3 2 1 5 0 0
0 2 1 1 5 0 0
5000 3 1 1 18446744073709551615 0 9
5000 3 2 1 12345 1 2 100 700
9000 1 0 1 77 0 1 8990 10
EOF

test_expect_success 'Sampler yields the C sampler'"'"'s indices (sampler_print)' '
	i=0 &&
	while read -r args; do
		i=$((i + 1)) &&
		"$SAMPLER" $args >c.$i &&
		py sampler $args >py.$i &&
		test_cmp c.$i py.$i || { echo "case $i: $args"; return 1; }
	done <sampler_cases &&
	test $i = 11 &&
	# not trivially equal: a shuffled list is not in order, a padded one
	# has its size rounded up
	sed 1d c.4 >list4 && sort -n list4 >sorted4 && ! cmp -s list4 sorted4 &&
	test "$(head -n 1 c.9)" = "num_samples=1667 total_size=5001"
'

test_done
