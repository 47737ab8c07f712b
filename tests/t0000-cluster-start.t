#!/bin/sh
test_description='start the shared test cluster for this run'
. "$(dirname "$0")/test-lib.sh"

why=$("$DDP_CLUSTER" check) || ddp_cluster_unavailable "$why"

test_expect_success 'the plugin under test is built' '
	test -f "$DDP_PLUGIN"
'
test_expect_success 'start (or reuse) the shared cluster' '
	if dir=$(ddp_shared_cluster); then
		say "reusing the cluster in $dir"
	else
		dir=$("$DDP_CLUSTER" start) &&
		echo "$dir" >"$DDP_CLUSTER_STATE"
	fi &&
	sha256sum /etc/hosts /etc/passwd >"$DDP_CLUSTER_STATE.etc" &&
	"$DDP_CLUSTER" status "$dir"
'
test_expect_success 'it has two idle nodes with 4 GPUs each' '
	. "$(cat "$DDP_CLUSTER_STATE")/env" &&
	sinfo -h -N -o "%N %T %G" >nodes &&
	cat nodes &&
	grep -x "n1 idle gpu:4" nodes &&
	grep -x "n2 idle gpu:4" nodes
'
test_done
