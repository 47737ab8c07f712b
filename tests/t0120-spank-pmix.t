#!/bin/sh
test_description='srun --ddp starts PMIx on a MpiDefault=none cluster, and only with --ddp'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

test -x "$DDP_PROGS/pmix_probe" || {
	skip_all="tests/progs/pmix_probe not built (no PMIx)"
	test_done
}

# probe ARGS...: srun ARGS pmix_probe, each line prefixed with RANK=.
probe () {
	ddp_srun "$@" sh -c '"$0" | sed "s/^/RANK=$RANK /"' "$DDP_PROGS/pmix_probe"
}

# check_probe FILE N: N tasks reached PMIx, PMIx rank == RANK == SLURM_PROCID.
check_probe () {
	cat "$1" &&
	test $(wc -l <"$1") = "$2" &&
	for r in $(seq 0 $(($2 - 1))); do
		grep -q "^RANK=$r pmix ok rank=$r size=$2 procid=$r " "$1" || return 1
	done
}

test_expect_success 'srun --ddp=host -N2 -n4 with MpiDefault=none: PMIx rank == RANK' '
	grep -x MpiDefault=none "$SLURM_CONF" &&
	probe --ddp=host -N2 -n4 >host.out &&
	check_probe host.out 4
'
test_expect_success 'without --ddp the same step has no PMIx server' '
	ddp_srun -N2 -n2 "$DDP_PROGS/rankview" PMIX_RANK SLURM_MPI_TYPE >plain &&
	cat plain &&
	test $(grep -c "^PMIX_RANK=- " plain) = 2
'
test_expect_success '--ddp with an explicit --mpi=pmix works too' '
	probe --mpi=pmix --ddp=host -N1 -n2 >explicit.out &&
	check_probe explicit.out 2
'
test_expect_success '--mpi=none --ddp=nccl: a clear error, nothing runs' '
	rm -f ran &&
	test_must_fail ddp_srun --mpi=none --ddp=nccl -N1 touch ran 2>mpinone.err &&
	cat mpinone.err &&
	grep "ddp: --ddp=nccl needs Slurm.s PMIx plugin, but this step uses --mpi=none" mpinone.err &&
	test ! -e ran
'
test_expect_success '--mpi=none: the message names the command line' '
	grep "uses --mpi=none (srun.s command line); drop --mpi" mpinone.err
'
test_expect_success 'SLURM_MPI_TYPE=pmi2 in the environment with --ddp: the error names the variable' '
	test_must_fail env SLURM_MPI_TYPE=pmi2 \
		timeout 60 srun --ddp=host -N1 true 2>pmi2.err &&
	cat pmi2.err &&
	grep "needs Slurm.s PMIx plugin, but this step uses MPI type pmi2 from SLURM_MPI_TYPE=pmi2 in the environment; unset SLURM_MPI_TYPE or set it to pmix" pmi2.err &&
	! grep -e "--mpi=pmi2" pmi2.err
'
test_expect_success 'a --ddp the command-line scan misses: the error says so, not --mpi' '
	test_must_fail ddp_srun --lab --ddp=host -N1 true 2>missed.err &&
	cat missed.err &&
	grep "uses the cluster.s MpiDefault (none): the plugin did not find --ddp in srun.s command line before srun parsed it (another option took it for its argument)" missed.err &&
	grep "or add --mpi=pmix" missed.err &&
	! grep -e "--mpi=none" missed.err
'
test_expect_success '... and --mpi=pmix is the way out' '
	ddp_srun --lab --mpi=pmix --ddp=host -N1 "$DDP_PROGS/rankview" RANK DDP_BACKEND >missed.out &&
	echo "0: RANK=0 DDP_BACKEND=host" >missed.expected &&
	test_cmp missed.expected missed.out
'
# probe.sh OUT: what a job script runs: one step of pmix_probe, RANK first.
test_expect_success 'a job script that probes PMIx from a step' '
	cat >probe.sh <<-EOF &&
	#!/bin/sh
	srun sh -c "\"$DDP_PROGS/pmix_probe\" | sed \"s/^/RANK=\\\$RANK /\"" >"\$1"
	EOF
	chmod +x probe.sh &&
	cat probe.sh
'
test_expect_success 'sbatch --ddp: srun inside gets PMIx without --mpi' '
	timeout 60 sbatch --wait --ddp=host -N2 -n3 -o job.out probe.sh job.probe &&
	cat job.out &&
	check_probe job.probe 3
'
test_expect_success 'salloc --ddp: srun inside gets ddp and PMIx too' '
	timeout 60 salloc --ddp=host -N2 -n2 ./probe.sh salloc.probe &&
	check_probe salloc.probe 2
'
test_done
