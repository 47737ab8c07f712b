#!/bin/sh
test_description='without DDP_CHECK: ranks that make different calls of the same bytes fail that call on every rank, the error naming both calls'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

MM=$DDP_PROGS/ddp_mismatch

# mm NAME CASE COUNT SRUN-ARGS...: progs/ddp_mismatch CASE COUNT, DDP_CHECK
# unset (its case's call is every rank's collective #3: ddp_init's
# barrier is #1, an all-reduce #2).
mm () {
	local name=$1 c=$2 n=$3
	shift 3
	(unset DDP_CHECK; DDP_TIMEOUT=20 ddp_srun --ddp=host "$@" "$MM" "$c" \
		"$n" >"$name.out" 2>"$name.err")
	cat "$name.out" "$name.err"
}

# failed NAME NTASKS: every rank's call of the case returned DDP_EMISMATCH
# (-14) in that call, and so did the barrier after it (the fault is
# sticky).
failed () {
	test "$(grep -c ": case .*: -14 (ranks disagree)$" "$1.out")" = "$2" &&
	test "$(grep -c ": barrier: -14$" "$1.out")" = "$2"
}

# names NAME A B: an error line names both calls, A and B.
names () {
	grep "error: " "$1.err" | grep -F "$2" | grep -qF "$3"
}

F4='ddp_allreduce of 4 float32 with SUM (its collective #3)'
I4='ddp_allreduce of 4 int32 with SUM (its collective #3)'
for l in "1 2" "1 3" "2 2" "2 4"; do
	set -- $l
	test_expect_success "an all-reduce of 4 float32 on rank 1, 4 int32 on the others: fails on every rank ($1 node(s), $2 ranks)" "
		mm dtype.$1.$2 dtype 4 -N$1 -n$2 &&
		failed dtype.$1.$2 $2 &&
		names dtype.$1.$2 'rank 1: $F4' '$I4'
	"
	test_expect_success "an all-reduce on rank 1 where the others call a barrier: fails on every rank ($1 node(s), $2 ranks)" "
		mm barrier.$1.$2 barrier 1 -N$1 -n$2 &&
		failed barrier.$1.$2 $2 &&
		names barrier.$1.$2 'ddp_barrier (its collective #3)' 'rank 1: ddp_allreduce of 1 int32 with SUM (its collective #3)'
	"
done
for l in "1 2" "2 4"; do
	set -- $l
	test_expect_success "an all-reduce with MAX on rank 1, SUM on the others: fails on every rank ($1 node(s), $2 ranks)" "
		mm op.$1.$2 op 16 -N$1 -n$2 &&
		failed op.$1.$2 $2 &&
		names op.$1.$2 'rank 1: ddp_allreduce of 16 float32 with MAX (its collective #3)' 'ddp_allreduce of 16 float32 with SUM (its collective #3)'
	"
done
test_done
