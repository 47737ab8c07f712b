#!/bin/sh
test_description='a rank stopped (SIGSTOP) on a loaded machine: for good, the others fail within DDP_TIMEOUT + 1 s naming it alone; for less than DDP_TIMEOUT, nobody fails'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# ddp_victim until: one-float all-reduces in a loop (a rank is stopped
# wherever it is, mostly inside a call).  Two ranks a node: n1 holds 0 1,
# n2 holds 2 3; 0 and 2 are the leaders (lane 0, the links between nodes).
# Busy loops beside the job load the CPUs as a training node is loaded:
# the bound (ddp(3): DDP_TIMEOUT + 1 s from a call's start) must hold
# there, not only on an idle machine.
# DDP_T0806_TIMEOUT: another DDP_TIMEOUT, for measuring (e.g. 30, the
# default; SKIP_TESTS picks scenarios).
REL_TIMEOUT=${DDP_T0806_TIMEOUT:-4}
REL_BOUND=40
REL_NTASKS=4
BUSY=${DDP_TEST_BUSY:-3}
export DDP_VICTIM_SECS=60
# Set-up is not what is tested: under this load it may take longer.
export DDP_INIT_TIMEOUT=60

busy_start () {
	: >busy.pids &&
	for i in $(seq 1 "$BUSY"); do
		sh -c 'while :; do :; done' &
		echo $! >>busy.pids
	done
}

# Ends only the loops busy_start started, by their pids.
busy_stop () {
	[ -f busy.pids ] || return 0
	for p in $(cat busy.pids); do kill "$p" 2>/dev/null; done
	rm -f busy.pids
}

# names_only LINE RANK: LINE (a libddp error, "[ddp rank R/N] ...") names
# RANK and no other rank as at fault.  What is not a culprit is dropped
# first: who noticed, the call's number, durations, nodes.
names_only () {
	local msg
	msg=$(echo "${1#*] }" | sed -e 's/noticed by rank [0-9]*//g' \
		-e 's/#[0-9]*//g' -e 's/([0-9.]* s)//g' -e 's/(node [0-9]*)//g' \
		-e 's/node [0-9]*//g' -e 's/([^)]*DDP_CHECK[^)]*)//g')
	echo "$msg" | grep -Eq "(^|[^0-9])$2([^0-9]|\$)" &&
	! echo "$msg" | tr -c '0-9\n' ' ' | tr ' ' '\n' | grep -v -x -e '' -e "$2" | grep -q .
}

# check_only VICTIM: every survivor's first libddp error names VICTIM alone.
check_only () {
	local r line
	for r in $(seq 0 $((REL_NTASKS - 1))); do
		[ "$r" = "$1" ] && continue
		line=$(grep -F "[ddp rank $r/$REL_NTASKS]" "$REL_DIR.err" | head -n 1)
		names_only "$line" "$1" || {
			say "rank $r: not (only) rank $1 named: $line"; return 1; }
	done
}

# survivors VICTIM: the other ranks, comma-separated.
survivors () {
	seq 0 $((REL_NTASKS - 1)) | grep -vx "$1" | paste -sd, -
}

