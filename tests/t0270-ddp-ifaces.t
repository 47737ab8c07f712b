#!/bin/sh
test_description='multi-homed nodes: the host backend and MASTER_ADDR pick
addresses that reach the other node (DDP_SOCKET_IFNAME, docker0, a dead
interface, a routed network, the first node named on 127.0.1.1)'
. "$(dirname "$0")/test-lib.sh"

# A private networked cluster of 2 nodes (ddp-test-cluster start --net):
# eth0 198.18.0.I/24 (host names), data0 198.19.0.I/24 (--data-net),
# docker0 198.19.255.1/24 on both nodes (--docker), dead0 198.19.254.I/24
# up with carrier but leading nowhere (--dead-if: ARP is never answered).
# n2 lists its interfaces eth0, data0, dead0, docker0 (index order).
# progs/ddp_netinit prints each rank's ddp_init time, MASTER_ADDR and a
# checked all-reduce.  nft counters on each node's output count the SYNs
# sent to docker0's address and to dead0's network; /proc/net/dev (read
# in the node's namespace) the bytes each interface sent.
#
# On the code before DDP_SOCKET_IFNAME and the own-address rule (main of
# 2026-11-28, 79c01ab) tests 3 and 5-8 failed: DDP_SOCKET_IFNAME=data0 sent
# the 100.8 MB over eth0 (250 bytes on data0), a selector that lets nothing
# in or a malformed one was ignored; with eth0 routed n1 tried dead0's
# address first and waited for the kernel to give up on its ARP (set-up
# 3.14 s, against 0.16-0.38 s since), then docker0's, its own (one SYN),
# and with DDP_TIMEOUT=3 it could not link at all ("lane 0 could not link
# to node 1 within 3 s");
# MASTER_ADDR on n1 was 127.0.1.1.  Tests 2 and 4 guard what held before:
# with eth0 on a shared /24, n2's eth0 comes first.
NETINIT=$DDP_PROGS/ddp_netinit
DDP_SRUN_TIMEOUT=120

why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"
dir=$("$DDP_CLUSTER" start --nodes 2 --net --data-net --docker --dead-if \
	2>"$DDP_BUILD_DIR/tests/.cluster-start-t0270.err") ||
	ddp_cluster_unavailable "a networked cluster did not start: $(tail -n 5 \
		"$DDP_BUILD_DIR/tests/.cluster-start-t0270.err")"
rm -f "$DDP_BUILD_DIR/tests/.cluster-start-t0270.err"
trap 'ddp_rc=$?; "$DDP_CLUSTER" stop "$dir"; (exit $ddp_rc); die' EXIT
. "$dir/env"
say "# using a private networked test cluster in $dir"

on () {
	node=$1; shift
	"$DDP_CLUSTER" exec "$dir" "$node" "$@"
}

# tx NODE IF: bytes NODE has sent on IF.
tx () {
	on "$1" awk -v i="$2:" '$1 == i { print $10 }' /proc/net/dev
}

# syns NODE: "DOCKER DEAD", the SYNs NODE sent to 198.19.255.1 and to
# 198.19.254.0/24 since syns_count.
syns_count () {
	for n in n1 n2; do
		on $n nft delete table ip t0270 2>/dev/null
		on $n nft -f - <<-\EOF || return 1
		table ip t0270 {
			chain out {
				type filter hook output priority 0;
				tcp flags & (syn|ack) == syn ip daddr 198.19.255.1 counter
				tcp flags & (syn|ack) == syn ip daddr 198.19.254.0/24 counter
			}
		}
		EOF
	done
}
syns () {
	on "$1" nft list chain ip t0270 out |
		sed -n 's/.* counter packets \([0-9]*\) .*/\1/p' | paste -sd' ' -
}

# netinit NAME SRUN-ARGS... PROG [ARGS]: a -N2 -n2 job (of ddp_netinit);
# both ranks ok.
netinit () {
	name=$1; shift
	ddp_srun --ddp=host -N2 -n2 "$@" >"$name.out" 2>"$name.err"
	rc=$?
	cat "$name.out" "$name.err"
	test $rc = 0 && test "$(grep -c ": init_s=.* ok$" "$name.out")" = 2
}

# slowest_init NAME: the longest ddp_init of the job's ranks, in ms.
slowest_init () {
	sed -n 's/.*init_s=\([0-9.]*\) .*/\1/p' "$1.out" |
		awk '{ if ($1 > m) m = $1 } END { printf "%d\n", m * 1000 }'
}

