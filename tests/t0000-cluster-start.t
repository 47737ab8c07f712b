#!/bin/sh
test_description='start the shared test cluster for this run'
. "$(dirname "$0")/test-lib.sh"

why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"

test_expect_success 'the plugin under test is built' '
	test -f "$DDP_PLUGIN"
'
# DDP_TEST_NODES nodes (default 16: what the scale tests need; the others
# ask for the nodes they use with -N, or name them with -w).
test_expect_success "start (or reuse) the shared cluster of $DDP_TEST_NODES nodes" '
	if dir=$(ddp_shared_cluster) &&
	   test "$(cat "$dir/nodes")" = "$DDP_TEST_NODES"; then
		say "reusing the cluster in $dir"
	else
		if test -n "$dir"; then
			"$DDP_CLUSTER" stop "$dir" &&
			rm -f "$DDP_CLUSTER_STATE"
		fi &&
		dir=$("$DDP_CLUSTER" start --nodes "$DDP_TEST_NODES") &&
		echo "$dir" >"$DDP_CLUSTER_STATE"
	fi &&
	sha256sum /etc/hosts /etc/passwd >"$DDP_CLUSTER_STATE.etc" &&
	"$DDP_CLUSTER" status "$dir"
'
test_expect_success "it has $DDP_TEST_NODES idle nodes with 4 GPUs each" '
	. "$(cat "$DDP_CLUSTER_STATE")/env" &&
	sinfo -h -N -o "%N %T %G" | sort >nodes &&
	cat nodes &&
	ddp_cluster_nodes | sed "s/\$/ idle gpu:4/" | sort >nodes.expected &&
	test_cmp nodes.expected nodes
'
test_done
