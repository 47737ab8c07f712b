#!/bin/sh
test_description='a node link taken down during collectives (nodes on a network): for good, every rank fails within DDP_TIMEOUT + 1 s naming the link; for a quarter of DDP_TIMEOUT, nobody fails'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require_net 2
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# ddp_victim until (no victim rank: 9): one-float all-reduces in a loop on
# -N2 -n4, ranks 0 1 on n1 and 2 3 on n2.  The fault is not a process but
# n2's only link: `ip link set eth0 down` inside n2's network namespace
# (ddp-test-cluster exec), so every rank stays alive and in its call while
# nothing crosses between the nodes, in either lane.  Slurm's own traffic
# to n2 stops too: the link comes back once the ranks have recorded how
# their call ended, so that the step can end and report.
# DDP_T0807_TIMEOUT: another DDP_TIMEOUT, for measuring.
REL_TIMEOUT=${DDP_T0807_TIMEOUT:-4}
REL_NTASKS=4
export DDP_VICTIM_SECS=60
export DDP_INIT_TIMEOUT=60

# link NODE up|down: NODE's eth0.
link () {
	"$DDP_CLUSTER" exec "$DDP_CLUSTER_DIR" "$1" ip link set eth0 "$2"
}

# start_loop NAME: ddp_victim until on -N2 -n4 in run directory NAME; wait
# until every rank is in its loop.
start_loop () {
	rel_start "$1" until 9 -N2 -n4 --ntasks-per-node=2 &&
	for r in 0 1 2 3; do
		rel_wait_file "$REL_DIR/pid.$r" 60 || { say "rank $r never ready"; kill "$REL_PID"; return 1; }
	done &&
	sleep 0.5
}

test_expect_success 'the cluster is networked: n1 and n2 have their own addresses' '
	"$DDP_CLUSTER" exec "$DDP_CLUSTER_DIR" n1 ip -4 -o addr show dev eth0 >n1.addr &&
	"$DDP_CLUSTER" exec "$DDP_CLUSTER_DIR" n2 ip -4 -o addr show dev eth0 >n2.addr &&
	grep -q " 198\.18\.0\.1/" n1.addr &&
	grep -q " 198\.18\.0\.2/" n2.addr
'

test_expect_success 'n2 link down for good: every rank fails in time with a network error naming both nodes' '
	test_when_finished "link n2 up; true" &&
	start_loop down &&
	link n2 down &&
	for r in 0 1 2 3; do
		rel_wait_file "$REL_DIR/exit.$r" $((REL_TIMEOUT * 2 + 20)) || break
	done
	link n2 up
	rel_wait &&
	rel_show &&
	say "worst failed call: $(rel_worst_time) s (bound $((REL_TIMEOUT + 1)) s)" &&
	rel_check_call_time 0,1,2,3 0 $((REL_TIMEOUT + 1)) &&
	for r in 0 1 2 3; do
		line=$(grep -F "[ddp rank $r/4]" "$REL_DIR.err" | head -n 1) &&
		# A link between the two nodes, named from the side that noticed.
		echo "$line" | grep -Eq "no data from node [01] \\(ranks [0-3]-[0-3]\\) to node [01] .*the link between node [01] and node [01] is down \\(network\\?" || {
			say "rank $r: no network error naming a link between the nodes: $line"; return 1; }
	done &&
	! grep -q "did not arrive" "$REL_DIR.err" &&
	rel_check_clean
'

# The same silence from a node whose link works: both its ranks stopped
# (SIGSTOP).  Its kernel still takes connections, so the others name its
# ranks as stopped, not the link.
test_expect_success 'both ranks of n2 stopped: ranks 0-1 fail in time naming ranks 2-3 as stopped, not a link' '
	start_loop stopped &&
	p2=$(cut -d" " -f1 "$REL_DIR/pid.2") && p3=$(cut -d" " -f1 "$REL_DIR/pid.3") &&
	kill -STOP "$p2" "$p3" &&
	for r in 0 1; do
		rel_wait_file "$REL_DIR/exit.$r" $((REL_TIMEOUT * 2 + 20)) || break
	done
	kill -9 "$p2" "$p3"
	rel_wait &&
	rel_show &&
	rel_check_call_time 0,1 0 $((REL_TIMEOUT + 1)) &&
	for r in 0 1; do
		line=$(grep -F "[ddp rank $r/4]" "$REL_DIR.err" | head -n 1) &&
		echo "$line" | grep -q "ranks 2-3 did not arrive.*node 1 took a connection but did not answer.*stopped" || {
			say "rank $r: ranks 2-3 not named as stopped: $line"; return 1; }
		! echo "$line" | grep -q "link" || { say "rank $r blames a link: $line"; return 1; }
	done
'

test_expect_success 'n2 link down for a quarter of DDP_TIMEOUT, then up: nobody fails, nothing is lost' '
	test_when_finished "link n2 up; true" &&
	DDP_VICTIM_SECS=$((REL_TIMEOUT * 2)) &&
	start_loop blip &&
	DDP_VICTIM_SECS=60 &&
	link n2 down &&
	sleep $(echo "$REL_TIMEOUT" | awk "{ print \$1 / 4 }") &&
	link n2 up &&
	rel_wait &&
	rel_show &&
	test "$REL_RC" = 0 &&
	test "$(grep -c "ddp_victim: rank [0-3]: done" "$REL_DIR.out")" = 4 &&
	! grep -q "failed" "$REL_DIR.out" &&
	! grep -q "^\[ddp rank" "$REL_DIR.err" &&
	rel_check_clean
'
test_done
