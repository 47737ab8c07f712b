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
# Other clusters (a developer's, a parallel run) may share the machine, so
# "ours" is decided by environment: daemons carry DDP_CLUSTER_MARK=DIR (and
# pass it to slurmstepd), job tasks carry SLURM_CONF=DIR/etc/slurm.conf.
test_expect_success 'no process of it is left (daemons, slurmstepd, tasks)' '
	"$DDP_CLUSTER" pids "$dir" >left &&
	test_must_be_empty left
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
