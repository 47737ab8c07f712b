#!/bin/sh
test_description='bad --ddp values and bad plugstack.conf keys are clear errors before launch'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

# with_plugstack ARGS...: a slurm.conf for srun whose plugstack.conf loads
# the plugin with ARGS (slurmstepd keeps the cluster's own).
with_plugstack () {
	sed "s|^PlugStackConfig=.*|PlugStackConfig=\"$PWD/plugstack.conf\"|" \
		"$SLURM_CONF" >slurm.conf &&
	echo "required $DDP_PLUGIN $*" >plugstack.conf
}

test_expect_success 'srun --help lists --ddp with its values' '
	srun --help >help.out 2>&1 &&
	sed -n "/--ddp=BACKEND /,/^ *$/p" help.out >help.ddp &&
	cat help.ddp &&
	tr -s " \n" "  " <help.ddp | grep -q "BACKEND (optional) is auto (the default)"
'
test_expect_success 'srun --ddp=bogus exits non-zero before launch, naming the valid values' '
	rm -f ran &&
	test_must_fail ddp_srun --ddp=bogus -N1 touch ran 2>bogus.err &&
	cat bogus.err &&
	grep "ddp: invalid --ddp value .bogus.; valid values: off, auto, host or nccl" bogus.err &&
	test ! -e ran
'
test_expect_success 'srun --ddp=nccl,host (two backends) is refused too' '
	test_must_fail ddp_srun --ddp=nccl,host -N1 true 2>two.err &&
	grep "invalid --ddp value .nccl,host." two.err
'
test_expect_success 'a newline or escape sequence in --ddp is shown escaped, on one line' '
	nl="$(printf "host\nddp: forged line\033[2J")" &&
	test_must_fail ddp_srun --ddp="$nl" -N1 true 2>nl.err &&
	cat nl.err &&
	grep -F "invalid --ddp value '"'"'host\nddp: forged line\x1b[2J'"'"'; valid values" nl.err &&
	! grep "^ddp: forged line" nl.err &&
	! grep -q "$(printf "\033")" nl.err
'
test_expect_success 'sbatch --ddp=bogus is refused at submission' '
	printf "#!/bin/sh\ntrue\n" >job.sh &&
	test_must_fail timeout 30 sbatch --ddp=bogus -o job.out job.sh 2>sbatch.err &&
	cat sbatch.err &&
	grep "ddp: invalid --ddp value .bogus." sbatch.err &&
	! grep "Submitted batch job" sbatch.err
'
test_expect_success 'salloc --ddp=bogus is refused before allocating' '
	test_must_fail timeout 30 salloc --ddp=bogus -N1 true 2>salloc.err &&
	cat salloc.err &&
	grep "ddp: invalid --ddp value .bogus." salloc.err &&
	! grep "Granted job allocation" salloc.err
'
test_expect_success 'a bogus inherited option value fails srun too' '
	test_must_fail env _SLURM_SPANK_OPTION_ddp_ddp=sometimes \
		timeout 60 srun -N1 true 2>inherited.err &&
	cat inherited.err &&
	grep "ddp: invalid --ddp value .sometimes." inherited.err &&
	test_must_fail env SLURM_SPANK__SLURM_SPANK_OPTION_ddp_ddp=often \
		timeout 60 srun -N1 true 2>user.err &&
	cat user.err &&
	grep "ddp: invalid --ddp value .often." user.err
'
test_expect_success '--ddp host (a space, not =): a warning that host is the program' '
	test_must_fail ddp_srun --ddp host -N1 2>space.err &&
	cat space.err &&
	grep "ddp: warning: .--ddp host. runs a program called .host. with --ddp=auto: srun takes the value of --ddp only after .=. (--ddp=host)" space.err
'
test_expect_success '... and no warning for a program that is not a --ddp value' '
	ddp_srun --ddp -N1 true 2>true.err &&
	! grep "ddp: warning" true.err
'
test_expect_success 'unknown plugstack.conf key: the plugin refuses to load, naming it' '
	with_plugstack bogus=1 &&
	rm -f ran &&
	test_must_fail env SLURM_CONF="$PWD/slurm.conf" \
		timeout 60 srun -N1 touch ran 2>key.err &&
	cat key.err &&
	grep "ddp: plugstack.conf: unknown key .bogus." key.err &&
	grep "refuses to load" key.err &&
	test ! -e ran
'
test_expect_success 'malformed plugstack.conf values are refused, naming the key' '
	for arg in default=sometimes bind=all port_range=9-1 port_range=0-10 \
		   torch_env=maybe default; do
		with_plugstack $arg &&
		test_must_fail env SLURM_CONF="$PWD/slurm.conf" \
			timeout 60 srun -N1 true 2>val.err &&
		key=${arg%%=*} &&
		grep "ddp: plugstack.conf: .*$key" val.err || return 1
	done
'
test_expect_success 'a good plugstack.conf line loads' '
	with_plugstack default=off bind=gpu port_range=29500-29999 torch_env=yes &&
	SLURM_CONF="$PWD/slurm.conf" timeout 60 srun -N1 true
'
test_done
