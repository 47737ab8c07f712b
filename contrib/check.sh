#!/bin/bash
# contrib/check.sh - install what is needed, build from a clean tree and run
# the whole test suite (unit and cluster tests) with prove.
#
# For a fresh Debian 12 machine, as root.  Exits non-zero if any test fails,
# or if the cluster tests could not run (DDP_REQUIRE_CLUSTER=1 turns their
# "skip" into a failure).  The build goes to $DDP_BUILD (default: build/ in
# the source tree), recreated on every run.
#
# Stages (all run; the exit status is non-zero if any failed):
#   suite      the unit and cluster tests of a normal build, with prove
#   packaging  make distcheck, rpmbuild -ta, the Debian packages, a
#              pkg-config user program against an installed copy
#              (contrib/ci-packaging.sh --deb)
#   variants   configure --without-nccl, and as on a machine without CUDA
#              (--with-cuda pointing nowhere): both must build warning-free
#              with the host backend only
#   extra      the suite again under ASan+UBSan, valgrind on the unit tests,
#              cppcheck and gcc -fanalyzer, short libFuzzer runs
#              (contrib/ci-extra.sh)
# `contrib/check.sh --quick` runs the suite stage only.
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
status=0
ddp_prove "$build" -v --timer || status=1
stop_cluster
echo "== check: suite took $(( $(date +%s) - start )) s"
summary="suite:$([ $status = 0 ] && echo PASS || echo FAIL)"

if [ "${1:-}" != --quick ]; then
    # The stages below build and test their own trees; the suite's settings
    # must not leak into them (distcheck skips the cluster on purpose).
    unset DDP_REQUIRE_CLUSTER DDP_BUILD_DIR DDP_SRC_DIR
    start=$(date +%s)
    if ddp_install_deps rpm dpkg-dev debhelper \
       && "$top/contrib/ci-packaging.sh" --deb "$top/build-pkg"; then r=PASS; else r=FAIL; status=1; fi
    echo "== check: packaging $r, took $(( $(date +%s) - start )) s"
    summary="$summary packaging:$r"

    start=$(date +%s)
    r=PASS
    for v in "--without-nccl" "--with-cuda=$top/build-variant-nocuda-absent"; do
        echo "== check: variant: configure $v"
        if ddp_build "$top" "$top/build-variant" --enable-werror "$v" \
           && grep -q 'Backends built: *host$' "$top/build-variant/configure.out" \
           && ! grep -q 'define HAVE_NCCL' "$top/build-variant/config.h"; then
            echo "== check: variant $v builds the host backend only"
        else
            echo "== check: variant $v FAILED"; r=FAIL; status=1
        fi
    done
    rm -rf "$top/build-variant"
    echo "== check: variants $r, took $(( $(date +%s) - start )) s"
    summary="$summary variants:$r"

    start=$(date +%s)
    if "$top/contrib/ci-extra.sh"; then r=PASS; else r=FAIL; status=1; fi
    echo "== check: extra (sanitizers, valgrind, static analysis, fuzzing) $r, took $(( $(date +%s) - start )) s"
    summary="$summary extra:$r"
fi
echo "== check: $summary"
exit $status
