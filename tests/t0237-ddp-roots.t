#!/bin/sh
test_description='without DDP_CHECK: ranks that name different roots (of a bcast, gather, reduce) never all return 0: the call fails where a rank reads anything in it, else the next call, else ddp_finalize'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

RT=$DDP_PROGS/ddp_roots

# rt NAME NODES PER-NODE KIND CASE BYTES NEXT: progs/ddp_roots on NODES x
# PER-NODE ranks (block layout), DDP_CHECK unset; one step (the fault is
# sticky: a case ends its job).
rt () {
	local name=$1 nn=$2 pn=$3
	shift 3
	(unset DDP_CHECK; DDP_TIMEOUT=10 ddp_srun --ddp=host -N$nn \
		--ntasks-per-node=$pn "$RT" "$@" >"$name.out" 2>"$name.err")
	cat "$name.out" "$name.err"
}

# never_silent NAME NTASKS: every rank printed its three codes, and every
# rank got an error in the call, the next one or ddp_finalize: DDP_EMISMATCH
# (-14), or where ranks that each took themselves for the root waited for
# each other (nothing was sent: two roots of a gather or reduce across
# nodes) DDP_ETIMEDOUT (-7) or, the link carrying nothing while both are
# alive, DDP_ETRANSPORT (-6); not every rank returned 0 from both the call
# and the next one.
never_silent () {
	test "$(grep -c ": finalize: " "$1.out")" = "$2" &&
	for r in $(seq 0 $(($2 - 1))); do
		grep "^rank $r: \(call\|next\|finalize\): -\(14\|7\|6\)$" \
			"$1.out" ||
		{ echo "rank $r returned 0 throughout"; return 1; }
	done &&
	test "$(grep -c "^rank [0-9]*: \(call\|next\): 0$" "$1.out")" -lt \
		$(($2 * 2)) &&
	grep -q "error: .* \(disagree\|DDP_TIMEOUT\|root\)" "$1.err"
}

# all_ok NAME NTASKS: nothing differed, nothing failed.
all_ok () {
	test "$(grep -c "^rank [0-9]*: \(call\|next\|finalize\): 0$" \
		"$1.out")" = $(($2 * 3))
}

# The case's call is every rank's collective #3; the next one #4.
NEXTS="barrier allreduce finalize bcast0"
i=0
for l in "1 2" "2 2" "2 1" "3 2"; do
	set -- $l
	nt=$(($1 * $2))
	for c in self one local0; do
		for b in 8 4096 1048576; do
			i=$((i + 1))
			x=$(echo $NEXTS | cut -d" " -f$((i % 4 + 1)))
			name=bcast.$c.$b.$1x$2
			if test $c = local0 && test $1 = 1; then
				test_expect_success "$1 x $2: bcast of $b bytes, every rank its node's local rank 0 (all agree), then $x: all succeed" "
					rt $name $1 $2 bcast $c $b $x &&
					all_ok $name $nt
				"
				continue
			fi
			test_expect_success "$1 x $2: bcast of $b bytes, roots: $c, then $x: never silent" "
				rt $name $1 $2 bcast $c $b $x &&
				never_silent $name $nt
			"
		done
	done
	test_expect_success "$1 x $2: gather of 8 bytes, rank 1 names root 1 (the others 0), then barrier: never silent" "
		rt gather.one.$1x$2 $1 $2 gather one 8 barrier &&
		never_silent gather.one.$1x$2 $nt
	"
	test_expect_success "$1 x $2: reduce of 4 KiB, every rank its own root, then finalize: never silent" "
		rt reduce.self.$1x$2 $1 $2 reduce self 4096 finalize &&
		never_silent reduce.self.$1x$2 $nt
	"
done

# A bcast's root facing all-reduces (the writer returns first): the
# readers fail the call, the root the barrier after it, never later.
MM=$DDP_PROGS/ddp_mismatch
for l in "1 2" "2 2"; do
	set -- $l
	test_expect_success "$1 x $2: rank 0 the root of a bcast, rank 1 in an all-reduce: each fails the call or the next one" "
		(unset DDP_CHECK; DDP_TIMEOUT=10 ddp_srun --ddp=host -N$1 \
			--ntasks-per-node=$2 \"\$MM\" kind 2 >kind.$1x$2.out \
			2>kind.$1x$2.err) &&
		cat kind.$1x$2.out kind.$1x$2.err &&
		for r in \$(seq 0 $(($1 * $2 - 1))); do
			grep \"^rank \$r: \\(case kind\\|barrier\\): -14\" \
				kind.$1x$2.out || return 1
		done
	"
done

test_expect_success '1 x 2: the error names both ranks'"'"' bcast (its collective #3)' '
	grep "error: " bcast.self.8.1x2.err |
		grep "rank 0: ddp_bcast of 2 float32 from root 0 (its collective #3)" |
		grep -q "rank 1: ddp_bcast of 2 float32 from root 1 (its collective #3)"
'
test_expect_success 'nothing differs: every call succeeds, every rank holds rank 0'"'"'s data' '
	rt same 2 2 bcast same 8 barrier &&
	all_ok same 4 &&
	test "$(grep -c ": data: 1$" same.out)" = 4
'
test_done
