#!/bin/sh
test_description='the bootstrap on srun'"'"'s PMIx: the layout, the all-to-all
exchange and the sparse round (node-local blobs, one global blob per node,
each rank reading only those) give every rank the right blobs, at several
sizes; checks only (the timings boot_check prints are for measurements)'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

BOOT=$DDP_PROGS/boot_check
test -x "$BOOT" || {
	skip_all="tests/progs/boot_check not built"
	test_done
}
DDP_SRUN_TIMEOUT=120

# rounds NAME RANKS NODES SRUN-ARGS...: boot_check (2 rounds of each kind)
# on RANKS ranks over NODES nodes: every rank says 0 failed, once, with the
# method pmix and the right world; its sparse round read its node's blobs
# and one per node, no more.
rounds () {
	name=$1 n=$2 nodes=$3; shift 3
	ddp_srun "$@" -N"$nodes" -n"$n" "$BOOT" 2 >"$name.out" 2>"$name.err"
	rc=$?
	cat "$name.out" "$name.err"
	test $rc = 0 &&
	test $(grep -c " 0 failed$" "$name.out") = $n &&
	for r in $(seq 0 $((n - 1))); do
		test $(grep -c "^boot_check rank $r/$n node [0-9]*/$nodes pmix: " \
			"$name.out") = 1 || return 1
	done &&
	awk -v nodes="$nodes" '
		{ split($5, d, "/"); cnt[d[1]]++ }
		/sparse/ { match($0, /for [0-9]+ blobs\) [0-9]+ failed$/);
			split(substr($0, RSTART, RLENGTH), w, " ");
			reads[$3] = w[2]; node[$3] = d[1] }
		END { for (r in reads)
			if (reads[r] != cnt[node[r]] + nodes) {
				print "rank " r " read " reads[r] " blobs"; exit 1 } }
	' "$name.out"
}

test_expect_success 'one rank: the rounds are its own' '
	rounds one 1 1 --mpi=pmix
'
test_expect_success '-N1 -n4: one node, every blob local' '
	rounds n4 4 1 --mpi=pmix
'
test_expect_success '-N2 -n3: uneven nodes' '
	rounds uneven 3 2 --mpi=pmix &&
	grep -q "^boot_check rank 2/3 node 1/2 " uneven.out
'
test_expect_success '-N2 -n2: one rank a node' '
	rounds n2 2 2 --mpi=pmix &&
	grep -q "^boot_check rank 1/2 node 1/2 " n2.out
'
test_expect_success '-N2 -n8: four ranks a node' '
	rounds n8 8 2 --mpi=pmix
'
test_expect_success '-N2 -n16 with the PMIx server of srun --ddp=host' '
	rounds ddp16 16 2 --ddp=host
'
test_done
