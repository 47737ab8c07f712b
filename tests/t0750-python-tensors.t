#!/bin/sh
test_description='the Python module'"'"'s collectives on torch tensors
(tests/progs/torch_tensors.py): alone, what is refused and why (complex,
bool, int16, a tensor that requires grad, an expanded one, a CUDA one);
4 ranks on 2 nodes under srun --ddp=host: float32/float64/int32/int64
all_reduce in place, a transposed tensor, broadcast, reduce, all_gather_into
and gather_into; groups, requests and reduce_scatter; ranks that pass
different dtypes or sizes all raise
ddp.Error (EMISMATCH) naming both'
. "$(dirname "$0")/test-lib.sh"

# The module, torch, a clean environment, ./python as PY.
ddp_torch_setup
PROG=$DDP_SRC_DIR/tests/progs/torch_tensors.py

# checked NAME RANKS: NAME.out has a "... 0 failed" summary from each of
# RANKS ranks and no FAIL line.
checked () {
	ddp_show "$1.out" &&
	! grep FAIL "$1.out" &&
	test $(grep -c ": [0-9]* checks, 0 failed$" "$1.out") = "$2"
}

test_expect_success 'one process: every dtype in place; what is refused says why' '
	DDP_BACKEND=host "$PY" "$PROG" local >local.out 2>local.err ||
		{ cat local.err; false; } &&
	checked local 1
'

ddp_cluster_require

SRUN="--ddp=host -N2 -n4 --ntasks-per-node=2"

test_expect_success '4 ranks on 2 nodes: sums, a transposed tensor, broadcast, reduce, gathers' '
	ddp_srun $SRUN "$PY" "$PROG" job >job.out 2>job.err ||
		{ cat job.err; false; } &&
	checked job 4
'

test_expect_success '4 ranks on 2 nodes: groups, requests and reduce_scatter on tensors' '
	ddp_srun $SRUN "$PY" "$PROG" groups >groups.out 2>groups.err ||
		{ cat groups.err; false; } &&
	checked groups 4
'

# Each rank raises ddp.Error (EMISMATCH); the ranks that saw both calls
# name them (libddp's message on the other node says which ranks disagree,
# not how); with DDP_CHECK=1 every rank names both.
for case in dtype bytes count; do
	test_expect_success "ranks that pass different tensors ($case): ddp.Error on every rank" "
		ddp_srun $SRUN \"\$PY\" \"\$PROG\" mismatch $case >mm.$case.out \
			2>mm.$case.err || { cat mm.$case.err; false; } &&
		checked mm.$case 4 &&
		test \$(grep -c ': named: ' mm.$case.out) -ge 1
	"
done

test_expect_success 'the same with DDP_CHECK=1: every rank names both calls' '
	DDP_CHECK=1 ddp_srun $SRUN "$PY" "$PROG" mismatch dtype >ck.out \
		2>ck.err || { cat ck.err; false; } &&
	checked ck 4 &&
	test $(grep -c ": named: 4 float32 and 4 int32$" ck.out) = 4
'

# The shape is not compared by default (same dtype and count: reduced
# element by element, as torch.distributed does); DDP_CHECK=1 compares it.
test_expect_success '(2, 3) against (6,): reduced; with DDP_CHECK=1 ddp.Error on every rank' '
	ddp_srun $SRUN "$PY" "$PROG" mismatch shape >sh.out 2>sh.err ||
		{ cat sh.err; false; } &&
	checked sh 4 &&
	DDP_CHECK=1 ddp_srun $SRUN "$PY" "$PROG" mismatch shape >shck.out \
		2>shck.err || { cat shck.err; false; } &&
	checked shck 4 &&
	test $(grep -c ": named: " shck.out) = 4
'

test_done
