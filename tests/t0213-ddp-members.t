#!/bin/sh
test_description='libddp groups made by their members only
(ddp_comm_create_group) under srun: both halves of the world made at once
by each half alone, a group of one, groups inside a split group (through
files and through that group'"'"'s own all-gather), lists that disagree,
an all-gather out of order, newcomm NULL on one member, and a member that
never comes'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require

DDP_SRUN_TIMEOUT=120
MEMBERS_PROG=$DDP_PROGS/ddp_members

# run_members NAME NTASKS SRUN-ARGS...: ddp_members check with a fresh
# directory for its all-gathers; every task reports 0 failed.
run_members () {
	name=$1 n=$2; shift 2
	mkdir -p "$PWD/$name.d" &&
	chmod 1777 "$PWD/$name.d" &&
	ddp_srun --mpi=pmix "$@" "$MEMBERS_PROG" check "$PWD/$name.d" \
		>"$name.out" 2>"$name.err"
	rc=$?
	cat "$name.out" "$name.err"
	test $rc = 0 &&
	test "$(grep -c "^ddp_members rank .*/$n: [0-9]* checks, 0 failed" "$name.out")" = "$n"
}

test_expect_success '-N1 -n1: a world of one' '
	run_members n1 1 -N1 -n1
'
test_expect_success '-N1 -n4: members within one node' '
	run_members n4 4 -N1 -n4
'
test_expect_success '-N2 -n4: members across two nodes' '
	run_members n2x4 4 -N2 -n4
'
test_expect_success '-N2 -n3: uneven nodes' '
	run_members n2x3 3 -N2 -n3
'
test_expect_success '-N3 -n6: three nodes' '
	run_members n3x6 6 -N3 -n6
'
test_expect_success 'DDP_CHECK=1: members-only groups need no vote of the parent' '
	run_members vote 4 -N2 -n4 --export=ALL,DDP_CHECK=1
'
test_expect_success 'a member that never comes: the other fails when its all-gather gives up, naming the all-gather' '
	mkdir -p "$PWD/absent.d" && chmod 1777 "$PWD/absent.d" &&
	ddp_srun --mpi=pmix -N2 -n2 "$MEMBERS_PROG" absent "$PWD/absent.d" \
		>absent.out 2>absent.err;
	cat absent.out absent.err;
	grep "^rank 0: create failed after" absent.out >line &&
	grep -q "the caller.s all-gather failed on this rank" line &&
	awk "{ s = \$6 + 0 } END { exit !(s >= 2.9 && s < 10) }" line
'
test_expect_success 'a member killed: the group'"'"'s others fail their next call naming it within DDP_TIMEOUT + 1 s' '
	mkdir -p "$PWD/kill.d" && chmod 1777 "$PWD/kill.d" &&
	ddp_srun --mpi=pmix -N2 -n3 --export=ALL,DDP_TIMEOUT=3 "$MEMBERS_PROG" \
		kill "$PWD/kill.d" >kill.out 2>kill.err;
	cat kill.out kill.err;
	grep "^rank [01]: call 20 failed after" kill.out >failed &&
	test $(wc -l <failed) = 2 &&
	test $(grep -c "in group [0-9]* (its ranks 0..2 are world ranks 2,1,0): rank 0 died" failed) = 2 &&
	sed -n "s/.* after \([0-9.]*\) s.*/\1/p" failed >times &&
	awk "\$1 > 4.0 { bad = 1 } END { exit bad }" times
'
test_done
