#!/bin/sh
test_description='ddp.torch.init_process_group: torch.distributed on a
store rank 0 serves through libddp (tests/progs/torch_store.py): the store
behaves as TCPStore, strangers get nothing from it and do not slow it;
gloo collectives with no MASTER_ADDR/MASTER_PORT in the environment in one
process, under ddp-run, under mpirun and under srun --ddp=host on 2 nodes,
where node 1 reaches the store at node 0'"'"'s address'
. "$(dirname "$0")/test-lib.sh"

# The module, torch, a clean environment, ./python as PY.
ddp_torch_setup
PROG=$DDP_SRC_DIR/tests/progs/torch_store.py
RUN=$DDP_BUILD_DIR/contrib/ddp-run/ddp-run

# ok_ranks NAME N: NAME.out has a "job ok" line from each rank 0 .. N-1
# (not anchored: mpirun forwards the ranks' output in pieces, and one
# rank's line may follow another's before its newline).
ok_ranks () {
	ddp_show "$1.out" &&
	! grep FAIL "$1.out" &&
	ddp_each_rank "$1.out" "$2" "rank @R/$2 node [0-9]* on [^ ]*: job ok, "
}

test_expect_success 'the store answers as TCPStore (get, set, add, compare_set, wait, delete_key, num_keys, timeouts)' '
	DDP_BACKEND=host "$PY" "$PROG" semantics >sem.out 2>sem.err ||
		{ cat sem.out sem.err; false; } &&
	cat sem.out &&
	grep -q "^semantics: [1-9][0-9]* operations against TCPStore, 0 differ; [0-9]* checks of values, 0 failed$" sem.out
'

test_expect_success 'strangers: garbage and a wrong secret refused, silent connections cost nothing, another job'"'"'s store skipped, a closed store fails at once' '
	DDP_BACKEND=host "$PY" "$PROG" strangers >str.out 2>str.err ||
		{ cat str.out str.err; false; } &&
	cat str.out &&
	grep -q "^strangers: [0-9]* checks, 0 failed$" str.out
'

test_expect_success 'one process, no launcher: a HashStore, the collectives work' '
	DDP_BACKEND=host "$PY" "$PROG" job >one.out 2>one.err ||
		{ cat one.out one.err; false; } &&
	ok_ranks one 1 &&
	grep -q "store at none" one.out
'

test_expect_success 'ddp-run -n 4 -N 2 without MASTER_ADDR/MASTER_PORT: every rank joins' '
	timeout 120 "$RUN" -n 4 -N 2 -b host -t 100 \
		env -u MASTER_ADDR -u MASTER_PORT "$PY" "$PROG" job \
		>dr.out 2>dr.err || { cat dr.out dr.err; false; } &&
	ok_ranks dr 4
'

test_expect_success 'a store no rank reaches: ddp.PeerError on every rank within the timeout, naming what each address did' '
	timeout 60 "$RUN" -n 2 -b host -t 30 "$PY" "$PROG" unreachable \
		>un.out 2>un.err || { cat un.out un.err; false; } &&
	cat un.out &&
	! grep FAIL un.out &&
	for r in 0 1; do
		grep "^rank $r: PeerError after [0-9.]* s: ddp.torch.init_process_group: could not reach rank 0.s store on port [0-9]* (127.0.0.1: .*refused" un.out ||
			return 1
	done &&
	awk "/PeerError after/ { n++; s = \$5 + 0; if (s < 1.5 || s > 8) { print \"took \" s \" s\"; bad = 1 } }
		END { exit bad || n != 2 }" un.out
'

command -v mpirun >/dev/null 2>&1 && mpirun --version 2>/dev/null | grep -q "Open MPI" \
	&& test_set_prereq MPIRUN
test_expect_success MPIRUN 'Open MPI mpirun -n 3 (PMIx, no MASTER_*): every rank joins' '
	timeout 120 mpirun --allow-run-as-root --oversubscribe -n 3 \
		-x DDP_BACKEND=host -x PYTHONPATH "$PY" "$PROG" job \
		>mr.out 2>mr.err || { cat mr.out mr.err; false; } &&
	ok_ranks mr 3
'

ddp_cluster_require

test_expect_success 'srun --ddp=host -N2 -n4 without MASTER_ADDR/MASTER_PORT: node 1 reaches the store on node 0' '
	ddp_srun --ddp=host -N2 -n4 --ntasks-per-node=2 \
		env -u MASTER_ADDR -u MASTER_PORT "$PY" "$PROG" job \
		>sr.out 2>sr.err || { cat sr.out sr.err; false; } &&
	ok_ranks sr 4 &&
	host0=$(sed -n "s/^rank 0\/4 node 0 on \([^:]*\):.*/\1/p" sr.out) &&
	grep "^rank [0-9]/4 node 0 .* store at 127.0.0.1," sr.out &&
	test $(grep -c "^rank [0-9]/4 node 0 .* store at 127.0.0.1," sr.out) = 2 &&
	if test -f "$DDP_CLUSTER_DIR/net.conf"; then
		addr=$(ddp_node_addr "$host0") &&
		echo "node 0 is $host0 at $addr" &&
		test $(grep -c "^rank [0-9]/4 node 1 .* store at $addr," sr.out) = 2
	else
		test $(grep -c "^rank [0-9]/4 node 1 .* store at [0-9.]*," sr.out) = 2
	fi
'

test_done
