# test-lib.sh - sourced first by every sharness test (tests/tNNNN-*.t).
#
# Works from `make check` (automake sets DDP_SRC_DIR and DDP_BUILD_DIR), from
# `prove -r tests` in the source tree, and for a single test run by hand.
# Sets up sharness so its scratch directories live in the build tree (never in
# /tmp: every test-cluster node has a private /tmp), then sharness sources
# sharness.d/*.sh, which holds the project's helpers.

: "${DDP_SRC_DIR:=$(cd "$(dirname "$0")/.." && pwd)}"
: "${DDP_BUILD_DIR:=$DDP_SRC_DIR}"
export DDP_SRC_DIR DDP_BUILD_DIR

SHARNESS_TEST_SRCDIR=$DDP_SRC_DIR/tests
SHARNESS_TEST_DIRECTORY=$DDP_BUILD_DIR/tests
SHARNESS_BUILD_DIRECTORY=$DDP_BUILD_DIR
export SHARNESS_TEST_SRCDIR SHARNESS_TEST_DIRECTORY SHARNESS_BUILD_DIRECTORY
mkdir -p "$SHARNESS_TEST_DIRECTORY"

for ddp_sharness in ${SHARNESS_LIB:-} /usr/share/sharness/sharness.sh \
                    /usr/local/share/sharness/sharness.sh; do
    [ -f "$ddp_sharness" ] && break
done
if [ ! -f "$ddp_sharness" ]; then
    echo "1..0 # SKIP sharness not installed (apt-get install sharness)"
    exit 0
fi
. "$ddp_sharness"

# DDP_UNIT_TESTS_ONLY=1: a package build's `make check` in CI
# (contrib/ci-packaging.sh), of sources whose sharness tests the main suite
# runs from the same commit: the compiled unit tests run, these skip.
if [ "${DDP_UNIT_TESTS_ONLY:-0}" = 1 ]; then
    skip_all="DDP_UNIT_TESTS_ONLY=1: a package build's unit tests only; contrib/check.sh's suite runs this test"
    test_done
fi
