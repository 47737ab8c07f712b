#!/bin/sh
test_description='libddp under Open MPI'"'"'s mpirun across the nodes of a networked test cluster

mpirun (ORTE) runs in the allocation of salloc and starts its daemons on
the nodes with srun; each daemon is the ranks'"'"' PMIx server.  ORTE numbers
its own node 0 whether or not it runs ranks: under salloc the job'"'"'s nodes
are 1 and 2 of PMIX_NUM_NODES 2, and each node files the other nodes'"'"'
data under other numbers.  libddp takes the node layout from the node ids
the ranks exchange first (libjob/bootstrap/layout.h).'
. "$(dirname "$0")/test-lib.sh"

command -v mpirun >/dev/null 2>&1 && mpirun --version 2>/dev/null | grep -q "Open MPI" || {
	skip_all="no Open MPI mpirun"
	test_done
}
ddp_cluster_require_net 2

CHECK=$DDP_PROGS/ddp_check

# mpirun_check OUT SALLOC-ARGS -- MPIRUN-ARGS: ddp_check under mpirun in
# an allocation of salloc, each rank first saying its host:
#   host RANK HOSTNAME
#   ddp_check rank R/N local L/LN node D/DN backend host: ... 0 failed in all
mpirun_check () {
	out=$1
	shift
	sargs=
	while [ "$1" != -- ]; do sargs="$sargs $1"; shift; done
	shift
	# shellcheck disable=SC2086
	timeout --kill-after=5 90 salloc $sargs \
		mpirun --allow-run-as-root "$@" \
		sh -c 'echo "host $OMPI_COMM_WORLD_RANK $(hostname)"; exec "$0" -q -l 1000' \
		"$CHECK" >"$out" 2>"$out.err"
	rc=$?
	cat "$out" "$out.err"
	return $rc
}

# placed OUT RANK SIZE LOCAL LSIZE NODE NNODES: rank's line says so and
# that no check failed anywhere.
placed () {
	grep -q "^ddp_check rank $2/$3 local $4/$5 node $6/$7 backend host: .* 0 failed in all$" "$1"
}

# host_of OUT RANK: the host rank ran on.
host_of () {
	sed -n "s/^host $2 //p" "$1"
}

test_expect_success 'salloc -N2, mpirun -n 4: 2 ranks a node, ranks, node and local ranks right, collectives agree' '
	mpirun_check block.out -N2 --ntasks-per-node=2 -- -n 4 &&
	test $(grep -c "^ddp_check rank" block.out) = 4 &&
	placed block.out 0 4 0 2 0 2 && placed block.out 1 4 1 2 0 2 &&
	placed block.out 2 4 0 2 1 2 && placed block.out 3 4 1 2 1 2 &&
	test "$(host_of block.out 0)" = n1 && test "$(host_of block.out 1)" = n1 &&
	test "$(host_of block.out 2)" = n2 && test "$(host_of block.out 3)" = n2
'
test_expect_success 'mpirun --map-by node: ranks alternate between the nodes' '
	mpirun_check cyclic.out -N2 --ntasks-per-node=2 -- --map-by node -n 4 &&
	placed cyclic.out 0 4 0 2 0 2 && placed cyclic.out 1 4 0 2 1 2 &&
	placed cyclic.out 2 4 1 2 0 2 && placed cyclic.out 3 4 1 2 1 2 &&
	test "$(host_of cyclic.out 0)" = "$(host_of cyclic.out 2)" &&
	test "$(host_of cyclic.out 1)" = "$(host_of cyclic.out 3)" &&
	test "$(host_of cyclic.out 0)" != "$(host_of cyclic.out 1)"
'
test_expect_success 'mpirun -n 3: 2 ranks on one node, 1 on the other' '
	mpirun_check uneven.out -N2 --ntasks-per-node=2 -- -n 3 &&
	placed uneven.out 0 3 0 2 0 2 && placed uneven.out 1 3 1 2 0 2 &&
	placed uneven.out 2 3 0 1 1 2
'
# In a batch script mpirun runs on the first node of the allocation,
# which then has ranks too (ORTE's ids are then 0 and 1 already).
test_expect_success 'sbatch: mpirun in the batch script on the first node' '
	cat >batch.sh <<-EOF &&
	#!/bin/sh
	exec mpirun --allow-run-as-root -n 4 "$CHECK" -q -l 1000
	EOF
	chmod +x batch.sh &&
	timeout --kill-after=5 120 sbatch --wait -N2 --ntasks-per-node=2 \
		-o "$PWD/batch.out" ./batch.sh &&
	cat batch.out &&
	placed batch.out 0 4 0 2 0 2 && placed batch.out 1 4 1 2 0 2 &&
	placed batch.out 2 4 0 2 1 2 && placed batch.out 3 4 1 2 1 2
'
test_done
