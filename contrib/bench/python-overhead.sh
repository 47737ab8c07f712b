#!/bin/sh
# python-overhead.sh BUILD [RANKS] [ITERS] - what the Python module adds to
# a barrier and to an 8-byte all-reduce over the C call: tests/progs/ddp_perf
# (C) and py-perf.py (the module: ddp.barrier(), ddp.all_reduce(1.0), and
# ddp.all_reduce() of a one-double array) run as RANKS ranks (default 2) of
# one simulated node through the local launcher (host backend, shared
# memory: the fastest path, where an overhead shows most), ITERS calls each
# (default 20000), three times in turn.  It prints the numbers; it checks
# nothing, since they depend on the machine and its load.
#
# Needs a build tree with the module (configure found Python) and its test
# programs (make check TESTS=).
set -eu
build=${1:?usage: python-overhead.sh BUILD [RANKS] [ITERS]}
ranks=${2:-2}
iters=${3:-20000}
here=$(cd "$(dirname "$0")" && pwd)
. "$build/libjob/python/build.env"
[ "$DDP_PYTHON_BUILT" = yes ] || {
    echo "python-overhead.sh: the Python module was not built: $DDP_PYTHON_WHY" >&2
    exit 1
}
run=$build/tests/progs/ddp-local-run
perf=$build/tests/progs/ddp_perf
[ -x "$run" ] && [ -x "$perf" ] || {
    echo "python-overhead.sh: build the test programs first: make -C $build check TESTS=" >&2
    exit 1
}
unset PMIX_NAMESPACE WORLD_SIZE RANK DDP_BOOTSTRAP DDP_DEBUG DDP_STRAGGLERS
export DDP_BACKEND=host
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
for round in 1 2 3; do
    "$run" -n "$ranks" -t 300 -- "$perf" "$iters" >"$tmp/c.$round"
    PYTHONPATH=$DDP_PYTHON_STAGE "$run" -n "$ranks" -t 300 -- \
        "$DDP_PYTHON" "$here/py-perf.py" "$iters" >"$tmp/py.$round"
done
echo "$ranks ranks, 1 node, host backend, $iters calls; microseconds per call,"
echo "the best of 3 runs (C: tests/progs/ddp_perf; Python: $DDP_PYTHON)"
# best NAME FILES...: the lowest "NAME  <us> us" of the files.
best () {
    name=$1; shift
    cat "$@" | awk -v n="$name" '
        { line = $0; sub(/ +[0-9.]+ us.*$/, "", line) }
        line == n { v = $(NF - 1) + 0; if (!seen || v < min) min = v; seen = 1 }
        END { if (seen) printf "%.2f", min; else printf "-" }'
}
printf '%-22s %10s %10s %10s\n' "" "C" "Python" "added"
for pair in "barrier:barrier" "allreduce 8 B:allreduce 8 B" \
            "allreduce 8 B:allreduce 8 B buffer"; do
    cname=${pair%%:*}; pname=${pair#*:}
    c=$(best "$cname" "$tmp"/c.*)
    p=$(best "$pname" "$tmp"/py.*)
    added=$(awk -v c="$c" -v p="$p" 'BEGIN { if (c == "-" || p == "-") print "-"; else printf "%.2f", p - c }')
    label=$pname
    [ "$pname" = "allreduce 8 B" ] && label="allreduce 8 B (float)"
    printf '%-22s %10s %10s %10s\n' "$label" "$c" "$p" "$added"
done
