#!/bin/sh
test_description='libddp host backend: messages and bytes of every algorithm
against its formula at 2, 4, 8 and 16 nodes (DDP_STATS counters)'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require 16

# Each node's lanes count what they send to and receive from other nodes
# (payload bytes, DATA messages), per collective kind, and DDP_STATS=FILE
# appends one line per rank at ddp_finalize.  progs/ddp_traffic runs each
# collective asked for once (its results checked), so the counters hold
# exactly that call, and the barriers of ddp_init and ddp_finalize.  The algorithms with
# the default thresholds (host.h): B >= 4 MiB: ring allreduce, ring
# reduce-scatter + binomial gather for reduce; 32 KiB <= B < 4 MiB:
# recursive halving + doubling allreduce; smaller: recursive doubling,
# binomial trees, Bruck; bcast: one message on 2 nodes, else from 64 KiB
# a scatter + ring allgather.  The thresholds that
# select a ring grow with N - 1 - ceil(log2 N) from 8 nodes up (the
# allreduce's with an eighth of it, from 32 nodes), so the
# large runs set DDP_RING_MIN=0 to have the ring allreduce at every node
# count (TRAFFIC_ENV); the last test checks the default's choice.  With B = 4 MiB of
# float32 (1048576 elements) and 256 KiB, every block is the same size at
# 2, 4, 8 and 16 nodes, so the formulas are exact.
TRAFFIC=$DDP_PROGS/ddp_traffic
DDP_SRUN_TIMEOUT=240
BIG=4194304
MID=262144
PART=262144
# A bcast of BIG from node 0, what each node n of N sends and receives.
BCAST_BIG="N == 2 ? (n ? mr == 1 && br == $BIG && ms == 0 :
		      ms == 1 && bs == $BIG && mr == 0) :
	n == 0 ? mr == 0 && br == 0 :
	br == subtree(n) * $BIG / N + (N - 1) * $BIG / N && mr == N &&
	(n < N - 1 || ms == 0)"

test_expect_success 'the cluster has 16 nodes' '
	test "$(sinfo -h -N -o %N | sort -u | wc -l)" -ge 16
'

# traffic NAME SRUN-ARGS... -- CALLS...: run ddp_traffic with DDP_STATS
# (one line per rank into NAME.stats); every rank must report ok.
traffic () {
	name=$1; shift
	args=
	while [ "$1" != -- ]; do args="$args $1"; shift; done
	shift
	rm -f "$PWD/$name.stats"
	# shellcheck disable=SC2086
	ddp_srun --mpi=pmix $args \
		--export=ALL,DDP_STATS="$PWD/$name.stats"${TRAFFIC_ENV:+,$TRAFFIC_ENV} \
		"$TRAFFIC" "$@" >"$name.out" 2>"$name.err"
	rc=$?
	cat "$name.out" "$name.err"
	n=$(echo "$args" | sed -n "s/.* -n\([0-9][0-9]*\).*/\1/p")
	test $rc = 0 &&
	test "$(grep -c "^ddp_traffic rank .*: ok" "$name.out")" = "$n" &&
	test "$(grep -c "^ddp-stats " "$name.stats")" = "$n"
}

# per_node STATS KIND: "node calls msgs_sent bytes_sent msgs_recv
# bytes_recv" summed over each node's ranks, nodes in order.
per_node () {
	awk -v kind="$2" '
	{
		for (i = 2; i <= NF; i++) {
			split ($i, kv, "=")
			if (kv[1] == "node") node = kv[2]
			if (kv[1] == "nnodes") nn = kv[2]
			if (kv[1] == kind) split (kv[2], v, ",")
		}
		if (v[1] > calls[node]) calls[node] = v[1]
		for (j = 2; j <= 5; j++) sum[node, j] += v[j]
	}
	END {
		for (n = 0; n < nn; n++)
			print n, calls[n], sum[n, 2], sum[n, 3], sum[n, 4], sum[n, 5]
	}' "$1"
}

# expect NAME KIND NODES AWK: every node's counters (awk variables n,
# calls, ms, bs, mr, br; N nodes, and subtree(n): the size of n's subtree in
# the binomial tree rooted at node 0) satisfy the awk condition; the rows
# are printed with the verdict.
expect () {
	cond=$(echo "$4" | tr "\n\t" "  ")
	per_node "$1.stats" "$2" | awk -v N="$3" '
	function lowbit (x,   b) { b = 1; while (x % (2 * b) == 0) b *= 2; return b }
	function subtree (x) { return x == 0 ? N : (lowbit(x) < N - x ? lowbit(x) : N - x) }
	function lg (x,   k) { k = 0; while (2 ^ k < x) k++; return k }
	{
		n = $1; calls = $2; ms = $3; bs = $4; mr = $5; br = $6
		good = ('"$cond"')
		printf "node %d: calls %d sent %d msgs %d B, received %d msgs %d B: %s\n",
		       n, calls, ms, bs, mr, br, good ? "as expected" : "NOT as expected"
		if (!good) bad++
		rows++
	}
	END { exit (bad > 0 || rows != N) }'
}

