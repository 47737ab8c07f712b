#!/bin/sh
test_description='libddp host collectives: every dtype, op and size, checked
against references computed in the test program, on one and two nodes'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

DDP_SRUN_TIMEOUT=180

# run_check NAME NTASKS CHECK-ARGS SRUN-ARGS...: under srun --mpi=pmix, every
# task must report 0 failures.  CHECK-ARGS -q (sizes 0, 1, 7, 1001 and a
# large 2.2M-element run, chunked through the segment) keeps the file short
# on a 2-core machine; -N2 -n4 runs the full size list.
run_check () {
	name=$1 n=$2 args=$3; shift 3
	ddp_check_run "$name" "$n" "$args" --mpi=pmix "$@"
}

test_expect_success '-N1 -n1: every collective, dtype, op and size' '
	run_check n1 1 -q -N1 -n1
'
test_expect_success '-N1 -n4: shared memory only' '
	run_check n4 4 -q -N1 -n4 &&
	grep -q "local 3/4 node 0/1" n4.out
'
test_expect_success '-N2 -n4: shared memory and TCP' '
	run_check n2x4 4 "" -N2 -n4 &&
	grep -q "node 1/2" n2x4.out &&
	grep -q "node 0/2" n2x4.out
'
test_expect_success '-N2 -n3: uneven nodes' '
	run_check n2x3 3 -q -N2 -n3 &&
	grep -q "local 0/1 node 1/2" n2x3.out
'
test_expect_success 'small segment slots force many chunks per call' '
	run_check slot 3 "-q -l 50000" -N2 -n3 --export=ALL,DDP_SHM_SLOT=4096
'
# On one node a bcast of 16 KiB to 32 MiB and a gather or allgather of 8
# KiB a rank and more read the other ranks' buffers straight from their
# memory (process_vm_readv), once the node voted every rank can; the full
# size list (40000 and 300001 elements) is in both ranges, and the large
# run's moves (2000003 floats, 8 MB) in the bcast's above 2 MiB.
test_expect_success '-N1 -n3: single copy between local ranks' '
	run_check cma 3 "-l 6000000" -N1 -n3 --export=ALL,DDP_DEBUG=1 &&
	test "$(grep -c "single copy between local ranks: on" cma.err)" = 3
'
# One rank that votes no (DDP_CMA=0 there only) turns it off for the whole
# node, and every rank goes through the segment.
test_expect_success '-N1 -n3: one rank without single copy turns it off' '
	cat >one-no-cma.sh <<-\EOS &&
	#!/bin/sh
	test "$SLURM_PROCID" = 1 && export DDP_CMA=0
	exec "$@"
	EOS
	chmod +x one-no-cma.sh &&
	{ ddp_srun --mpi=pmix -N1 -n3 --export=ALL,DDP_DEBUG=1 \
		./one-no-cma.sh "$DDP_PROGS/ddp_check" -l 0 >nocma.out 2>nocma.err
	  rc=$?; } &&
	cat nocma.out nocma.err && test $rc = 0 &&
	test "$(grep -c " 0 failed in all" nocma.out)" = 3 &&
	test "$(grep -c "single copy between local ranks: off" nocma.err)" = 3 &&
	test "$(grep -c "single copy off here: DDP_CMA=0" nocma.err)" = 1
'
test_done