# stop_run NAME VICTIM [SRUN ARGS]: ddp_victim until; once every rank is
# in its loop, stop VICTIM for good; when the others have ended (or 30 s
# passed), kill it.
stop_run () {
	local name=$1 v=$2 pid r
	shift 2
	[ $# -gt 0 ] || set -- -N2 -n4 --ntasks-per-node=2
	rel_start "$name" until "$v" "$@" &&
	for r in $(seq 0 $((REL_NTASKS - 1))); do
		rel_wait_file "$REL_DIR/pid.$r" 60 || { say "rank $r never ready"; kill "$REL_PID"; return 1; }
	done &&
	sleep 0.5 &&
	pid=$(cut -d" " -f1 "$REL_DIR/pid.$v") &&
	kill -STOP "$pid" &&
	for r in $(survivors "$v" | tr , " "); do
		rel_wait_file "$REL_DIR/exit.$r" $((REL_TIMEOUT * 2 + 20)) || break
	done
	kill -9 "$pid"
	rel_wait &&
	rel_show &&
	say "worst failed call: $(rel_worst_time) s (bound $((REL_TIMEOUT + 1)) s)" &&
	echo "$(rel_worst_time)" >>"worst.$name" &&
	rel_check_survivors "$v" ddp_allreduce &&
	rel_check_call_time "$(survivors "$v")" 0 $((REL_TIMEOUT + 1)) &&
	check_only "$v" &&
	rel_check_clean
}

test_expect_success 'busy loops beside the job' '
	busy_start
'
test_expect_success 'n2 non-leader 3 stopped for good: the others fail within DDP_TIMEOUT + 1 s naming only 3' '
	stop_run stop.3 3
'
test_expect_success 'n2 leader 2 stopped for good: the others fail within DDP_TIMEOUT + 1 s naming only 2' '
	stop_run stop.2 2
'
test_expect_success 'n1 non-leader 1 stopped for good: the others fail in time naming only 1' '
	stop_run stop.1 1
'
test_expect_success 'n1 leader 0 stopped for good: the others fail in time naming only 0' '
	stop_run stop.0 0
'
test_expect_success 'one rank a node, rank 1 stopped for good: rank 0 fails in time naming only 1' '
	REL_NTASKS=2 &&
	stop_run stop.n2 1 -N2 -n2 &&
	REL_NTASKS=4
'
test_expect_success 'leader 2 stopped for half of DDP_TIMEOUT, then resumed: nobody fails' '
	DDP_VICTIM_SECS=12 &&
	rel_start cont.2 until 2 -N2 -n4 --ntasks-per-node=2 &&
	DDP_VICTIM_SECS=60 &&
	rel_wait_file "$REL_DIR/pid.2" 60 &&
	sleep 1 &&
	pid=$(cut -d" " -f1 "$REL_DIR/pid.2") &&
	kill -STOP "$pid" &&
	sleep $((REL_TIMEOUT / 2)) &&
	kill -CONT "$pid" &&
	rel_wait &&
	rel_show &&
	test "$REL_RC" = 0 &&
	test "$(grep -c "ddp_victim: rank [0-3]: done" "$REL_DIR.out")" = 4 &&
	! grep -q "failed" "$REL_DIR.out" &&
	! grep -q "^\[ddp rank" "$REL_DIR.err" &&
	rel_check_clean
'
# Dropped traffic: every packet to n2's leader's listening ports is
# dropped (nftables, output hook: on n1 when the nodes have their own
# network namespaces, else in the loopback all nodes share), so the link
# from rank 0 to rank 2 carries nothing while both are alive and in the
# call, and the lane 1 link (1 - 3) still flows.  Every rank must fail
# within the bound with a network error naming both nodes, not a late rank.
if [ -f "$DDP_CLUSTER_DIR/net.conf" ]; then
	on_n1 () { ddp_node_exec n1 "$@"; }
	on_n2 () { ddp_node_exec n2 "$@"; }
else
	on_n1 () { "$@"; }
	on_n2 () { "$@"; }
fi
if command -v nft >/dev/null 2>&1 && on_n1 nft list tables >/dev/null 2>&1; then
	test_set_prereq NFT
fi
NFT_TABLE=ddp_t0806_$$

drop_ports () {
	on_n1 nft add table inet "$NFT_TABLE" &&
	on_n1 nft add chain inet "$NFT_TABLE" out "{ type filter hook output priority 0; }" &&
	for port in "$@"; do
		on_n1 nft add rule inet "$NFT_TABLE" out tcp dport "$port" drop || return 1
	done
}

# listen_ports PID: the TCP ports process PID (on n2) listens on.
listen_ports () {
	on_n2 ss -ltnpH | grep "pid=$1," | grep -v slurmstepd | awk '{ n = split($4, a, ":"); print a[n] }' | sort -u
}

test_expect_success NFT 'traffic to n2 leader 2 dropped: every rank fails in time with a network error naming both nodes' '
	test_when_finished "on_n1 nft delete table inet $NFT_TABLE 2>/dev/null; true" &&
	rel_start drop.2 until 9 -N2 -n4 --ntasks-per-node=2 -w "n[1-2]" &&
	for r in 0 1 2 3; do
		rel_wait_file "$REL_DIR/pid.$r" 60 || { kill "$REL_PID"; return 1; }
	done &&
	sleep 0.5 &&
	pid=$(cut -d" " -f1 "$REL_DIR/pid.2") &&
	ports=$(listen_ports "$pid") &&
	say "rank 2 (pid $pid) listens on: $ports" &&
	test -n "$ports" &&
	drop_ports $ports &&
	for r in 0 1 2 3; do
		rel_wait_file "$REL_DIR/exit.$r" $((REL_TIMEOUT * 2 + 20)) || break
	done
	on_n1 nft delete table inet "$NFT_TABLE"
	rel_wait &&
	rel_show &&
	say "worst failed call: $(rel_worst_time) s (bound $((REL_TIMEOUT + 1)) s)" &&
	echo "$(rel_worst_time)" >>"worst.drop.2" &&
	rel_check_call_time 0,1,2,3 0 $((REL_TIMEOUT + 1)) &&
	for r in 0 1 2 3; do
		line=$(grep -F "[ddp rank $r/4]" "$REL_DIR.err" | head -n 1) &&
		# The link, named from the side that noticed: either way round.
		echo "$line" | grep -Eq "no data from (node 0 \\(rank 0\\) to node 1 \\(rank 2\\)|node 1 \\(rank 2\\) to node 0 \\(rank 0\\)) .*network\\?" || {
			say "rank $r: no network error naming both nodes: $line"; return 1; }
	done &&
	! grep -q "did not arrive" "$REL_DIR.err" &&
	rel_check_clean
'
test_expect_success 'busy loops ended' '
	busy_stop
'
test_done
