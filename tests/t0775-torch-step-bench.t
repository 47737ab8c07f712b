#!/bin/sh
test_description='contrib/bench/torch-step.py (a DDP training step on
backend "ddp" against gloo, issue 50'"'"'s benchmark) is well formed: with
a tiny model, 1 step and 1 round, its TSV has a ddp and a gloo row whose
parameter check passed, and with -X (the ddp copy reduces nothing) the
check fails.  Under ddp-local-run, then srun --ddp=host -N2 -n2.  No
timing is checked: doc/benchmarks.md has the numbers'
. "$(dirname "$0")/test-lib.sh"

# The module, torch, a clean environment, ./python as PY.
ddp_torch_setup
BENCH=$DDP_SRC_DIR/contrib/bench/torch-step.py
TINY="-m 64x2,32x1 -n 1 -r 1 -w 1"

# well_formed TSV: a header and, for each model of TINY, a ddp and a gloo
# row, 19 columns each, check "ok".
well_formed () {
	cat "$1" &&
	test "$(head -n 1 "$1" | cut -f 10,19)" = "$(printf 'impl\tcheck')" &&
	awk -F '\t' 'NR > 1 {
		if (NF != 19) { print "row " NR ": " NF " columns"; bad = 1 }
		if ($19 != "ok") { print "row " NR ": check " $19; bad = 1 }
		seen[$1 " " $10] = 1 }
	    END {
		split("64x2 ddp,64x2 gloo,32x1 ddp,32x1 gloo", want, ",")
		for (i in want) if (!(want[i] in seen)) { print "no row " want[i]; bad = 1 }
		exit bad }' "$1"
}

# failed TSV: every row's check is FAIL.
failed () {
	cat "$1" &&
	test $(awk -F '\t' 'NR > 1 && $19 != "FAIL"' "$1" | wc -l) = 0 &&
	test $(awk 'NR > 1' "$1" | wc -l) = 4
}

LOCAL=$DDP_PROGS/ddp-local-run
test_expect_success 'ddp-local-run -n 2 -N 2: both backends'"'"' rows, check ok' '
	timeout 150 "$LOCAL" -n 2 -N 2 -b host -t 120 -- "$PY" -W ignore "$BENCH" \
		$TINY --tsv "$PWD/local.tsv" >local.out 2>local.err ||
		{ cat local.out local.err; false; } &&
	cat local.out &&
	grep "64x2.* ddp .* ok (max" local.out &&
	well_formed local.tsv
'

test_expect_success 'ddp-local-run -n 2 -N 2 -X: the check fails' '
	test_expect_code 1 timeout 150 "$LOCAL" -n 2 -N 2 -b host -t 120 -- \
		"$PY" -W ignore "$BENCH" $TINY -X --tsv "$PWD/local-x.tsv" \
		>local-x.out 2>local-x.err &&
	failed local-x.tsv
'

ddp_cluster_require
# Two models, each built three times, 3 steps and 3 communications of
# each: about 10 s on the 2-CPU test cluster; room for a loaded machine.
DDP_SRUN_TIMEOUT=120

test_expect_success 'srun --ddp=host -N2 -n2: both backends'"'"' rows, check ok' '
	ddp_srun --ddp=host -N2 -n2 "$PY" -W ignore "$BENCH" \
		$TINY --tsv "$PWD/srun.tsv" >srun.out 2>srun.err ||
		{ cat srun.out srun.err; false; } &&
	cat srun.out &&
	well_formed srun.tsv &&
	awk -F "\t" "NR > 1 && (\$5 != 2 || \$6 != 2) { bad = 1 } END { exit bad }" srun.tsv
'

# srun's status is the ranks' 1, or what the plugin made of the step
# ended by a failed rank: any failure but timeout's 124.
test_expect_success 'srun --ddp=host -N2 -n2 -X: the check fails' '
	{ ddp_srun --ddp=host -N2 -n2 "$PY" -W ignore "$BENCH" $TINY -X \
		--tsv "$PWD/srun-x.tsv" >srun-x.out 2>srun-x.err; rc=$?; } &&
	echo "srun: $rc" &&
	test $rc -ne 0 && test $rc -ne 124 &&
	failed srun-x.tsv
'

test_done
