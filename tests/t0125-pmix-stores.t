#!/bin/sh
test_description='every PMIx data store the server offers: what PMIx does (pmix_ref), and libddp on top of it'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

test -x "$DDP_PROGS/pmix_ref" || {
	skip_all="tests/progs/pmix_ref not built (no PMIx)"
	test_done
}

# The stores: the server offers them in its tasks' PMIX_GDS_MODULE (PMIx
# 4.2: ds21,ds12,hash; PMIx 5: shmem2,hash).  A client restricted to one
# store also needs hash (its own data lives there): PMIX_MCA_gds=hash, or
# STORE,hash.  "default" leaves the choice to PMIx.
test_expect_success 'the server names the data stores it offers' '
	ddp_srun --mpi=pmix -N1 -n1 printenv PMIX_GDS_MODULE >offered &&
	cat offered &&
	grep -q hash offered &&
	{
		echo default
		tr , "\n" <offered | grep -vx hash | sed "s/\$/,hash/"
		echo hash
	} >stores &&
	cat stores
'
STORES=$(cat stores 2>/dev/null)

# Is a fence a barrier?  libddp's bootstrap rounds fence collecting their
# blobs and rely on it (pmix_fence.c: the ranks of n1 come 20 ms late to
# each fence, rank 3 is alone on n2; no rank may leave a fence before
# every rank entered it, by the clock they share on this machine).  A
# fence that does not collect let rank 3 go at once under Slurm 22.05 /
# PMIx 4.2.2 and 24.11 / PMIx 5, every time: its result is shown, not
# judged (libddp does not use one).
test_expect_success 'a collecting fence keeps a rank alone on its node until all came' '
	ddp_srun --mpi=pmix -N2 -n4 "$DDP_PROGS/pmix_fence" collect 20 \
		>fence.collect.out &&
	cat fence.collect.out &&
	grep -x "fence collect iters 20 early 0 margin_ms [0-9.]*" \
		fence.collect.out
'
test_expect_success 'a fence that does not collect: whether it kept that rank' '
	ddp_srun --mpi=pmix -N2 -n4 "$DDP_PROGS/pmix_fence" nocollect 20 \
		>fence.nocollect.out &&
	cat fence.nocollect.out &&
	grep -x "fence nocollect iters 20 early [0-9]* margin_ms -*[0-9.]*" \
		fence.nocollect.out
'

# gds STORE: the PMIX_MCA_gds value for STORE ("" for default).
gds () {
	case $1 in default) echo "" ;; *) echo "$1" ;; esac
}

# ref_ok OUT N WAY: the reference run of N ranks completed on every rank,
# and every get of a peer's value WAY came back right, in both rounds
# (PMIx names its status SUCCESS in 4.2, PMIX_SUCCESS in 5).
ref_ok () {
	test $(grep -c "^ref [0-9]* done\$" "$1") = "$2" &&
	test $(grep -Ec "^ref [0-9]+ peer [0-9]+ round [01] $3 (PMIX_)?SUCCESS ok" "$1") = $(( 2 * $2 * ($2 - 1) ))
}

