#!/bin/sh
# tensor-compare.sh BUILD [ROUNDS] [SIZES] - the cost of ddp.all_reduce()
# on a torch tensor against libddp's C call and torch.distributed's gloo:
# ddp-bench -o allreduce (C, float32 SUM, out of place) and tensor-bench.py
# (the module on a float32 tensor in place, then gloo on the same tensor)
# under `srun --ddp=host -N2 -n2` (one rank on each of two nodes), ROUNDS
# times in turn (default 3); for each size the best round's median (the
# slowest rank's median call) and fastest call.  Prints one table,
# microseconds, with the module's time over C's and gloo's over the
# module's, and the load before and after (uptime): on a loaded machine
# the medians swing by several times between rounds, the fastest calls
# much less.  Checks nothing: the numbers depend on the machine.
#
# srun must point at a cluster of 2 nodes or more with the plugin, e.g.
#   tests/cluster/ddp-test-cluster start --nodes 2     # prints DIR
#   . <(tests/cluster/ddp-test-cluster env DIR)
# BUILD is a build tree with the module (configure found Python) and
# contrib/bench/ddp-bench; PY (default /usr/bin/python3, Debian's
# python3-torch) must import torch and load the module's extension suffix.
# SIZES in bytes, multiples of 4 (default 8 B to 64 MiB, x8).
set -eu
build=${1:?usage: tensor-compare.sh BUILD [ROUNDS] [SIZES]}
rounds=${2:-3}
sizes=${3:-8,64,512,4096,32768,262144,2097152,16777216,67108864}
here=$(cd "$(dirname "$0")" && pwd)
py=${PY:-/usr/bin/python3}
. "$build/libjob/python/build.env"
[ "$DDP_PYTHON_BUILT" = yes ] || {
    echo "tensor-compare.sh: the Python module was not built: $DDP_PYTHON_WHY" >&2
    exit 1
}
bench=$build/contrib/bench/ddp-bench
[ -x "$bench" ] || { echo "tensor-compare.sh: no $bench: make -C $build" >&2; exit 1; }
unset DDP_CHECK DDP_DEBUG DDP_STRAGGLERS
export DDP_BACKEND=host PYTHONPATH=$DDP_PYTHON_STAGE
srun_="srun --ddp=host -N2 -n2 --ntasks-per-node=1"
# Not /tmp: the test nodes have private ones.
tmp=$(mktemp -d "$build/tensor-compare.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
echo "load before: $(uptime)"
for r in $(seq "$rounds"); do
    $srun_ "$bench" -o allreduce -s "$sizes" -c 0 -M 0 -q -t "$tmp/c.$r" >/dev/null
    $srun_ "$py" "$here/tensor-bench.py" --sizes "$sizes" --tsv "$tmp/py.$r" >/dev/null
done
echo "load after:  $(uptime)"
echo "2 ranks on 2 nodes (srun --ddp=host -N2 -n2), float32 SUM; microseconds:"
echo "the best of $rounds rounds of the slowest rank's median call, then of its"
echo "fastest call (min)"
# C rows: impl op nranks nnodes bytes count iters time_us mean_us min_us
# ...; Python rows: impl bytes iters median_us min_us check.
cat "$tmp"/c.* | awk '$2 == "allreduce" { print "c", $5, $8, $10 }' >"$tmp/rows"
cat "$tmp"/py.* | awk '$1 != "impl" { print $1, $2, $4, $5 }' >>"$tmp/rows"
awk '
    { k = $1 " " $2; sz[$2] = 1
      if (!(k in med) || $3 < med[k]) med[k] = $3
      if (!(k in lo) || $4 < lo[k]) lo[k] = $4 }
    END {
        printf "%10s %9s %9s %9s %7s %7s | %9s %9s %9s\n", "bytes", "C", \
            "ddp.py", "gloo", "py/C", "gloo/py", "C min", "py min", "gloo min"
        n = 0; for (s in sz) list[n++] = s + 0
        for (i = 0; i < n; i++) for (j = i + 1; j < n; j++)
            if (list[j] < list[i]) { t = list[i]; list[i] = list[j]; list[j] = t }
        for (i = 0; i < n; i++) {
            s = list[i]; c = med["c " s]; p = med["py-tensor " s]; g = med["gloo " s]
            printf "%10d %9.1f %9.1f %9.1f %7.2f %7.2f | %9.1f %9.1f %9.1f\n", \
                s, c, p, g, (c > 0 ? p / c : 0), (p > 0 ? g / p : 0), \
                lo["c " s], lo["py-tensor " s], lo["gloo " s]
        }
    }' "$tmp/rows"