for N in 2 4 8 16; do
	test_expect_success "$N nodes: large collectives (4 MiB, 256 KiB a rank)" "
		TRAFFIC_ENV=DDP_RING_MIN=0 &&
		traffic big$N -N$N -n$N -- allreduce:$BIG reduce:$BIG:0 \
			bcast:$BIG:0 allgather:$PART gather:$PART:0
	"
	# Ring: 2 (N-1) messages each way, 2 (N-1)/N B bytes.  Within 1.1x of
	# that is the goal; the ring is exact.
	test_expect_success "$N nodes: ring allreduce sends and receives 2(N-1)/N B" "
		expect big$N allreduce $N '
			calls == 1 && ms == 2 * (N - 1) && mr == ms &&
			bs == 2 * (N - 1) * $BIG / N && br == bs &&
			bs <= 1.1 * 2 * (N - 1) / N * $BIG'
	"
	# A reduce costs a reduce: the ring reduce-scatter ((N-1)/N B), then
	# each node sends its subtree's reduced blocks to its parent: node 0
	# (the root) sends the reduce-scatter only and receives 2 (N-1)/N B.
	test_expect_success "$N nodes: reduce to node 0 is a reduce-scatter plus a gather" "
		expect big$N reduce $N '
			bs == (N - 1) * $BIG / N + (n ? subtree(n) * $BIG / N : 0) &&
			(n ? 1 : br == 2 * (N - 1) * $BIG / N) &&
			ms == (N - 1) + (n ? 1 : 0)'
	"
	# Bcast: on 2 nodes one message of B; else a binomial scatter (a node
	# receives its subtree's blocks once) then the ring allgather ((N-1)/N
	# B) that sends nothing into the root (node N-1 sends nothing at all).
	test_expect_success "$N nodes: bcast is one message, or a scatter plus a ring allgather" "
		expect big$N bcast $N \"$BCAST_BIG\"
	"
	# Allgather and gather of 256 KiB a rank: the ring passes each node's
	# part once around; the binomial gather sends each subtree up once.
	test_expect_success "$N nodes: ring allgather, binomial gather" "
		expect big$N allgather $N '
			ms == N - 1 && mr == N - 1 && bs == (N - 1) * $PART &&
			br == bs' &&
		expect big$N gather $N '
			bs == (n ? subtree(n) * $PART : 0) &&
			(n ? 1 : br == (N - 1) * $PART)'
	"
	test_expect_success "$N nodes: small collectives (8 bytes) and a mid-size allreduce" "
		TRAFFIC_ENV= &&
		traffic small$N -N$N -n$N -- allreduce:8 bcast:8:0 allgather:8 &&
		traffic mid$N -N$N -n$N -- allreduce:$MID
	"
	# Latency algorithms: log2 N messages.
	test_expect_success "$N nodes: recursive doubling, binomial bcast, Bruck, dissemination" "
		expect small$N allreduce $N '
			ms == lg(N) && mr == lg(N) && bs == 8 * lg(N) && br == bs' &&
		expect small$N bcast $N '
			mr == (n ? 1 : 0) && br == (n ? 8 : 0)' &&
		expect small$N allgather $N '
			ms == lg(N) && mr == lg(N) && br == 8 * (N - 1) && bs == br' &&
		expect small$N barrier $N '
			calls >= 1 && ms == calls * lg(N) && mr == ms && bs == 0'
	"
	test_expect_success "$N nodes: recursive halving allreduce sends 2(N-1)/N B" "
		expect mid$N allreduce $N '
			ms == 2 * lg(N) && mr == ms && bs == 2 * (N - 1) * $MID / N &&
			br == bs'
	"
done

# Lanes: two ranks a node share a large allreduce, each half the bytes.
test_expect_success '4 nodes, 2 ranks each: two lanes split the ring' '
	TRAFFIC_ENV=DDP_RING_MIN=0 &&
	traffic lanes -N4 -n8 --ntasks-per-node=2 -- allreduce:$BIG &&
	expect lanes allreduce 4 "
		ms == 2 * 2 * 3 && bs == 2 * 3 * $BIG / 4 && br == bs" &&
	test "$(grep -c " lane=1 .* allreduce=1,6,3145728,6,3145728 " lanes.stats)" = 4
'
# The default thresholds on 16 nodes: the ring allreduce starts at
# DDP_RING_MIN x max(1, (N - 1 - ceil(log2 N)) / 8) = 4 MiB there (the
# ring has 11 steps more than recursive halving, which moves the same
# bytes: host.h), so 4 MiB goes by the ring (2 (N - 1) messages) and 2
# MiB by recursive halving (2 log2 N), while a 4 MiB bcast (above 11 x 32
# KiB, against a tree) is a scatter and a ring allgather.
HALF=2097152
test_expect_success '16 nodes, default thresholds: halving below 4 MiB, the ring from 4 MiB' '
	TRAFFIC_ENV= &&
	traffic dflt16 -N16 -n16 -- allreduce:$BIG bcast:$BIG:0 &&
	expect dflt16 allreduce 16 "
		ms == 2 * (N - 1) && mr == ms && bs == 2 * (N - 1) * $BIG / N" &&
	expect dflt16 bcast 16 "$BCAST_BIG" &&
	traffic dflt16h -N16 -n16 -- allreduce:$HALF &&
	expect dflt16h allreduce 16 "
		ms == 2 * lg(N) && mr == ms && bs == 2 * (N - 1) * $HALF / N"
'
test_done
