#!/bin/sh
test_description='libddp: memory of the tasks and of slurmstepd stays flat over 100k small allreduces'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

PERF=$DDP_PROGS/ddp_perf
DDP_SRUN_TIMEOUT=120
# Growth allowed per rank over 100k collectives (KiB): noise, not a leak
# (a leak of even 8 bytes per call would be 800 KiB).
MAX_GROWTH=${DDP_MAX_RSS_GROWTH_KB:-256}
# Under AddressSanitizer (a sanitizer build's suite sets ASAN_OPTIONS)
# with detect_stack_use_after_return (on by default in Debian 13's gcc 14;
# Debian 12's sanitizer runs passed this test as it was) a function's
# locals live on a "fake stack"
# ASan maps and touches a page at a time: RSS grew 0.9-2.8 MiB over 100k
# allreduces so, 0-8 KiB with it off (both measured on Debian 13, PMIx 5).
# That memory is ASan's, not held by libddp; leaks are LeakSanitizer's, at
# exit.
if test -n "${ASAN_OPTIONS:-}"; then
	ASAN_OPTIONS="$ASAN_OPTIONS:detect_stack_use_after_return=0"
	export ASAN_OPTIONS
fi

check_growth () {
	cat "$1" &&
	test $(grep -c " rss_growth_kb=" "$1") = $2 &&
	sed -n "s/.* rss_growth_kb=\(-*[0-9]*\).*/\1/p" "$1" | while read g; do
		test "$g" -le "$MAX_GROWTH" || { echo "grew by $g KiB"; return 1; }
	done
}

# check_stepd_growth FILE N: N tasks reported their slurmstepd's RSS (the
# daemon that hosts the step's PMIx server), and none grew.
check_stepd_growth () {
	test $(grep -c "stepd_rss_growth_kb=" "$1") = $2 &&
	sed -n "s/.*stepd_rss_growth_kb=\(-*[0-9]*\).*/\1/p" "$1" | while read g; do
		test "$g" -le "$MAX_GROWTH" || { echo "slurmstepd grew by $g KiB"; return 1; }
	done
}

test_expect_success '-N1 -n2: RSS flat over 100000 allreduces' '
	ddp_srun --mpi=pmix -N1 -n2 "$PERF" 0 100000 >n1.out &&
	check_growth n1.out 2
'
test_expect_success '-N2 -n2: RSS flat over 100000 allreduces' '
	ddp_srun --mpi=pmix -N2 -n2 "$PERF" 0 100000 >n2.out &&
	check_growth n2.out 2
'
test_expect_success 'slurmstepd (the PMIx server) stays flat too' '
	check_stepd_growth n1.out 2 &&
	check_stepd_growth n2.out 2
'
test_expect_success 'srun --ddp=host -N2 -n4: tasks and slurmstepd flat' '
	ddp_srun --ddp=host -N2 -n4 "$PERF" 0 100000 >ddp.out &&
	check_growth ddp.out 4 &&
	check_stepd_growth ddp.out 4
'
test_done
