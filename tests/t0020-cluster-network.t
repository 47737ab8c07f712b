#!/bin/sh
test_description='the test cluster'"'"'s network: nodes with their own addresses on a switch, multi-homed as sites have them, shaped links, nothing in the machine'"'"'s own network, nothing left after stop'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require_net 3 --data-net --docker --dead-if

# addr NODE IFACE: the IPv4 address (with its prefix) of IFACE on NODE.
addr () {
	ddp_node_exec "$1" ip -4 -o addr show dev "$2" | awk '{ print $4 }'
}
# reach NODE ADDR: a TCP connection from NODE to ADDR:PORT_ON_ADDR gets an
# answer (refused counts: the address is there) within 1 s.
reach () {
	ddp_node_exec "$1" python3 -c '
import socket, sys
s = socket.socket(); s.settimeout(1)
try:
    s.connect((sys.argv[1], 9))
except ConnectionRefusedError:
    sys.exit(0)
except OSError as e:
    print("no answer from", sys.argv[1], e); sys.exit(1)
' "$2"
}

test_expect_success 'every node has its addresses: eth0, data0, docker0 (one address everywhere), dead0' '
	for i in 1 2 3; do
		test "$(addr n$i eth0)" = 198.18.0.$i/24 &&
		test "$(addr n$i data0)" = 198.19.0.$i/24 &&
		test "$(addr n$i docker0)" = 198.19.255.1/24 &&
		test "$(addr n$i dead0)" = 198.19.254.$i/24 || return 1
	done
'
test_expect_success 'a task sees its node: host name, and the name resolving to its eth0' '
	ddp_srun -N3 -n3 -w "n[1-3]" sh -c "echo \$(hostname) \$(getent ahostsv4 \$(hostname) | head -n 1 | cut -d\" \" -f1)" |
		sort >names &&
	printf "n1 198.18.0.1\nn2 198.18.0.2\nn3 198.18.0.3\n" >names.expected &&
	test_cmp names.expected names
'
test_expect_success 'nodes reach each other on eth0 and data0, not on dead0' '
	reach n1 198.18.0.3 && reach n3 198.19.0.1 && reach n1 198.18.0.254 &&
	test_must_fail reach n1 198.19.254.2
'
test_expect_success 'the machine'"'"'s own network has none of it' '
	! ip -4 -o addr | grep -E " 198\.1[89]\." &&
	! ip -o link | grep -E ": (br0|br1|docker0|dead0|data0)[@:]"
'
# An srun whose step must wait for CPUs another step holds is woken by
# slurmctld when that step ends, at the address of the host name srun
# gave.  An srun in a batch script runs on its node (the wrappers leave a
# command in one of the cluster's namespaces there): moved to namespace
# head with its host name still n1, it was never woken, and its job held
# its nodes for good (Slurm 24.11: t0100's batch job, then t0160's wait
# for an idle cluster, failed).
test_expect_success 'a batch script'"'"'s srun waiting for the CPUs of the step before it is woken when they are free' '
	rm -f wake.started.* &&
	cat >wake.sh <<-\EOF &&
	#!/bin/sh
	srun -n2 sh -c "touch wake.started.\$SLURM_PROCID; sleep 3" &
	i=0; while [ ! -f wake.started.0 ] || [ ! -f wake.started.1 ]; do
		[ $i -lt 300 ] || exit 1; sleep 0.1; i=$((i + 1)); done
	srun -v -n2 hostname >wake.out 2>wake.err
	wait
	EOF
	timeout 45 sbatch --wait -N1 -n2 -w n1 -o wake.log wake.sh &&
	cat wake.log wake.out &&
	grep -E "retrying|Step created" wake.err &&
	printf "n1\nn1\n" >wake.expected &&
	test_cmp wake.expected wake.out
'

# A cluster of its own for what follows: the shared one stays as it is.
start_own () {
	own=$("$DDP_CLUSTER" start "$@" 2>own.err) || { cat own.err; return 1; }
	echo "$own" >own.dir
}
stop_own () {
	"$DDP_CLUSTER" stop "$own" &&
	! grep -F "$own" /proc/self/mountinfo &&
	test ! -e "$own"
}

test_expect_success '--rate 200mbit: one TCP stream between two nodes gets 0.08-0.21 Gbit/s (unshaped: 9-24)' '
	test_when_finished "\"$DDP_CLUSTER\" stop \"\$(cat own.dir)\" >/dev/null 2>&1; true" &&
	start_own --net --nodes 2 --rate 200mbit &&
	"$DDP_CLUSTER" stream "$own" n1 n2 3 >stream.out &&
	cat stream.out &&
	awk "/Gbit/ { r = \$4 } END { exit !(r >= 0.08 && r <= 0.21) }" stream.out &&
	stop_own
'
test_expect_success '--mtu 9000: the nodes'"'"' links have it' '
	test_when_finished "\"$DDP_CLUSTER\" stop \"\$(cat own.dir)\" >/dev/null 2>&1; true" &&
	start_own --net --nodes 2 --mtu 9000 &&
	"$DDP_CLUSTER" exec "$own" n2 ip -o link show dev eth0 | grep " mtu 9000 " &&
	stop_own
'
test_expect_success 'a crashed networked cluster (every process killed): stop removes all of it' '
	start_own --net --nodes 2 --docker &&
	kill -9 $("$DDP_CLUSTER" pids "$own") &&
	sleep 0.5 &&
	stop_own
'
# A machine that cannot make the network: here, one without tc.
test_expect_success 'no network to be had: DDP_CLUSTER_NET=1 refuses saying why, auto falls back to 127.0.0.1 saying so' '
	mkdir -p notc &&
	for d in /usr/local/sbin /usr/local/bin /usr/sbin /usr/bin /sbin /bin; do
		for f in "$d"/*; do
			test -e "$f" || continue
			b=${f##*/}
			test "$b" = tc || test -e "notc/$b" || ln -s "$f" "notc/$b"
		done
	done &&
	test_must_fail env PATH="$PWD/notc" DDP_CLUSTER_NET=1 "$DDP_CLUSTER" start 2>net1.err &&
	cat net1.err &&
	grep "cannot give the nodes a network.*missing command tc" net1.err &&
	test_must_fail env PATH="$PWD/notc" DDP_CLUSTER_NET=auto "$DDP_CLUSTER" start --docker 2>net2.err &&
	grep "which --mtu, --rate, --data-net, --docker and --dead-if need" net2.err &&
	own=$(PATH="$PWD/notc" DDP_CLUSTER_NET=auto "$DDP_CLUSTER" start 2>net3.err) &&
	cat net3.err &&
	grep "the nodes share 127.0.0.1 (no network of their own: missing command tc" net3.err &&
	"$DDP_CLUSTER" exec "$own" n2 getent ahostsv4 n2 >n2.addr &&
	test "$(awk "NR == 1 { print \$1 }" n2.addr)" = 127.0.0.1 &&
	stop_own
'
test_done
