#!/bin/sh
test_description='README, "Run your own program": its commands, run as written, build, install and run hello.c on a test cluster'
. "$(dirname "$0")/test-lib.sh"

# The block of README.md that follows the line naming this test is run as
# written, with bash -e, in a copy of the source tree (git's files, or the
# tree less its build directories) and HOME set to a directory of the
# test's own, so that ~/ddp is the test's.  It builds libddp a second time
# (configure, make, make install: about two minutes on two idle cores), so
# contrib/check.sh runs it beside the suites, in its background stage at
# idle priority: the timeouts below allow for that, the block has none.

why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"

# Its own directory, without the space of sharness's trash directory name
# (autotools do not take a prefix with one): the copy is W/src, HOME is
# W/home.
W=$DDP_BUILD_DIR/tests/.t0515
rm -rf "$W"

# stop_ours: stop every test cluster whose plugin lies under W (the block's,
# if it failed before its last line).
stop_ours () {
	for d in /var/tmp/ddp-cluster.*; do
		test -f "$d/plugin" && grep -q "^$W/" "$d/plugin" &&
			"$DDP_CLUSTER" stop "$d"
	done
	return 0
}

test_expect_success 'the README block is there and names this test' '
	awk "/t0515-readme-own-program.t runs this block/ { on = 1; next }
	     on && /^\`\`\`sh\$/ { inblock = 1; next }
	     inblock && /^\`\`\`\$/ { exit }
	     inblock { print }" "$DDP_SRC_DIR/README.md" >block.sh &&
	cat block.sh &&
	grep -q "^make .*make install" block.sh &&
	grep -q "^srun --ddp" block.sh
'

test_expect_success 'a copy of the source tree to run it in' '
	mkdir -p "$W/src" "$W/home" &&
	if git -C "$DDP_SRC_DIR" rev-parse --git-dir >/dev/null 2>&1; then
		git -C "$DDP_SRC_DIR" ls-files -z |
			tar -C "$DDP_SRC_DIR" --null -T - -cf - | tar -C "$W/src" -xf -
	else
		(cd "$DDP_SRC_DIR" && tar --exclude="./build*" --exclude=./.git -cf - .) |
			tar -C "$W/src" -xf -
	fi &&
	test -f "$W/src/contrib/examples/hello.c"
'

test_expect_success 'the block runs as written: one process, then 4 ranks on 2 nodes' '
	cp block.sh "$W/block.sh" &&
	(
		cd "$W/src" &&
		export HOME="$W/home" &&
		export DDP_CLUSTER_START_TIMEOUT=300 DDP_TIMEOUT=300 &&
		timeout 1800 bash -e ../block.sh
	) >run.out 2>run.err
	rc=$?
	stop_ours
	# The end of the build output, then what the programs said on stderr.
	tail -n 5 run.out
	grep "^\\[ddp rank" run.err
	grep -v "^\\[ddp rank" run.err | tail -n 20
	test $rc = 0
'

test_expect_success 'one process: rank 0 of 1' '
	grep -q "^\\[ddp rank 0/1\\] sum of the ranks: 0 (expected 0)$" run.err &&
	grep -q "^\\[ddp rank 0/1\\] my shard of 10 items: 0 1 2 3 4 5 6 7 8 9$" run.err
'

test_expect_success 'four ranks on two nodes: every one, the sum, the shards' '
	for r in 0 1 2 3; do
		grep -q "^\\[ddp rank $r/4\\] rank $r of 4, local rank [01] of 2 on node [01] of 2, backend host$" run.err ||
			return 1
	done &&
	grep -q "^\\[ddp rank 0/4\\] sum of the ranks: 6 (expected 6)$" run.err &&
	grep -q "^\\[ddp rank 0/4\\] my shard of 10 items: 0 4 8$" run.err &&
	grep -q "^\\[ddp rank 3/4\\] my shard of 10 items: 3 7 1$" run.err &&
	grep -qx "hello from a job of 4 ranks" "$W/src/hello.out"
'

test_expect_success 'the installed program needs no LD_LIBRARY_PATH; no cluster of the block is left' '
	env -u LD_LIBRARY_PATH "$W/src/hello" >again.out 2>&1 &&
	grep -q "sum of the ranks: 0" again.out &&
	for d in /var/tmp/ddp-cluster.*; do
		! { test -f "$d/plugin" && grep -q "^$W/" "$d/plugin"; } || return 1
	done
'

test_expect_success 'clean up' '
	stop_ours && rm -rf "$W"
'

test_done
