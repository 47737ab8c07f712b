#!/bin/sh
test_description='DDP_CHECK=1: calls whose arguments differ between ranks fail on every rank, each rank'\''s call named'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

MM=$DDP_PROGS/ddp_mismatch

# mm NAME CASE COUNT SRUN-ARGS...: progs/ddp_mismatch CASE COUNT under
# DDP_CHECK=1 (its case's call is every rank's collective #3: ddp_init's
# barrier is #1, an all-reduce #2).
mm () {
	local name=$1 c=$2 n=$3
	shift 3
	DDP_CHECK=1 DDP_TIMEOUT=20 ddp_srun --ddp=host "$@" "$MM" "$c" "$n" \
		>"$name.out" 2>"$name.err"
	cat "$name.out" "$name.err"
}

# failed NAME NTASKS: every rank's call of the case returned DDP_EMISMATCH
# (-14), and so did the barrier after it (the fault is sticky); every
# rank logged the same error (after the name of its own call), once.
failed () {
	test "$(grep -c ": case .*: -14 (ranks disagree)$" "$1.out")" = "$2" &&
	test "$(grep -c ": barrier: -14$" "$1.out")" = "$2" &&
	grep "error: " "$1.err" |
		sed "s/^\[ddp rank [0-9]*\/[0-9]*\] error: ddp_[a-z]*: /error: /" |
		sort | uniq -c >"$1.errs" &&
	cat "$1.errs" &&
	test "$(wc -l <"$1.errs")" = 1 &&
	grep -q "^ *$2 error: " "$1.errs"
}

# The cases the backends cannot see without DDP_CHECK: each rank its own
# bcast root (each kept its own data, or waited DDP_TIMEOUT for the
# others), on each one-node path: the ring, the banks, single copy.
for n in 2 1000 100000; do
	test_expect_success "every rank its own bcast root, $n floats on one node: named" "
		mm self.$n self $n -N1 -n2 &&
		failed self.$n 2 &&
		grep -q 'error: ddp_bcast: the ranks. calls differ (DDP_CHECK): rank 0: ddp_bcast of $n float32 from root 0 (its collective #3); rank 1: ddp_bcast of $n float32 from root 1 (its collective #3); every rank must make the same calls' self.$n.err
	"
done
test_expect_success 'every rank its own bcast root across nodes' '
	mm self.x self 2 -N2 -n4 &&
	failed self.x 4 &&
	grep -q "rank 0: ddp_bcast of 2 float32 from root 0 (its collective #3); rank 1: .* from root 1 .*; rank 2: .* from root 2 .*; rank 3: .* from root 3 (its collective #3)" self.x.err
'
test_expect_success 'a gather whose ranks name different roots' '
	mm swap swap 8 -N2 -n3 &&
	failed swap 3 &&
	grep -q "rank 0: ddp_gather of 8 float32 to root 1 .*; rank 1: ddp_gather of 8 float32 to root 2 .*; rank 2: ddp_gather of 8 float32 to root 0" swap.err
'
test_expect_success 'an all-reduce with MAX on one rank, SUM on the others' '
	mm op op 16 -N2 -n4 &&
	failed op 4 &&
	grep -q "ranks 0,2-3: ddp_allreduce of 16 float32 with SUM (their collective #3); rank 1: ddp_allreduce of 16 float32 with MAX (its collective #3)" op.err
'
test_expect_success 'an all-reduce on one rank where the others bcast' '
	mm kind kind 4 -N1 -n3 &&
	failed kind 3 &&
	grep -q "ranks 0,2: ddp_bcast of 4 float32 from root 0 (their collective #3); rank 1: ddp_allreduce of 4 float32 with SUM (its collective #3)" kind.err
'
test_expect_success 'a rank that left out a barrier: named with the call it is in' '
	mm skip skip 4 -N2 -n2 &&
	test "$(grep -c ": case skip: -14 " skip.out)" = 2 &&
	grep -q "rank 0: ddp_barrier (its collective #3); rank 1: ddp_bcast of 4 float32 from root 0 (its collective #3)" skip.err
'
test_expect_success 'ranks that make the same calls pass, and every collective of ddp_check too (count 0 included)' '
	mm same same 3 -N2 -n3 &&
	test "$(grep -c ": case same: 0 (success)$" same.out)" = 3 &&
	test "$(grep -c ": barrier: 0$" same.out)" = 3 &&
	! grep "error: " same.err &&
	DDP_CHECK=1 ddp_check_run check 3 -q --ddp=host -N2 -n3
'
test_expect_success 'DDP_CHECK=1 on one rank only: ddp_init fails on every rank, naming it' '
	cat >one-check.sh <<-\EOS &&
	#!/bin/sh
	test "$SLURM_PROCID" = 1 && export DDP_CHECK=1
	exec "$@"
	EOS
	chmod +x one-check.sh &&
	ddp_srun --ddp=host -N1 -n3 ./one-check.sh "$MM" same 2 \
		>one.out 2>one.err;
	cat one.out one.err &&
	test "$(grep -c "init: ranks disagree" one.err)" = 3 &&
	test "$(grep -c "DDP_CHECK differs between ranks: 1 on rank 1 of 3, 0 or unset on the others" one.err)" = 3
'
test_expect_success 'DDP_CHECK=yes is refused, saying what is allowed' '
	test_must_fail env DDP_CHECK=yes "$MM" same 2>bad.err &&
	cat bad.err &&
	grep -q "DDP_CHECK=.yes. is not 0 or 1: set 1 to compare every collective" bad.err
'
test_done