test_expect_success 'the nodes are multi-homed as asked' '
	on n1 ip -br addr >addrs &&
	cat addrs &&
	grep "^data0.*198\.19\.0\.1/24" addrs &&
	grep "^docker0.*198\.19\.255\.1/24" addrs &&
	grep "^dead0.*198\.19\.254\.1/24" addrs &&
	syns_count && test "$(syns n1)" = "0 0"
'

test_expect_success 'by default a job never tries docker0 nor a dead address' '
	syns_count &&
	netinit default "$NETINIT" &&
	echo "n1 SYNs to docker0, dead0: $(syns n1); n2: $(syns n2)" &&
	test "$(syns n1)" = "0 0" && test "$(syns n2)" = "0 0" &&
	grep -c "master=198\.18\.0\.1 ok" default.out | grep -qx 2
'

# 6 all-reduces of 16 MiB between 2 nodes: each node sends 6 x 16 MiB =
# 100.7 MB.
test_expect_success 'DDP_SOCKET_IFNAME=data0: the bytes go over data0' '
	e0=$(tx n1 eth0) && d0=$(tx n1 data0) &&
	netinit data0 --export=ALL,DDP_SOCKET_IFNAME=data0 \
		"$NETINIT" 16777216 6 &&
	e=$(( $(tx n1 eth0) - e0 )) && d=$(( $(tx n1 data0) - d0 )) &&
	echo "n1 sent eth0 $e bytes, data0 $d bytes" &&
	test "$d" -ge 100000000 && test "$e" -lt 10000000
'

test_expect_success 'DDP_SOCKET_IFNAME=^=data0: the bytes stay off data0' '
	e0=$(tx n1 eth0) && d0=$(tx n1 data0) &&
	netinit nodata --export=ALL,DDP_SOCKET_IFNAME=^=data0 \
		"$NETINIT" 16777216 6 &&
	e=$(( $(tx n1 eth0) - e0 )) && d=$(( $(tx n1 data0) - d0 )) &&
	echo "n1 sent eth0 $e bytes, data0 $d bytes" &&
	test "$e" -ge 100000000 && test "$d" -lt 10000000
'

test_expect_success 'a selector that lets nothing in fails init and says what is there' '
	test_must_fail netinit none --export=ALL,DDP_SOCKET_IFNAME=ib "$NETINIT" &&
	grep "DDP_SOCKET_IFNAME=.ib. lets in no interface of this node.*eth0, data0, dead0, docker0" none.out
'

test_expect_success 'a malformed selector fails init naming it' '
	(
		DDP_SOCKET_IFNAME=eth0,,data0 && export DDP_SOCKET_IFNAME &&
		test_must_fail netinit bad "$NETINIT"
	) &&
	grep "DDP_SOCKET_IFNAME=.eth0,,data0. has an empty name" bad.out
'

# A routed management network (eth0 a /32 with a route, as on a layer-3
# fabric) and no data network: for n1, n2's eth0 is on none of its
# subnets, while dead0's and docker0's addresses are on subnets of its
# own, so they come first in the order of nearness.
routed () {
	on "$1" sh -c "ip addr del 198.18.0.$2/24 dev eth0 &&
		ip addr add 198.18.0.$2/32 dev eth0 &&
		ip route add 198.18.0.0/24 dev eth0 src 198.18.0.$2 &&
		ip link set data0 down"
}
unrouted () {
	on "$1" sh -c "ip addr del 198.18.0.$2/32 dev eth0;
		ip addr add 198.18.0.$2/24 dev eth0; ip link set data0 up"
}

test_expect_success 'routed eth0: the dead address costs milliseconds, docker0 is never tried' '
	test_when_finished "unrouted n1 1; unrouted n2 2" &&
	routed n1 1 && routed n2 2 &&
	for i in 1 2 3; do
		syns_count &&
		netinit routed$i "$NETINIT" &&
		echo "set-up $(slowest_init routed$i) ms; n1 SYNs to docker0, dead0: $(syns n1)" &&
		test "$(syns n1 | cut -d" " -f1)" = 0 &&
		test "$(slowest_init routed$i)" -lt 2000 || return 1
	done &&
	netinit short --export=ALL,DDP_TIMEOUT=3 "$NETINIT"
'

