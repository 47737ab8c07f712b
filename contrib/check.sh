#!/bin/bash
# contrib/check.sh - install what is needed, build from a clean tree and run
# the whole test suite (unit and cluster tests) with prove.
#
# For a fresh Debian 12 machine, as root.  Exits non-zero if any test fails,
# or if the cluster tests could not run (DDP_REQUIRE_CLUSTER=1 turns their
# "skip" into a failure).  The build goes to $DDP_BUILD (default: build/ in
# the source tree), recreated on every run.
set -eu
set -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
build=${DDP_BUILD:-$top/build}
. "$top/contrib/deps.sh"

echo "== check: dependencies"
ddp_install_deps

echo "== check: build ($build)"
ddp_build "$top" "$build" --enable-werror
make -C "$build" check TESTS= >/dev/null    # builds the test programs only

export DDP_SRC_DIR=$top DDP_BUILD_DIR=$build DDP_REQUIRE_CLUSTER=1

# However the run ends, stop the shared test cluster if one is still up.
stop_cluster () {
    local state=$build/tests/.cluster
    if [ -f "$state" ]; then
        "$top/tests/cluster/ddp-test-cluster" stop "$(cat "$state")" || true
        rm -f "$state" "$state.etc"
    fi
}
trap stop_cluster EXIT

echo "== check: tests"
cd "$top"
start=$(date +%s)
# Sharness tests run verbose (-v after ::) so the log shows what the cluster
# tests ran; unit tests ignore the flag.
prove -r -v --timer "$build/tests/unit" tests :: -v
echo "== check: suite took $(( $(date +%s) - start )) s"
