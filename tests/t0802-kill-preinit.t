#!/bin/sh
test_description='kill -9 of one rank before ddp_init completes ends the step in time, names the rank, leaves nothing'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# The victim sleeps before ddp_init(); the others are waiting in init's
# bootstrap exchange (a PMIx fence) when it is killed (after 1 s).
#
# How a survivor learns who is missing (libjob/bootstrap/bootstrap.c, rollcall.h):
# its own node's PMIx server tells it exactly which local ranks never
# committed; ranks of other nodes cannot be asked safely under Slurm 22.05
# (a direct-modex request to a node whose tasks are all gone stalls that
# node's slurmstepd for about 30 s).  So the survivors pool their nodes'
# answers through a hub on MASTER_PORT, and every one names the victim.
# Without the roll call (MASTER_PORT unset), a survivor whose node is
# complete can only name the other nodes' ranks as candidates ("among").

# in_list N LIST: LIST ("0-2,5", as libddp writes rank lists) holds N.
in_list () {
	echo "$2" | tr ',' '\n' | awk -F- -v n="$1" '
		/^[0-9]+(-[0-9]+)?$/ { hi = NF > 1 ? $2 : $1; if (n >= $1 && n <= hi) f = 1 }
		END { exit !f }'
}

# survivor_lines VICTIM: "RANK NODE LINE" for each survivor's first libddp
# error.
survivor_lines () {
	local v=$1 r rnode line
	for r in $(seq 0 $((REL_NTASKS - 1))); do
		test "$r" != "$v" || continue
		rnode=$(awk '{ print $4 }' "$REL_DIR/exit.$r" 2>/dev/null)
		line=$(grep -F "[ddp rank $r/$REL_NTASKS]" "$REL_DIR.err" | head -1)
		echo "$r ${rnode:-?} $line"
	done
}

# check_named VICTIM: every survivor, on any node, names it exactly.
check_named () {
	local v=$1 r rnode line
	survivor_lines "$v" >"$REL_DIR.lines" || return 1
	test "$(wc -l <"$REL_DIR.lines")" = $((REL_NTASKS - 1)) || return 1
	while read -r r rnode line; do
		say "rank $r on $rnode: $line"
		echo "$line" | grep -q "] error: .*: rank $v did not reach ddp_init" ||
			{ say "rank $r does not name rank $v"; return 1; }
	done <"$REL_DIR.lines"
}

# check_local VICTIM: without the roll call, survivors on the victim's node
# name it exactly ("rank V of this node"); the others say their node is
# complete and give a candidate list that holds V.  Where the launcher
# completes the fence without the victim (PMIx 5 under Slurm 24.11) a
# survivor names it exactly from the missing data ("rank V did not reach").
check_local () {
	local v=$1 vnode r rnode line
	vnode=$(awk '{ print $4 }' "$REL_DIR/pid.$v")
	test -n "$vnode" || { say "no node in pid.$v"; return 1; }
	survivor_lines "$v" >"$REL_DIR.lines" || return 1
	while read -r r rnode line; do
		say "rank $r on $rnode (victim on $vnode): $line"
		if echo "$line" | grep -q "] error: .*: rank $v did not reach ddp_init: the start-up fence .* completed without it"; then
			continue
		elif test "$rnode" = "$vnode"; then
			echo "$line" | grep -q "rank $v of this node did not reach ddp_init" ||
				return 1
		else
			echo "$line" | grep -q "every rank of this node reached ddp_init" &&
			in_list "$v" "$(echo "$line" | sed -n "s/.*among ranks* //p")" ||
				return 1
		fi
	done <"$REL_DIR.lines"
}

n=$(rel_repeats 2)
for i in $(seq 1 "$n"); do
	v=$(rel_victim "$i" 3 1)
	test_expect_success "kill -9 rank $v before init: init fails in time, nothing left (run $i of $n)" '
		rel_kill_run preinit.$i preinit $v 1 ddp_init nocheck
	'
	test_expect_success "kill -9 rank $v before init: every survivor names it (run $i of $n)" '
		REL_DIR=$PWD/preinit.'$i' &&
		check_named '$v'
	'
done

# -N2 -n4 puts ranks 0-2 on n1 and 3 on n2 here: rank 3's node is complete.
test_expect_success 'without MASTER_PORT (no roll call): init still fails in time, nothing left' '
	REL_WRAP="env -u MASTER_PORT" &&
	rel_start preinit.local preinit 1 -N2 -n4 &&
	REL_WRAP= &&
	rel_kill 1 1 &&
	rel_judge 1 ddp_init nocheck
'
test_expect_success 'without MASTER_PORT: its node names it, the other node names the candidates' '
	REL_DIR=$PWD/preinit.local &&
	check_local 1
'

# Two victims on different nodes (n1: 0 1, n2: 2 3): each node knows one,
# the roll call joins them.
test_expect_success 'kill -9 ranks 1 and 3 (one per node) before init: in time, nothing left' '
	rel_start preinit.two preinit 1,3 -N2 -n4 --ntasks-per-node=2 &&
	rel_kill 1 1 &&
	rel_kill 3 0 &&
	rel_judge 1,3 ddp_init nocheck
'
test_expect_success 'kill -9 ranks 1 and 3 before init: both survivors name both' '
	REL_DIR=$PWD/preinit.two &&
	for r in 0 2; do
		grep -F "[ddp rank $r/4]" "$REL_DIR.err" | head -1 |
			grep -q "] error: .*: ranks 1,3 did not reach ddp_init" ||
			{ say "rank $r does not name 1,3"; return 1; }
	done
'
test_done