# The NCCL backend's watch (on the stand-in NCCL, tests/progs/nccl_mock.c)
# asks a failed peer on every address it offered at once.  With docker0
# offered (DDP_SOCKET_IFNAME=^lo lets it in, last), a survivor asked
# 198.19.255.1, which is its own node: a refusal there, or a stranger's
# silence, was taken for the peer's.  It now tries no address of its own
# for a peer on another node, as the host backend's links do (net.h).
# One rank a node: rank 0 on n1 asks rank 1 (killed) on n2 (a peer on its
# own node may be asked at any of its addresses: they all reach it).  The
# refusal on eth0 names rank 1 gone, though dead0's SYN leads nowhere (it
# was "cannot be reached" after the whole window).  Per-task files: srun
# drops a task's last lines when the step ends on a killed task.
mock=$DDP_BUILD_DIR/tests/progs/.libs/nccl_mock.so
test -f "$mock" && test_set_prereq NCCL_MOCK
test_expect_success NCCL_MOCK 'the NCCL watch never asks a peer at an address of its own node (docker0)' '
	rm -rf watch.peers && mkdir watch.peers &&
	syns_count &&
	{ ddp_srun --mpi=pmix -N2 -n2 -o watch.%t.out -e watch.%t.err \
		env LD_PRELOAD="$mock" \
		MOCK_NCCL_PEERS=fake MOCK_GPU_ID=rank \
		MOCK_NCCL_PEER_DIR="$PWD/watch.peers" DDP_BACKEND=nccl \
		DDP_SOCKET_IFNAME=^lo DDP_TIMEOUT=10 \
		"$DDP_PROGS/ddp_fault" kill 1
	  echo $? >watch.rc; } &&
	cat watch.0.out watch.0.err &&
	echo "n1 SYNs to docker0, dead0: $(syns n1); n2: $(syns n2)" &&
	test "$(cat watch.rc)" != 0 &&
	grep "rank 0/2\] error: .*rank 1 (host n2) is gone: its process exited (connection refused)" watch.0.err &&
	test "$(syns n1 | cut -d" " -f1)" = 0 &&
	test "$(syns n2 | cut -d" " -f1)" = 0
'

# Debian maps a machine's own name to 127.0.1.1 in /etc/hosts: n1 sees
# itself there (its own /etc/hosts, bound in its mount namespace), n2 sees
# n1 at 198.18.0.1.
test_expect_success 'MASTER_ADDR is never loopback for -N2 where n1 is 127.0.1.1 on n1' '
	{ echo "127.0.1.1 n1" && grep -v " n1\$" "$dir/etc/hosts"; } >hosts.n1 &&
	test_when_finished "on n1 umount /etc/hosts" &&
	on n1 mount --bind "$PWD/hosts.n1" /etc/hosts &&
	on n1 getent hosts n1 | grep "^127\.0\.1\.1 " &&
	netinit debian "$NETINIT" &&
	test "$(grep -c "master=198\.18\.0\.1 ok" debian.out)" = 2 &&
	netinit debian_data --export=ALL,DDP_SOCKET_IFNAME=data "$NETINIT" &&
	grep "rank 0: .*master=198\.19\.0\.1 ok" debian_data.out &&
	ddp_srun --ddp=host -N1 -n1 -w n1 "$NETINIT" >single.out &&
	grep "master=127\.0\.1\.1 ok" single.out
'

# The site's socket_ifname (plugstack.conf, issue 47): here the host
# names resolve to eth0 (the management network) and the site wants the
# jobs' traffic on data0.  slurmstepd rereads plugstack.conf for every
# step; site with no argument puts the plain line back.
site () {
	"$DDP_CLUSTER" plugstack "$dir" "$@"
}

# envview NAME SRUN-ARGS...: the -N2 -n2 --ddp=host tasks' view of the
# interface variables and MASTER_ADDR, one line a rank ("0: ..."), sorted.
envview () {
	name=$1; shift
	ddp_srun --ddp=host -N2 -n2 -l "$@" "$DDP_PROGS/rankview" \
		DDP_SOCKET_IFNAME NCCL_SOCKET_IFNAME MASTER_ADDR |
		sort >"$name.env" &&
	cat "$name.env"
}

