#!/bin/bash
# contrib/quickstart.sh - see slurm-ddp work in one command.
#
# On a fresh Debian 12 machine, as root: installs what is needed, builds,
# starts a throwaway two-node Slurm cluster on localhost with the plugin in
# its plugstack.conf, runs the project's main job under
# `srun --ddp=host -N2 --ntasks-per-node=2`, shows what it printed, and tears the cluster
# down again (also on failure or Ctrl-C).  Nothing outside the build tree and
# one /var/tmp directory is touched.
set -eu
set -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD:-$top/build}
. "$top/contrib/deps.sh"
cluster_tool=$top/tests/cluster/ddp-test-cluster

echo "== quickstart: dependencies: the build's and a test cluster's Debian packages, when missing:"
echo "  " $DDP_PKGS_BUILD $DDP_PKGS_CLUSTER
echo "  (contrib/check.sh installs the test suite's too, and PyTorch)"
DDP_DEPS_QUICKSTART=1 ddp_install_deps
echo "== quickstart: build ($build)"
ddp_build "$top" "$build"
make -C "$build" check TESTS= >/dev/null    # the example and test programs

cluster=""
teardown () {
    if [ -n "$cluster" ]; then
        echo "== quickstart: tearing the cluster down"
        "$cluster_tool" stop "$cluster"
    fi
}
trap teardown EXIT

echo "== quickstart: starting a two-node test cluster (n1, n2 on localhost)"
cluster=$(DDP_BUILD_DIR=$build "$cluster_tool" start)
. "$cluster/env"
sinfo -N -o '%N %T %G'

# Each task's view of the step first (one line per task: rank, node, the
# variables the plugin set), then the main job: the training example.
work=$build/quickstart
mkdir -p "$work" && cd "$work"
view=(srun --ddp=host -N2 -n4 --ntasks-per-node=2 -l "$build/tests/progs/rankview")
echo "== quickstart: ${view[*]}"
timeout 120 "${view[@]}" | sort -n
job=(srun --ddp=host -N2 -n4 --ntasks-per-node=2 -l "$build/contrib/examples/train")
echo "== quickstart: ${job[*]}  (in $work)"
timeout 300 "${job[@]}"
echo "== quickstart: done: 4 tasks on 2 nodes ran with ranks, ports and PMIx set by the ddp plugin"
