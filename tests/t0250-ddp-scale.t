#!/bin/sh
test_description='libddp host collectives at 2, 4, 8 and 16 nodes: one rank,
several and uneven ranks per node, and a killed rank at 8 and 16 nodes'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require 16
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# Real users run on 8 to 1,000 nodes; t0210 checks the collectives on one
# and two.  Here the same checker (every collective, dtype and op against a
# reference, and bitwise identity across ranks) runs under the plugin on up
# to 16 nodes.  -q and -l keep it short on two cores: the quick size list,
# and a large count only where it says so.
DDP_SRUN_TIMEOUT=180

# scale_layout LAYOUT: one count a line, run lengths expanded ("6 1x3" is
# 6, 1, 1, 1).
scale_layout () {
	echo "$1" | tr " " "\n" |
	awk -F x 'NF == 2 { for (i = 0; i < $2; i++) print $1; next } { print }'
}

# scale_check NAME LAYOUT CHECK-ARGS [SRUN-ARGS...]: ddp_check (CHECK-ARGS)
# under srun --ddp=host on as many nodes as LAYOUT has counts and as many
# tasks as they add up to.  LAYOUT is the ranks on each node in node order
# ("6 1x7": six on the first, one on each of the seven others).  Every task
# reports 0 failures, and every node ran the ranks LAYOUT gives it.  The
# layout is Slurm's only on an idle cluster (the last step's CPUs given
# back): once -N16 -n37 got 15 ranks on n1, 8 on n2.
scale_check () {
	name=$1 args=$3
	ddp_wait_idle 30 &&
	scale_layout "$2" | awk '{ print NR - 1, $1, $1 }' >"$name.layout" &&
	nodes=$(wc -l <"$name.layout") &&
	n=$(awk '{ s += $2 } END { print s }' "$name.layout") &&
	shift 3 &&
	ddp_check_run "$name" "$n" "$args" --ddp=host -N"$nodes" -n"$n" "$@" &&
	sed -n "s|.* local [0-9]*/\([0-9]*\) node \([0-9]*\)/$nodes .*|\2 \1|p" "$name.out" |
		sort -n | uniq -c | awk '{ print $2, $3, $1 }' >"$name.got" &&
	test_cmp "$name.layout" "$name.got"
}

test_expect_success '-N2 -n2: one rank per node' '
	scale_check n2 "1x2" "-q -l 0"
'
test_expect_success '-N4 -n12: three ranks on every node' '
	scale_check n4x3 "3x4" "-q -l 0" --ntasks-per-node=3
'
test_expect_success '-N8 -n13: uneven (block: 6 ranks on the first node, 1 on each other)' '
	scale_check n8x13 "6 1x7" "-q -l 0"
'
test_expect_success '-N16 -n16: one rank per node, a large count chunked through the segment' '
	scale_check n16 "1x16" "-q -l 50000"
'
test_expect_success '-N16 -n32: two ranks on every node' '
	scale_check n16x2 "2x16" "-q -l 0" --ntasks-per-node=2
'
test_expect_success '-N16 -n21: uneven (block: 6 ranks on the first node, 1 on each other)' '
	scale_check n16x21 "6 1x15" "-q -l 0"
'
# Ranks dealt to the nodes in turn: a node's ranks, its lanes and rank 0's
# blob are not where a block layout puts them (the sparse set-up reads
# them through the launcher's layout).
test_expect_success '-N4 -n8 -m cyclic: ranks alternate nodes (0 and 4 on the first)' '
	scale_check n4cyc "2x4" "-q -l 0" -m cyclic --ntasks-per-node=2 &&
	grep "^ddp_check rank 4/8 local 1/2 node 0/4 " n4cyc.out
'
# Nodes of different sizes: each node cuts a large collective into steps
# of its own slot (min(1 MiB, 8 MiB / ranks on the node)), and only the
# cross-node phase, run once on whole buffers, has to agree between nodes
# (it once failed here: "node 0 sent step 603 (524288 bytes), expected
# step 603 (560008 bytes)").  -N16 -n37 puts 16 ranks on n1 (512 KiB
# slots), 7 on n2 and one on each other node (1 MiB).
test_expect_success '-N16 -n37: uneven (block: 16, 7, then 1 rank per node)' '
	scale_check n16x37 "16 7 1x14" "-q -l 0" --export=ALL,DDP_DEBUG=1
'
# The host set-up is sparse (libjob/host/host.c): a rank reads its node's
# P - 1 blobs, rank 0's and its L lanes' partners' (at most 3 ceil(log2 N)
# + 3 nodes), never all W ranks' (here every rank reads fewer than 37).
test_expect_success '-N16 -n37: each rank read only its node, rank 0 and its partners at set-up' '
	grep "host: set-up read" n16x37.err >n16x37.gets &&
	test $(wc -l <n16x37.gets) = 37 &&
	sed "s/.*read \([0-9]*\) blobs.* local size \([0-9]*\), lanes \([0-9]*\), nodes 16, ranks 37$/\1 \2 \3/" \
		n16x37.gets | awk "
		NF != 3 { bad++; next }
		{ max = (\$2 - 1) + 1 + \$3 * (3 * 4 + 3)
		  if (\$1 < \$2 - 1 || \$1 > max || \$1 >= 37) bad++ }
		END { exit bad > 0 }"
'

# A killed rank (kill -9 in a barrier loop, as t0800) at 8 and 16 nodes:
# every survivor names it, the step ends within REL_BOUND, nothing is left
# on any node.
test_expect_success 'the leftover check sees what a step leaves in the last node /tmp' '
	rel_snapshot_sees n16
'
test_expect_success '-N8 -n16: kill -9 of rank 11 (not its node leader), the survivors name it' '
	REL_NTASKS=16 &&
	rel_kill_run kill8 barrier 11 0.3 ddp_barrier -N8 -n16 --ntasks-per-node=2
'
test_expect_success '-N16 -n16: kill -9 of rank 13 (all of its node), the survivors name it' '
	REL_NTASKS=16 &&
	rel_kill_run kill16 barrier 13 0.3 ddp_barrier -N16 -n16
'
test_done