test_expect_success 'socket_ifname=data0: the tasks get it, NCCL too, MASTER_ADDR on n1 and the bytes on data0' '
	test_when_finished site &&
	site socket_ifname=data0 &&
	envview site &&
	grep -qx "0: DDP_SOCKET_IFNAME=data0 NCCL_SOCKET_IFNAME=data0 MASTER_ADDR=198.19.0.1" site.env &&
	grep -qx "1: DDP_SOCKET_IFNAME=data0 NCCL_SOCKET_IFNAME=data0 MASTER_ADDR=198.18.0.1" site.env &&
	ddp_srun -N2 -n2 "$DDP_PROGS/rankview" DDP_SOCKET_IFNAME \
		NCCL_SOCKET_IFNAME >noddp.env &&
	test "$(sort -u noddp.env)" = "DDP_SOCKET_IFNAME=- NCCL_SOCKET_IFNAME=-" &&
	e0=$(tx n1 eth0) && d0=$(tx n1 data0) &&
	netinit site "$NETINIT" 16777216 6 &&
	e=$(( $(tx n1 eth0) - e0 )) && d=$(( $(tx n1 data0) - d0 )) &&
	echo "n1 sent eth0 $e bytes, data0 $d bytes" &&
	test "$d" -ge 100000000 && test "$e" -lt 10000000 &&
	grep "rank 0: .*master=198\.19\.0\.1 ok" site.out
'

# n2 can tell n1's data0 address only from n1's name: with a second
# address for it (a name on both networks), n2 takes the one on data0's
# subnet; without the key it keeps the name's first.
test_expect_success 'socket_ifname=data0, n1 named on both networks: n2 takes its data0 address too' '
	test_when_finished "site; on n2 umount /etc/hosts" &&
	{ cat "$dir/etc/hosts" && echo "198.19.0.1 n1"; } >hosts.two &&
	on n2 mount --bind "$PWD/hosts.two" /etc/hosts &&
	on n2 getent ahostsv4 n1 | grep "^198\.19\.0\.1 " &&
	site socket_ifname=data0 &&
	envview two &&
	grep -qx "0: .* MASTER_ADDR=198.19.0.1" two.env &&
	grep -qx "1: .* MASTER_ADDR=198.19.0.1" two.env &&
	site &&
	envview two_nokey &&
	grep -qx "1: DDP_SOCKET_IFNAME=- NCCL_SOCKET_IFNAME=- MASTER_ADDR=198.18.0.1" two_nokey.env
'

test_expect_success 'socket_ifname=data0: the user'"'"'s DDP_SOCKET_IFNAME=^=data0 wins, for NCCL and MASTER_ADDR too' '
	test_when_finished site &&
	site socket_ifname=data0 &&
	envview user --export=ALL,DDP_SOCKET_IFNAME=^=data0 &&
	grep -qx "0: DDP_SOCKET_IFNAME=^=data0 NCCL_SOCKET_IFNAME=^=data0 MASTER_ADDR=198.18.0.1" user.env &&
	grep -qx "1: DDP_SOCKET_IFNAME=^=data0 NCCL_SOCKET_IFNAME=^=data0 MASTER_ADDR=198.18.0.1" user.env &&
	e0=$(tx n1 eth0) && d0=$(tx n1 data0) &&
	netinit user --export=ALL,DDP_SOCKET_IFNAME=^=data0 \
		"$NETINIT" 16777216 6 &&
	e=$(( $(tx n1 eth0) - e0 )) && d=$(( $(tx n1 data0) - d0 )) &&
	echo "n1 sent eth0 $e bytes, data0 $d bytes" &&
	test "$e" -ge 100000000 && test "$d" -lt 10000000
'

test_expect_success 'socket_ifname=data0: never over the user'"'"'s NCCL_SOCKET_IFNAME, nor beside DDP_HOST_ADDR' '
	test_when_finished site &&
	site socket_ifname=data0 &&
	envview usernccl --export=ALL,NCCL_SOCKET_IFNAME==eth0 &&
	grep -qx "0: DDP_SOCKET_IFNAME=data0 NCCL_SOCKET_IFNAME==eth0 MASTER_ADDR=198.19.0.1" usernccl.env &&
	grep -qx "1: DDP_SOCKET_IFNAME=data0 NCCL_SOCKET_IFNAME==eth0 MASTER_ADDR=198.18.0.1" usernccl.env &&
	envview hostaddr --export=ALL,DDP_HOST_ADDR=198.18.0.1 &&
	grep -qx "0: DDP_SOCKET_IFNAME=- NCCL_SOCKET_IFNAME=data0 MASTER_ADDR=198.18.0.1" hostaddr.env
'

test_done
