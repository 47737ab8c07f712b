#!/bin/sh
test_description='stop the shared test cluster and check nothing is left behind'
. "$(dirname "$0")/test-lib.sh"

if [ ! -f "$DDP_CLUSTER_STATE" ]; then
	skip_all="no shared cluster was started in this run"
	test_done
fi
dir=$(cat "$DDP_CLUSTER_STATE")

test_expect_success 'stop the shared cluster' '
	"$DDP_CLUSTER" stop "$dir"
'
test_expect_success 'no process of it is left' '
	test -z "$("$DDP_CLUSTER" pids "$dir")" &&
	ps -eo stat=,comm= | awk '"'"'$1 !~ /^Z/ && $2 == "slurmstepd"'"'"' >stepds &&
	test_must_be_empty stepds
'
test_expect_success 'its directory is gone and nothing is mounted from it' '
	test ! -e "$dir" &&
	! grep -F "$dir" /proc/mounts
'
test_expect_success '/etc is as it was' '
	sha256sum -c "$DDP_CLUSTER_STATE.etc"
'
test_expect_success 'forget the shared cluster' '
	rm -f "$DDP_CLUSTER_STATE" "$DDP_CLUSTER_STATE.etc"
'
test_done
