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
#   debian13   the same suite built and run inside a Debian 13 root file
#              system (Slurm 24.11, PMIx 5, Open MPI 5; contrib/debian13.sh),
#              less the few tests that use neither Slurm nor PMIx, and
#              the PyTorch example's (no PyTorch in that root)
#   packaging  make distcheck, rpmbuild -ta, the Debian packages, a
#              pkg-config user program against an installed copy
#              (contrib/ci-packaging.sh --deb)
#   variants   configure --without-nccl, and as on a machine without CUDA
#              (--with-cuda pointing nowhere): both must build warning-free
#              with the host backend only
#   extra      the suite again under ASan+UBSan, valgrind on the unit tests,
#              cppcheck and gcc -fanalyzer, short libFuzzer runs
#              (contrib/ci-extra.sh)
# Each suite's summary line names the Slurm and PMIx it ran against and
# prove's counts.  `contrib/check.sh --quick` runs the suite stage only.
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
# PyTorch (python3-torch, optional in deps.sh) installed: the PyTorch
# example's test (t0730) must run, not skip.
if dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q 'install ok installed'; then
    export DDP_REQUIRE_TORCH=1
else
    echo "== check: no python3-torch: t0730-python-torch.t will skip"
fi

# However the run ends, stop the shared test cluster if one is still up.
stop_cluster () {
    local state=$build/tests/.cluster
    if [ -f "$state" ]; then
        "$top/tests/cluster/ddp-test-cluster" stop "$(cat "$state")" || true
        rm -f "$state" "$state.etc"
    fi
}
trap stop_cluster EXIT

# versions: what this machine's suite runs against, in one line.
versions () {
    printf 'Debian %s, Slurm %s, PMIx %s, Open MPI %s' "$(cat /etc/debian_version)" \
        "$(dpkg-query -W -f='${Version}' slurm-wlm 2>/dev/null)" \
        "$(dpkg-query -W -f='${Version}' libpmix-dev 2>/dev/null)" \
        "$(dpkg-query -W -f='${Version}' openmpi-bin 2>/dev/null)"
}

# tap_summary LOG: prove's closing lines (the counts and the verdict).
tap_summary () {
    grep -E '^(Files=|Result:|Failed [0-9]+/)' "$1" | tr '\n' ' '
}

echo "== check: tests ($(versions))"
cd "$top"
start=$(date +%s)
status=0
ddp_prove "$build" -v --timer 2>&1 | tee "$build/suite.log" || status=1
stop_cluster
echo "== check: suite took $(( $(date +%s) - start )) s"
echo "== check: suite ($(versions)): $(tap_summary "$build/suite.log")"
summary="suite:$([ $status = 0 ] && echo PASS || echo FAIL)"
digest_logs="$build/suite.log"

if [ "${1:-}" != --quick ]; then
    # The same suite against Debian 13's Slurm 24.11 and PMIx 5, in a root
    # file system of its own (contrib/debian13.sh), less the tests that use
    # neither Slurm nor PMIx (the local launcher, the NCCL stand-in, the
    # Python binding, the man pages), which the first suite ran, and the
    # PyTorch example's (the Debian 13 root has no PyTorch): check.sh must
    # stay under 45 minutes on a 2-core machine.
    start=$(date +%s)
    log=$top/build-debian13.log
    d13_skip="t0245-local-launcher.t t0246-ddp-run.t t0402-nccl-mock.t
t0404-gpu-check.t t0405-nccl-mock-faults.t t0500-doc-man.t t0720-python.t
t0730-python-torch.t"
    echo "== check: debian13: left out (no Slurm or PMIx in them; no PyTorch there):" $d13_skip
    if DDP_REQUIRE_CLUSTER=1 DDP_REQUIRE_TORCH=0 DDP_PROVE_SKIP="$(echo $d13_skip)" \
       "$top/contrib/debian13.sh" check 2>&1 | tee "$log"; then
        r=PASS; else r=FAIL; status=1; fi
    echo "== check: debian13 $r, took $(( $(date +%s) - start )) s"
    echo "== check: suite ($(grep -m1 '^== debian13: Debian' "$log" | sed 's/^== debian13: //')): $(tap_summary "$log")"
    summary="$summary debian13:$r"
    digest_logs="$digest_logs $log"
fi

if [ "${1:-}" != --quick ]; then
    # The stages below build and test their own trees; the suite's settings
    # must not leak into them (distcheck skips the cluster on purpose).
    unset DDP_REQUIRE_CLUSTER DDP_REQUIRE_TORCH DDP_BUILD_DIR DDP_SRC_DIR
    start=$(date +%s)
    if ddp_install_deps rpm dpkg-dev debhelper dh-python \
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
    digest_logs="$digest_logs $top/build-extra-logs/san-prove.out"
fi
# What failed, last, where a CI page that shows only the end of the output
# still has it (the suites' own output scrolls away: issue ci of 7167191).
if [ $status != 0 ]; then
    for log in $digest_logs; do
        [ ! -f "$log" ] || ddp_tap_digest "$log" 300
    done
fi
echo "== check: $summary"
exit $status
