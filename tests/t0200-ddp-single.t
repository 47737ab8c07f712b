#!/bin/sh
test_description='libddp: single process, launch errors, environment checks'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

CHECK=$DDP_PROGS/ddp_check

test_expect_success 'without srun the check program runs as one process' '
	env -u WORLD_SIZE -u RANK "$CHECK" -q -l 5000 >single.out &&
	cat single.out &&
	grep -q "^ddp_check rank 0/1 local 0/1 node 0/1 backend host: .* 0 failed in all" single.out
'
test_expect_success 'WORLD_SIZE=4 without PMIx fails and says how to launch' '
	test_must_fail env WORLD_SIZE=4 "$CHECK" -q 2>err &&
	cat err &&
	grep -q "WORLD_SIZE=4 says this is one of 4 ranks" err &&
	grep -q "srun --ddp" err &&
	grep -q "srun --mpi=pmix" err
'
test_expect_success 'srun -n2 without PMIx fails the same way on every task' '
	test_must_fail ddp_srun -N1 -n2 "$CHECK" -q 2>err &&
	cat err &&
	test $(grep -c "SLURM_STEP_NUM_TASKS=2 says this is one of 2 ranks" err) = 2
'
test_expect_success 'srun -n1 without PMIx is a single process' '
	ddp_srun -N1 -n1 "$CHECK" -q -l 0 >one.out &&
	grep -q "rank 0/1 .* 0 failed in all" one.out
'
test_expect_success 'malformed RANK / WORLD_SIZE / DDP_TIMEOUT are rejected clearly' '
	test_must_fail env RANK=abc "$CHECK" -q 2>err1 &&
	grep -q "RANK=.abc. is not an integer" err1 &&
	test_must_fail env WORLD_SIZE=0 "$CHECK" -q 2>err2 &&
	grep -q "WORLD_SIZE=.0. is not an integer in \[1," err2 &&
	test_must_fail env DDP_TIMEOUT=soon "$CHECK" -q 2>err3 &&
	grep -q "DDP_TIMEOUT=.soon. is not a number of seconds: give one in (0, 1000000\], or inf" err3 &&
	test_must_fail env DDP_TIMEOUT=1e9 "$CHECK" -q 2>err4 &&
	grep -q "DDP_TIMEOUT=.1e9. is too long: give at most 1000000 seconds" err4 &&
	env DDP_TIMEOUT=inf DDP_INIT_TIMEOUT=inf "$CHECK" -q -l 0 >inf.out &&
	grep -q "0 failed in all" inf.out
'
test_expect_success 'RANK that disagrees with PMIx: a warning, PMIx wins' '
	ddp_srun --mpi=pmix -N1 -n2 \
		env RANK=0 WORLD_SIZE=2 "$CHECK" -q -l 0 >out 2>err &&
	cat err &&
	grep -q "warning: RANK=0 but the launcher (pmix) says rank 1; using the launcher" err &&
	grep -q "rank 1/2 .* 0 failed in all" out
'
# --ddp sets RANK and WORLD_SIZE for each task; the program is started with
# a forged WORLD_SIZE, which must not be held against the task's own RANK.
test_expect_success 'a forged WORLD_SIZE under srun --ddp: the launcher'"'"'s world, a warning naming both' '
	ddp_srun --ddp=host -N1 -n4 \
		env WORLD_SIZE=1 "$CHECK" -q -l 0 >forged.out 2>forged.err &&
	cat forged.err &&
	test $(grep -c "warning: WORLD_SIZE=1 but the launcher (pmix) says 4 ranks; using the launcher" forged.err) = 4 &&
	test $(grep -c "rank ./4 .* 0 failed in all" forged.out) = 4
'
test_expect_success 'a malformed DDP_* value under srun: every task fails, naming it' '
	test_must_fail ddp_srun --mpi=pmix -N2 -n3 \
		env DDP_SHM_SLOT=-1 "$CHECK" -q -l 0 >badslot.out 2>badslot.err &&
	cat badslot.err &&
	test $(grep -c "error: DDP_SHM_SLOT=.-1. is not a whole number from 4096 to 1073741824" badslot.err) = 3 &&
	! grep -q "failed in all" badslot.out
'
test_expect_success 'ddp_init works again after ddp_finalize under PMIx' '
	ddp_srun --mpi=pmix -N2 -n3 "$CHECK" -q -r -l 0 >again.out &&
	cat again.out &&
	test $(grep -c "init again: allreduce ok" again.out) = 3
'
command -v mpirun >/dev/null 2>&1 && mpirun --version 2>/dev/null | grep -q "Open MPI" \
	&& test_set_prereq MPIRUN
test_expect_success MPIRUN 'another PMIx launcher (Open MPI mpirun) works too' '
	timeout 60 mpirun --allow-run-as-root --oversubscribe -n 3 \
		"$CHECK" -q -l 1000 >mpirun.out &&
	cat mpirun.out &&
	test $(grep -c "^ddp_check rank ./3 local ./3 .* 0 failed in all" mpirun.out) = 3
'
test_expect_success 'DDP_DEBUG=1 logs what init found and the phase times' '
	ddp_srun --mpi=pmix -N2 -n3 env DDP_DEBUG=1 "$CHECK" -q -l 0 >out 2>dbg &&
	cat dbg &&
	grep -q "^\[ddp rank 0/3\] init: .*bootstrap pmix.*rank 0/3, local 0/2, node 0/2, backend host" dbg &&
	grep -q "^\[ddp rank 2/3\] init: .*rank 2/3, local 0/1, node 1/2" dbg &&
	test $(grep -c "init: bootstrap .* ms, backend setup .* ms, first barrier .* ms, total" dbg) = 3
'
test_done
