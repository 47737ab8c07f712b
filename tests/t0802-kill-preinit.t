#!/bin/sh
test_description='kill -9 of one rank before ddp_init completes ends the step in time, names the rank, leaves nothing'
. "$(dirname "$0")/test-lib.sh"
ddp_cluster_require
. "$DDP_SRC_DIR/tests/reliability-lib.sh"

# The victim sleeps before ddp_init(); the others are waiting in init's
# bootstrap exchange (a PMIx fence) when it is killed (after 1 s).
#
# What a survivor can say depends on where it runs (libjob/bootstrap.c):
# its own node's PMIx server tells it exactly which local ranks never
# committed; ranks of other nodes cannot be asked safely under Slurm 22.05
# (a direct-modex request to a node whose tasks are all gone stalls that
# node's slurmstepd for about 30 s), so a survivor whose node is complete
# names the other nodes' ranks as the candidates ("among ...").

# in_list N LIST: LIST ("0-2,5", as libddp writes rank lists) holds N.
in_list () {
	echo "$2" | tr ',' '\n' | awk -F- -v n="$1" '
		/^[0-9]+(-[0-9]+)?$/ { hi = NF > 1 ? $2 : $1; if (n >= $1 && n <= hi) f = 1 }
		END { exit !f }'
}

# check_named VICTIM: every survivor on the victim's node names it exactly
# ("rank V of this node"); every survivor elsewhere says its node is complete
# and gives a candidate list that holds V.
check_named () {
	local v=$1 vnode r rnode line
	vnode=$(awk '{ print $4 }' "$REL_DIR/pid.$v")
	test -n "$vnode" || { say "no node in pid.$v"; return 1; }
	for r in $(seq 0 $((REL_NTASKS - 1))); do
		test "$r" != "$v" || continue
		rnode=$(awk '{ print $4 }' "$REL_DIR/exit.$r" 2>/dev/null)
		line=$(grep -F "[ddp rank $r/$REL_NTASKS]" "$REL_DIR.err" | head -1)
		say "rank $r on ${rnode:-?} (victim on $vnode): $line"
		if test "$rnode" = "$vnode"; then
			echo "$line" | grep -q "rank $v of this node did not reach ddp_init" ||
				return 1
		else
			echo "$line" | grep -q "every rank of this node reached ddp_init" &&
			in_list "$v" "$(echo "$line" | sed -n "s/.*among ranks* //p")" ||
				return 1
		fi
	done
}

n=$(rel_repeats 2)
for i in $(seq 1 "$n"); do
	v=$(echo "3 1" | cut -d' ' -f$(( (i - 1) % 2 + 1 )))
	test_expect_success "kill -9 rank $v before init: init fails in time, nothing left (run $i of $n)" '
		rel_start preinit.$i preinit $v -N2 -n4 &&
		rel_kill $v 1 &&
		rel_wait &&
		rel_show &&
		rel_check_bound &&
		rel_check_survivors $v ddp_init nocheck &&
		rel_check_clean
	'
	test_expect_success "kill -9 rank $v before init: its node names it, other nodes name the candidates (run $i of $n)" '
		REL_DIR=$PWD/preinit.'$i' &&
		check_named '$v'
	'
done
test_done