# Under AddressSanitizer (contrib/ci-extra.sh, san): with the hash store
# alone, libpmix 4.2.2 copies the host name the server sends into a global
# of its own, in its progress thread, and never frees it (3 bytes in every
# client, pmix_ref included).  LSan's fast unwinder stops at libpmix, which
# has no frame pointers, so the hash runs unwind fully, to the
# pmix_ptl_base_process_msg frame that contrib/lsan.supp names.
ASAN_BEFORE=${ASAN_OPTIONS-}
for store in $STORES; do
	if test -n "$ASAN_BEFORE" && test "$store" = hash; then
		ASAN_OPTIONS=$ASAN_BEFORE:fast_unwind_on_malloc=0
	elif test -n "$ASAN_BEFORE"; then
		ASAN_OPTIONS=$ASAN_BEFORE
	fi
	test_expect_success "$store: a plain PMIx put/fence/get (the reference)" "
		PMIX_MCA_gds=\$(gds $store) ddp_srun --mpi=pmix -N2 -n4 \
			\"\$DDP_PROGS/pmix_ref\" >ref.$store.out &&
		cat ref.$store.out &&
		ref_ok ref.$store.out 4 plain &&
		ref_ok ref.$store.out 4 immediate &&
		ref_ok ref.$store.out 4 refresh
	"
	# Without collection a plain get of a peer's second key may fail
	# (PMIx 5 under Slurm 24.11: NOT-FOUND, then no answer), so libddp
	# asks with PMIX_GET_REFRESH_CACHE.
	# Round 1: now and then remote refreshing gets went unanswered for
	# 3 s, after a NOT-FOUND or at once: under Slurm 22.05 (ds12,hash,
	# three of some fifteen runs) and under 24.11 with PMIx 5.0.7 (hash,
	# once, 2026-11-26); round 0, which libddp's bootstrap is, never did.
	# Under 22.05 the cause was pmix_ref's last fence, which did not
	# collect and so let rank 3 leave early (above): with a collecting
	# one, 0 of 220 runs here against 5 of 120 before (2026-11-28).  Not
	# yet seen under 24.11, so still allowed.  DDP_PMIX_COLLECT=0 is for
	# diagnosis only (ddp.3).
	test_expect_success "$store: ... when the fence collects nothing, a refreshing get (libddp's way)" "
		PMIX_MCA_gds=\$(gds $store) ddp_srun --mpi=pmix -N2 -n4 \
			\"\$DDP_PROGS/pmix_ref\" --no-collect >nocollect.$store.out;
		grep -e ' peer ' -e fence nocollect.$store.out &&
		test \$(grep -c '^ref [0-9]* done\$' nocollect.$store.out) = 4 &&
		test \$(grep -Ec '^ref [0-9]+ peer [0-9]+ round 0 refresh (PMIX_)?SUCCESS ok' nocollect.$store.out) = 12 &&
		! grep ' round 1 refresh ' nocollect.$store.out |
			grep -Ev ' (PMIX_)?SUCCESS ok( after [0-9]+ NOT-FOUND)?\$| NO-ANSWER( after [0-9]+ NOT-FOUND)?\$'
	"
	test_expect_success "$store: srun --ddp=host -N2 -n4 ddp_check passes" "
		PMIX_MCA_gds=\$(gds $store) ddp_srun --ddp=host -N2 -n4 \
			\"\$DDP_PROGS/ddp_check\" -q >check.$store.out &&
		cat check.$store.out &&
		test \$(grep -c ' 0 failed in all' check.$store.out) = 4
	"
	test_expect_success "$store: ... and -N2 -n3 with DDP_PMIX_COLLECT=0 (every blob by direct modex)" "
		PMIX_MCA_gds=\$(gds $store) DDP_PMIX_COLLECT=0 ddp_srun --ddp=host \
			-N2 -n3 \"\$DDP_PROGS/ddp_check\" -q >direct.$store.out &&
		cat direct.$store.out &&
		test \$(grep -c ' 0 failed in all' direct.$store.out) = 3
	"
	test_expect_success "$store: kill -9 of a rank in a barrier loop: named in time, nothing left" "
		PMIX_MCA_gds=\$(gds $store) &&
		export PMIX_MCA_gds &&
		rel_kill_run kill.$store barrier 3 0.3 ddp_barrier;
		rc=\$?; unset PMIX_MCA_gds; test \$rc = 0
	"
done

test_expect_success 'DDP_PMIX_COLLECT takes 0 or 1 only, and says so' '
	DDP_PMIX_COLLECT=yes test_must_fail ddp_srun --ddp=host -N1 -n2 \
		"$DDP_PROGS/ddp_check" -q 2>collect.err &&
	cat collect.err &&
	grep "DDP_PMIX_COLLECT=.yes. is not 1 (fences collect the setup data: the default) or 0" collect.err
'
test_done
