#!/bin/sh
test_description='libddp: memory of the tasks and of slurmstepd stays flat over 100k small allreduces'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

PERF=$DDP_PROGS/ddp_perf
DDP_SRUN_TIMEOUT=120
# Growth allowed per rank over 100k collectives (KiB): noise, not a leak
# (a leak of even 8 bytes per call would be 800 KiB).
MAX_GROWTH=${DDP_MAX_RSS_GROWTH_KB:-256}
# Under AddressSanitizer (a sanitizer build's suite sets ASAN_OPTIONS) a
# freed block goes to a quarantine (256 MiB by default) instead of being
# reused, so RSS grows with every free in the process, ours or PMIx's:
# seen on Debian 13 (PMIx 5), 1.6-2.3 MiB over 100k allreduces under ASan,
# flat without it.  Without the quarantine RSS counts what is held, as in
# a plain build; leaks themselves are LeakSanitizer's, at exit.
if test -n "${ASAN_OPTIONS:-}"; then
	ASAN_OPTIONS="$ASAN_OPTIONS:quarantine_size_mb=0"
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
