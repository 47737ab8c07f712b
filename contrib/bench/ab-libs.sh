#!/bin/bash
# ab-libs.sh - two builds of libddp on the same ddp-bench, alternated: the
# cost of a change on the small rows, where a shared machine's noise is
# larger than the change (the cost of call agreement, issue 39).
#
# Usage: DDP_CLUSTER_DIR=DIR contrib/bench/ab-libs.sh OLD_LIBDIR NEW_LIBDIR
#            NODES RANKS REPS [ddp-bench options]
# OLD_LIBDIR and NEW_LIBDIR hold libddp.so.0 (a build's libjob/.libs: build
# the two commits apart, e.g. from `git archive COMMIT`); both must be
# visible on the test nodes (not under /tmp: each node has its own).
# Each repetition runs ddp-bench under srun --mpi=pmix -NNODES -nRANKS once
# with each library, old first in odd repetitions and new first in even
# ones (ABBA), by default on the 8-byte barrier and all-reduce
# (-o barrier,allreduce -s 8 -n 2000 -w 200 -M 0; more options replace
# these).  The same ddp-bench binary runs both (DDP_BENCH, default the
# build tree's; it uses only the public API): only LD_LIBRARY_PATH
# differs.  Prints a line per run (op, median, mean and fastest call in
# microseconds, the load average) and, per op and build, the median of the
# runs' medians and the mean of their fastest calls: on an overloaded
# machine the medians are scheduling, and the fastest call is what is
# left of the code's own cost.
set -u
die () { echo "ab-libs.sh: $*" >&2; exit 2; }
[ $# -ge 5 ] || die "usage: ab-libs.sh OLD_LIBDIR NEW_LIBDIR NODES RANKS REPS [ddp-bench options]"
old=$1 new=$2 nodes=$3 ranks=$4 reps=$5
shift 5
opts=("$@")
[ ${#opts[@]} -gt 0 ] || opts=(-o barrier,allreduce -s 8 -n 2000 -w 200 -M 0)
for d in "$old" "$new"; do
    [ -e "$d/libddp.so.0" ] || die "no libddp.so.0 in $d"
done
src=$(cd "$(dirname "$0")/../.." && pwd)
build=$(cd "${DDP_BUILD_DIR:-$src}" && pwd)
bench=${DDP_BENCH:-$build/contrib/bench/.libs/ddp-bench}
[ -x "$bench" ] || die "no $bench: build it, or set DDP_BENCH"
[ -n "${DDP_CLUSTER_DIR:-}" ] || die "set DDP_CLUSTER_DIR to a running test cluster"
. <("$src/tests/cluster/ddp-test-cluster" env "$DDP_CLUSTER_DIR") || die "no cluster in $DDP_CLUSTER_DIR"
work=$(mktemp -d "$build/ab-libs.XXXXXX") || die "cannot create a directory in $build"
trap 'rm -rf "$work"' EXIT

# one NAME LIBDIR REP: a run; its rows appended to $work/rows.
one () {
    local tsv=$work/$1.$3.tsv
    if ! timeout 600 srun --mpi=pmix -N"$nodes" -n"$ranks" \
            --export=ALL,LD_LIBRARY_PATH="$2",DDP_BACKEND=host \
            "$bench" "${opts[@]}" -q -t "$tsv" >/dev/null 2>"$work/err"; then
        echo "run $3 $1 failed:" >&2
        tail -n 5 "$work/err" >&2
        return 1
    fi
    awk -v v="$1" -v r="$3" -v load="$(cut -d' ' -f1 /proc/loadavg)" \
        '$1 == "ddp" && $2 != "init" && $2 !~ /^init_/ {
            printf "%s %s %s %s %s %s %s\n", r, v, $2, $5, $8, $9, $10 >> "'"$work/rows"'"
            printf "run %2d %-3s %-9s %8s B  median %10.3f  mean %10.3f  fastest %8.3f us  load %s\n",
                r, v, $2, $5, $8, $9, $10, load }' "$tsv"
}

echo "ab-libs.sh: -N$nodes -n$ranks, $reps repetitions, old $old, new $new; $(nproc) CPUs"
echo "before: $(uptime)"
fail=0
for r in $(seq 1 "$reps"); do
    if [ $((r % 2)) = 1 ]; then
        one old "$old" "$r" || fail=1; one new "$new" "$r" || fail=1
    else
        one new "$new" "$r" || fail=1; one old "$old" "$r" || fail=1
    fi
done
echo "after:  $(uptime)"
for op in $(awk '{ print $3 "/" $4 }' "$work/rows" 2>/dev/null | sort -u); do
    for v in old new; do
        awk -v v=$v -v k="$op" '$2 == v && $3 "/" $4 == k { print $5, $7 }' "$work/rows" |
            sort -g | awk -v v=$v -v k="$op" '{ m[NR] = $1; f += $2 }
                END { if (NR) printf "%-16s %s: runs %d, median of medians %.3f us, mean fastest %.3f us\n",
                    k, v, NR, (NR % 2 ? m[(NR + 1) / 2] : (m[NR / 2] + m[NR / 2 + 1]) / 2), f / NR }'
    done
done
exit $fail
