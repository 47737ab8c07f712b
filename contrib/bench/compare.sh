#!/bin/bash
# compare.sh - libddp against Open MPI on the test cluster, in one command.
#
#   contrib/bench/compare.sh [--short] [--out DIR] [--report FILE] [--reps N]
#                            [--launch-reps N] [--plugstack] [--no-launch]
#                            [--sections LIST]
#
# Runs ddp-bench and mpi-bench (the same loop on MPI) under the same
# `srun --mpi=pmix` for one node with 2 ranks (-N1 -n2) and two nodes with one
# rank each (-N2 -n2); times ddp_init against MPI_Init for 2, 4, 8, 16 and 32
# ranks (counting the PMIx fences each makes); times `srun -N2 -n8 true`
# without the plugin, with it loaded and no --ddp, and with --ddp=host; then
# writes a markdown report (our time / peer time for every row, and every
# target of issue 8 with its result) to FILE and prints it.
#
#   --short        few sizes, iterations and repetitions (CI: ~1-2 minutes)
#   --out DIR      raw results (TSV and text per run; default
#                  $DDP_BUILD_DIR/contrib/bench/results); not under /tmp
#                  unless inside the build tree
#   --report FILE  the report (default DIR/report.md)
#   --reps N       repetitions of each init run (default 5; --short 1)
#   --launch-reps N  repetitions of each launch-cost run (default 20; --short 3)
#   --plugstack    let it rewrite plugstack.conf of a cluster it did not start
#                  (it restores the file at the end); without it the no-plugin
#                  launch rows of a reused cluster are skipped
#   --no-launch    skip the launch-cost rows (--sections collectives,init)
#   --sections LIST  of collectives, init, launch (default: all three)
#
# The cluster: reused when DDP_CLUSTER_DIR (or SLURM_CONF) points at a running
# one, else started (tests/cluster/ddp-test-cluster start) and stopped at exit.
# Programs: DDP_BENCH, MPI_BENCH, DDP_BENCH_FENCES (the LD_PRELOAD fence
# counter) default to the build tree DDP_BUILD_DIR (default: the source tree).
# DDP_BENCH_SOURCE names the source of the programs in the report (default:
# git describe of the tree compare.sh is in).
# MPI runs with OMPI_MCA_pml=ob1 (the PML Open MPI selects anyway here, without
# first probing UCX, ~200 ms of MPI_Init) and its shared-memory segments in the
# node's private /tmp (both test nodes share one /dev/shm and one hostname,
# and Open MPI's segment names then collide); MPI_ENV overrides both.
#
# Exit status: 0 when every run finished and every result check passed, 1
# otherwise (the report is written either way and says what failed), 2 on a
# usage error or when no cluster could be had.
set -u
set -o pipefail

PROG=compare.sh
say () { echo "$PROG: $*" >&2; }
die () { say "$*"; exit 2; }

short=0
out=
report=
reps=
launch_reps=
allow_plugstack=0
sections=collectives,init,launch
while [ $# -gt 0 ]; do
    case "$1" in
        --short) short=1 ;;
        --out) out=${2:?--out needs a directory}; shift ;;
        --report) report=${2:?--report needs a file}; shift ;;
        --reps) reps=${2:?--reps needs a number}; shift ;;
        --launch-reps) launch_reps=${2:?--launch-reps needs a number}; shift ;;
        --plugstack) allow_plugstack=1 ;;
        --no-launch) sections=collectives,init ;;
        --sections) sections=${2:?--sections needs a list}; shift ;;
        -h|--help) sed -n '2,40p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
want () { case ",$sections," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
for s in ${sections//,/ }; do
    case $s in collectives|init|launch) ;; *) die "unknown section '$s'" ;; esac
done
case "${reps:-1}${launch_reps:-1}" in *[!0-9]*) die "--reps and --launch-reps take numbers" ;; esac

src=$(cd "$(dirname "$0")/../.." && pwd)
build=${DDP_BUILD_DIR:-$src}
build=$(cd "$build" && pwd) || die "no build directory $build"
CLUSTER=${DDP_CLUSTER:-$src/tests/cluster/ddp-test-cluster}
DDP_BENCH=${DDP_BENCH:-$build/contrib/bench/ddp-bench}
MPI_BENCH=${MPI_BENCH:-$build/contrib/bench/mpi-bench}
FENCES=${DDP_BENCH_FENCES-$build/contrib/bench/.libs/ddp-bench-fences.so}
MPI_ENV=${MPI_ENV-OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_backing_directory=/tmp}
MPI_ENV_DEFAULT="OMPI_MCA_btl_vader_backing_directory=/tmp"
SCALE_RANKS="2 4 8 16 32"

if [ $short = 1 ]; then
    BENCH_ARGS="--short"
    : "${reps:=1}" "${launch_reps:=3}"
    RUN_TIMEOUT=120
    INIT_TIMEOUT=60
else
    BENCH_ARGS=""
    : "${reps:=5}" "${launch_reps:=20}"
    RUN_TIMEOUT=600
    INIT_TIMEOUT=120
fi
out=${out:-$build/contrib/bench/results}
mkdir -p "$out" || die "cannot create $out"
out=$(cd "$out" && pwd)
# Each test node has a private /tmp; only the build tree is bound back into
# it (ddp-test-cluster), so a directory under /tmp must lie inside that.
case "$out" in
    "$build"/*) ;;
    /tmp|/tmp/*) die "--out must be outside /tmp, or inside the build tree (each test node has a private /tmp)" ;;
esac
report=${report:-$out/report.md}
rm -f "$out"/ddp-* "$out"/mpi-* "$out"/init-* "$out"/launch-* "$out/results.tsv" \
      "$out/failures" "$out/retried"
[ -x "$DDP_BENCH" ] || die "ddp-bench not found at $DDP_BENCH (build first, or set DDP_BENCH)"
[ -x "$MPI_BENCH" ] || { say "mpi-bench not found at $MPI_BENCH: MPI columns will be n/a"; MPI_BENCH=; }
[ -n "$FENCES" ] && [ ! -f "$FENCES" ] && { say "no fence counter at $FENCES: fences not counted"; FENCES=; }

failures=$out/failures
: >"$failures"
fail () { echo "$*" >>"$failures"; say "FAILED: $*"; }

# ---- the cluster --------------------------------------------------------
own_cluster=0
cluster_dir=
plugstack_saved=
cleanup () {
    if [ -n "$plugstack_saved" ] && [ -n "$cluster_dir" ]; then
        cp "$plugstack_saved" "$cluster_dir/etc/plugstack.conf.new" &&
            mv -f "$cluster_dir/etc/plugstack.conf.new" "$cluster_dir/etc/plugstack.conf"
    fi
    if [ $own_cluster = 1 ]; then
        "$CLUSTER" stop "$cluster_dir" >/dev/null 2>&1 || say "could not stop $cluster_dir"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT TERM

if [ -n "${DDP_CLUSTER_DIR:-}" ] && "$CLUSTER" status "$DDP_CLUSTER_DIR" >/dev/null 2>&1; then
    cluster_dir=$DDP_CLUSTER_DIR
    . "$cluster_dir/env"
    say "reusing the test cluster in $cluster_dir"
elif [ -z "${DDP_CLUSTER_DIR:-}" ] && [ -n "${SLURM_CONF:-}" ] && scontrol ping 2>/dev/null | grep -q UP; then
    say "reusing the Slurm cluster of SLURM_CONF=$SLURM_CONF (launch rows need a test cluster)"
else
    export DDP_BUILD_DIR=$build
    cluster_dir=$("$CLUSTER" start 2>"$out/cluster-start.err") \
        || die "could not start a test cluster: $(tail -n 20 "$out/cluster-start.err")"
    own_cluster=1
    . "$cluster_dir/env"
    say "started a test cluster in $cluster_dir"
fi

# ---- helpers ------------------------------------------------------------
# tsv_get FILE OP BYTES COLUMN: a value from a bench TSV, or nothing.
tsv_get () {
    [ -f "$1" ] || return 0
    awk -F'\t' -v op="$2" -v b="$3" -v col="$4" '
        NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
        $2 == op && (b == "" || $5 == b) { print $c[col]; exit }' "$1"
}

# median: of the numbers on stdin, or nothing.
median () {
    sort -g | awk '{ v[NR] = $1 } END {
        if (NR == 0) exit
        if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}

# ratio A B [FORMAT]: A/B, or n/a.
ratio () {
    awk -v a="${1:-}" -v b="${2:-}" -v f="${3:-%.2f}" 'BEGIN {
        if (a == "" || b == "" || a == "n/a" || b == "n/a" || b + 0 == 0) print "n/a"
        else printf f "\n", a / b }'
}

# run_bench TAG IMPL NODES RANKS ARGS...: one srun of ddp-bench or mpi-bench,
# TSV in TAG.tsv, table in TAG.txt, stderr in TAG.err.
run_bench () {
    local tag=$1 impl=$2 nodes=$3 ranks=$4 prog env rc try why limit=$RUN_TIMEOUT
    shift 4
    case " $* " in *" --init-only "*) limit=$INIT_TIMEOUT ;; esac
    case $impl in
        ddp) prog=$DDP_BENCH; env="DDP_BACKEND=host" ;;
        mpi) prog=$MPI_BENCH; env=$MPI_ENV ;;
        mpidefault) prog=$MPI_BENCH; env=$MPI_ENV_DEFAULT ;;
    esac
    [ -n "$prog" ] || return 0
    [ -n "$FENCES" ] && env="$env LD_PRELOAD=$FENCES"
    # Under the sanitizer suite (contrib/ci-extra.sh sets ASAN_OPTIONS with
    # a log_path), the peer's reports go to its stderr instead, so that a
    # crash inside Open MPI is retried and reported here like any other of
    # its failures; reports of ddp-bench keep going to ci-extra's files.
    case $impl:${ASAN_OPTIONS:-} in
        mpi*:?*) env="$env ASAN_OPTIONS=$ASAN_OPTIONS:log_path=stderr" ;;
    esac
    for try in 1 2 3; do
        rm -f "$out/$tag.tsv"
        # shellcheck disable=SC2086
        timeout --kill-after=5 "$limit" srun --mpi=pmix -N"$nodes" -n"$ranks" \
            env $env "$prog" --tsv "$out/$tag.tsv" "$@" \
            >"$out/$tag.txt" 2>"$out/$tag.err"
        rc=$?
        [ $rc = 0 ] && break
        why="$tag ($impl -N$nodes -n$ranks $*): exit $rc; $(grep -v '^\s*$' "$out/$tag.err" | tail -n 3 | tr '\n' ' ')"
        # A run is tried three times: Open MPI's shared-memory setup fails
        # now and then on this two-nodes-on-one-host cluster (measured: a
        # SEGV after "open(2) ... No such file or directory" in 1 of 20
        # MPI_Init runs at -N2 -n8, 5 of 15 at -N2 -n16); every retry is
        # reported.
        if [ $try -lt 3 ]; then
            echo "$why" >>"$out/retried"
            say "retrying: $why"
            cp "$out/$tag.err" "$out/$tag.err.$try"
        else
            fail "$why"
        fi
    done
    return 0
}

# ---- 1. collectives: -N1 -n2 and -N2 -n2 ---------------------------------
load_start=$(uptime)
t_start=$(date +%s)
want collectives && for cfg in N1n2 N2n2; do
    nodes=${cfg:1:1}
    for impl in ddp mpi; do
        say "collectives $impl -N$nodes -n2"
        # shellcheck disable=SC2086
        run_bench "$impl-$cfg" $impl "$nodes" 2 $BENCH_ARGS
    done
done

# ---- 2. init scaling -----------------------------------------------------
want init && for n in $SCALE_RANKS; do
    for rep in $(seq 1 "$reps"); do
        for impl in ddp mpi; do
            say "init $impl -N2 -n$n ($rep/$reps)"
            run_bench "init-$impl-$n-$rep" $impl 2 "$n" --init-only
        done
    done
done
if want init; then
    for rep in $(seq 1 "$reps"); do
        run_bench "init-mpidefault-2-$rep" mpidefault 2 2 --init-only
    done
    # ddp_init's phases, as the library logs them with DDP_DEBUG.
    DDP_DEBUG=1 run_bench "init-ddp-debug" ddp 2 2 --init-only
fi

# ---- 3. plugin launch cost -------------------------------------------------
launch_note=
LAUNCH_CFGS=
if ! want launch; then
    launch_note="skipped (--sections $sections)"
elif [ -z "$cluster_dir" ]; then
    launch_note="skipped: not a test cluster (no DDP_CLUSTER_DIR)"
else
    plugin=$(cat "$cluster_dir/plugin" 2>/dev/null)
    if [ $own_cluster = 1 ] || [ $allow_plugstack = 1 ]; then
        plugstack_saved=$out/plugstack.conf.saved
        cp "$cluster_dir/etc/plugstack.conf" "$plugstack_saved"
        LAUNCH_CFGS="none none-pmix"
        [ -n "$plugin" ] && LAUNCH_CFGS="$LAUNCH_CFGS plugin plugin-ddp"
        [ -n "$plugin" ] || launch_note="the cluster has no plugin (DDP_PLUGIN was empty): plugin rows skipped"
    elif grep -q . "$cluster_dir/etc/plugstack.conf"; then
        LAUNCH_CFGS="plugin plugin-ddp"
        launch_note="reused cluster: no-plugin rows skipped (pass --plugstack to allow rewriting plugstack.conf)"
    else
        LAUNCH_CFGS="none none-pmix"
        launch_note="reused cluster without the plugin: plugin rows skipped"
    fi
fi

# launch_once CFG: time one `srun -N2 -n8 true` in CFG; prints ms.
launch_once () {
    local cfg=$1 args="" s e
    case $cfg in
        none|none-pmix) [ -n "$plugstack_saved" ] && "$CLUSTER" plugstack "$cluster_dir" --none ;;
        plugin|plugin-ddp) [ -n "$plugstack_saved" ] && "$CLUSTER" plugstack "$cluster_dir" ;;
    esac
    case $cfg in
        none-pmix) args="--mpi=pmix" ;;
        plugin-ddp) args="--ddp=host" ;;
    esac
    s=$EPOCHREALTIME
    # shellcheck disable=SC2086
    timeout --kill-after=5 60 srun $args -N2 -n8 true >/dev/null 2>>"$out/launch-$cfg.err" || return 1
    e=$EPOCHREALTIME
    awk -v s="$s" -v e="$e" 'BEGIN { printf "%.3f\n", (e - s) * 1000 }'
}

ok_cfgs=
for cfg in $LAUNCH_CFGS; do
    : >"$out/launch-$cfg.txt"
    if launch_once "$cfg" >/dev/null; then       # warm-up, and does it work?
        ok_cfgs="$ok_cfgs $cfg"
    else
        fail "launch $cfg: srun failed: $(tail -n 2 "$out/launch-$cfg.err" | tr '\n' ' ')"
    fi
done
for rep in $(seq 1 "$launch_reps"); do
    [ -n "$ok_cfgs" ] && say "launch cost round $rep/$launch_reps"
    for cfg in $ok_cfgs; do          # round-robin, so drift hits all alike
        launch_once "$cfg" >>"$out/launch-$cfg.txt" || fail "launch $cfg: srun failed in round $rep"
    done
done
if [ -n "$plugstack_saved" ]; then
    cp "$plugstack_saved" "$cluster_dir/etc/plugstack.conf.new" &&
        mv -f "$cluster_dir/etc/plugstack.conf.new" "$cluster_dir/etc/plugstack.conf"
    plugstack_saved=
fi
load_end=$(uptime)
t_end=$(date +%s)

# ---- the report ----------------------------------------------------------
# All TSV rows in one file, with the run's name first.
{
    printf 'run\timpl\top\tnranks\tnnodes\tbytes\tcount\titers\ttime_us\tmean_us\tmin_us\talgbw_GBps\tbusbw_GBps\tcheck\n'
    for f in "$out"/*.tsv; do
        [ -f "$f" ] && [ "$(basename "$f")" != results.tsv ] || continue
        awk -v run="$(basename "$f" .tsv)" 'NR > 1 { print run "\t" $0 }' "$f"
    done
} >"$out/results.tsv.new" && mv -f "$out/results.tsv.new" "$out/results.tsv"

# collective_table CFG: the markdown rows for one configuration.
collective_table () {
    local d="$out/ddp-$1.tsv" m="$out/mpi-$1.tsv" first
    first=$d; [ -f "$first" ] || first=$m
    [ -f "$first" ] || { echo "| (no results: both runs failed) | | | | | | | | |"; return; }
    awk -F'\t' -v dfile="$d" -v mfile="$m" '
        function load(file, t, bw, ck,   line, n, f) {
            while ((getline line < file) > 0) {
                n = split(line, f, "\t")
                if (f[2] == "op") continue
                t[f[2] " " f[5]] = f[8]; bw[f[2] " " f[5]] = f[12]; ck[f[2] " " f[5]] = f[13]
            }
            close(file)
        }
        function r(a, b, fmt) { return (a == "" || b == "" || b + 0 == 0) ? "n/a" : sprintf(fmt, a / b) }
        function v(x) { return x == "" ? "n/a" : x }
        BEGIN { load(dfile, dt, dbw, dck); load(mfile, mt, mbw, mck) }
        NR > 1 && $2 !~ /^(init|rss)/ {
            k = $2 " " $5
            bwr = ($2 == "barrier") ? "" : r(dbw[k], mbw[k], "%.2f")
            printf "| %s | %s | %s | %s | %s | %s | %s | %s | %s / %s |\n", $2, $5,
                v(dt[k]), v(mt[k]), r(dt[k], mt[k], "%.2f"),
                ($2 == "barrier") ? "" : v(dbw[k]), ($2 == "barrier") ? "" : v(mbw[k]),
                bwr, v(dck[k]), v(mck[k])
        }' "$first"
}

init_median () {   # IMPL N [OP]: median over reps of the slowest rank's init
    local f           # (or of OP's time, e.g. init_pmix_init), ms
    for f in "$out"/init-"$1"-"$2"-*.tsv; do
        [ -f "$f" ] && tsv_get "$f" "${3:-init}" "" time_us
    done | awk '$1 >= 0' | median | awk '{ printf "%.2f\n", $1 / 1000 }'
}
init_fences () {   # IMPL N: fences of init (max over reps)
    local f
    for f in "$out"/init-"$1"-"$2"-*.tsv; do
        [ -f "$f" ] && tsv_get "$f" init_fences "" count
    done | sort -g | tail -n 1
}
# init_phases: "| phase | ms |" rows from the DDP_DEBUG lines
# "init: bootstrap 34.6 ms, backend setup 1.5 ms, ..., total 36.5 ms",
# the largest value over the ranks for each phase, in the log's order.
init_phases () {
    [ -f "$out/init-ddp-debug.err" ] || return 0
    grep -E 'init: [a-z ]+ [0-9.]+ ms' "$out/init-ddp-debug.err" |
    sed 's/.*init: //' | awk -F', ' '
        { for (i = 1; i <= NF; i++) {
              if (!match($i, /^[a-zA-Z][a-zA-Z _-]* [0-9.]+ ms$/)) continue
              name = $i; sub(/ [0-9.]+ ms$/, "", name)
              v = $i; sub(/ ms$/, "", v); sub(/.* /, "", v)
              if (!(name in max)) order[++n] = name
              if (!(name in max) || v + 0 > max[name]) max[name] = v + 0
          } }
        END { for (i = 1; i <= n; i++) printf "| %s | %.3f |\n", order[i], max[order[i]] }'
}
launch_median () { [ -s "$out/launch-$1.txt" ] && median <"$out/launch-$1.txt"; }

# Targets: value and verdict.  verdict VALUE OP LIMIT -> yes / NO / n/a
verdict () {
    awk -v v="${1:-}" -v op="$2" -v l="$3" 'BEGIN {
        if (v == "" || v == "n/a") { print "n/a"; exit }
        ok = (op == "<=") ? (v + 0 <= l + 0) : (v + 0 >= l + 0)
        print ok ? "yes" : "**NO**" }'
}
cell () { tsv_get "$out/$1.tsv" "$2" "$3" "$4"; }
largest_allreduce () { awk -F'\t' '$2 == "allreduce" { b = $5 } END { print b }' "$out/mpi-N2n2.tsv" "$out/ddp-N2n2.tsv" 2>/dev/null; }

{
    echo "# libddp against Open MPI: benchmark report"
    echo
    echo "- Date: $(date -u '+%Y-%m-%d %H:%M UTC') ($([ $short = 1 ] && echo short || echo full) mode, $((t_end - t_start)) s)"
    echo "- Programs: $build (source: ${DDP_BENCH_SOURCE:-$(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)})"
    echo "- Machine: $(nproc) CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)"
    echo "- Cluster: $(sinfo -h -N -o %N 2>/dev/null | sort -u | wc -l) slurmd (16 CPUs each; each run uses one or two) on this one host, $(srun --version 2>/dev/null); $(ompi_info --version 2>/dev/null | head -n 1 || echo 'Open MPI: not found')"
    echo "- Load at start: \`${load_start##*load average: }\`; at end: \`${load_end##*load average: }\` (1, 5, 15 min)"
    echo "- Times: per-call median over the iterations, slowest rank; ratio = ddp / MPI"
    echo "  (time: lower is better; bandwidth: higher is better).  Raw data: \`$out/results.tsv\`."
    echo
    for cfg in N1n2 N2n2; do
        case $cfg in
            N1n2) echo "## Collectives: one node, 2 ranks (-N1 -n2)" ;;
            N2n2) echo "## Collectives: two nodes, 1 rank each (-N2 -n2)" ;;
        esac
        echo
        echo "| op | bytes | ddp us | MPI us | time ratio | ddp busbw GB/s | MPI busbw GB/s | bw ratio | checks ddp / MPI |"
        echo "|---|---:|---:|---:|---:|---:|---:|---:|---|"
        collective_table $cfg
        echo
    done
    echo "## Init: ddp_init against MPI_Init (-N2, ranks spread over both nodes)"
    echo
    echo "Slowest rank's init time, median of $reps run(s).  PMIx fences and the time"
    echo "inside PMIx_Init (slowest rank; part of either init) are measured by"
    echo "ddp-bench-fences.so (LD_PRELOAD)."
    echo
    echo "| ranks | ddp_init ms | MPI_Init ms | ratio | ddp fences | MPI fences | PMIx_Init in ddp_init ms | PMIx_Init in MPI_Init ms |"
    echo "|---:|---:|---:|---:|---:|---:|---:|---:|"
    for n in $SCALE_RANKS; do
        d=$(init_median ddp "$n"); m=$(init_median mpi "$n")
        echo "| $n | ${d:-n/a} | ${m:-n/a} | $(ratio "$d" "$m") | $(init_fences ddp "$n" | sed 's/^-1$/n\/a/') | $(init_fences mpi "$n" | sed 's/^-1$/n\/a/') | $(init_median ddp "$n" init_pmix_init | grep . || echo n/a) | $(init_median mpi "$n" init_pmix_init | grep . || echo n/a) |"
    done
    md=$(init_median mpidefault 2)
    echo
    echo "MPI_Init with Debian's defaults (UCX probed first), 2 ranks: ${md:-n/a} ms."
    echo
    echo "ddp_init phases (DDP_DEBUG=1, -N2 -n2; slowest rank per phase):"
    echo
    phases=$(init_phases)
    if [ -n "$phases" ]; then
        echo "| phase | ms |"
        echo "|---|---:|"
        echo "$phases"
    else
        echo "(no phase timings found in the DDP_DEBUG log)"
    fi
    echo
    echo "The log:"
    echo
    echo '```'
    grep -v '^\s*$' "$out/init-ddp-debug.err" 2>/dev/null | head -n 40
    echo '```'
    echo
    echo "## Launch cost: \`srun -N2 -n8 true\`"
    echo
    [ -n "$launch_note" ] && { echo "$launch_note"; echo; }
    base=$(launch_median none)
    echo "| configuration | median ms | runs | ratio to no plugin |"
    echo "|---|---:|---:|---:|"
    for cfg in none none-pmix plugin plugin-ddp; do
        case $cfg in
            none) label="no plugin" ;;
            none-pmix) label="no plugin, --mpi=pmix (reference)" ;;
            plugin) label="plugin loaded, no --ddp" ;;
            plugin-ddp) label="plugin loaded, --ddp=host" ;;
        esac
        v=$(launch_median $cfg)
        runs=$(grep -c . "$out/launch-$cfg.txt" 2>/dev/null)
        echo "| $label | ${v:-n/a} | ${runs:-0} | $(ratio "$v" "$base" %.3f) |"
    done
    echo
    echo "## Memory (VmRSS, max over ranks)"
    echo
    echo "| run | RSS added by init KiB | RSS after 1000 allreduces KiB | growth KiB | over N 8-byte allreduces |"
    echo "|---|---:|---:|---:|---:|"
    for t in ddp-N1n2 ddp-N2n2 mpi-N1n2 mpi-N2n2; do
        [ -f "$out/$t.tsv" ] || continue
        echo "| $t | $(cell "$t" rss_init "" bytes | awk '{ printf "%.0f", $1 / 1024 }') | $(cell "$t" rss_base "" bytes | awk '{ printf "%.0f", $1 / 1024 }') | $(cell "$t" rss_growth "" bytes | awk '{ printf "%.0f", $1 / 1024 }') | $(cell "$t" rss_growth "" count) |"
    done
    echo
    echo "## Targets (issue 8)"
    echo
    big=$(largest_allreduce)
    echo "| target | goal | measured | met |"
    echo "|---|---|---:|---|"
    v=$(ratio "$(cell ddp-N1n2 barrier 0 time_us)" "$(cell mpi-N1n2 barrier 0 time_us)")
    echo "| 1 node: barrier time ddp/MPI | <= 1.0 | $v | $(verdict "$v" '<=' 1.0) |"
    v=$(ratio "$(cell ddp-N1n2 allreduce 8 time_us)" "$(cell mpi-N1n2 allreduce 8 time_us)")
    echo "| 1 node: 8 B allreduce time ddp/MPI | <= 1.0 | $v | $(verdict "$v" '<=' 1.0) |"
    v=$(ratio "$(cell ddp-N1n2 allreduce 1048576 busbw_GBps)" "$(cell mpi-N1n2 allreduce 1048576 busbw_GBps)")
    echo "| 1 node: 1 MiB allreduce bandwidth ddp/MPI | >= 1.0 | $v | $(verdict "$v" '>=' 1.0) |"
    v=$(ratio "$(cell ddp-N2n2 barrier 0 time_us)" "$(cell mpi-N2n2 barrier 0 time_us)")
    echo "| 2 nodes: barrier time ddp/MPI | <= 1.5 | $v | $(verdict "$v" '<=' 1.5) |"
    v=$(ratio "$(cell ddp-N2n2 allreduce 8 time_us)" "$(cell mpi-N2n2 allreduce 8 time_us)")
    echo "| 2 nodes: 8 B allreduce time ddp/MPI | <= 1.5 | $v | $(verdict "$v" '<=' 1.5) |"
    v=$(ratio "$(cell ddp-N2n2 allreduce "$big" busbw_GBps)" "$(cell mpi-N2n2 allreduce "$big" busbw_GBps)")
    echo "| 2 nodes: ${big:-largest} B allreduce bandwidth ddp/MPI | >= 1.0 | $v | $(verdict "$v" '>=' 1.0) |"
    v=$(ratio "$(init_median ddp 2)" "$(init_median mpi 2)")
    echo "| ddp_init / MPI_Init, 2 ranks | <= 0.5 | $v | $(verdict "$v" '<=' 0.5) |"
    worst=
    for n in $SCALE_RANKS; do
        r=$(ratio "$(init_median ddp "$n")" "$(init_median mpi "$n")")
        [ "$r" = n/a ] && continue
        worst=$(printf '%s\n%s\n' "$worst" "$r" | grep . | sort -g | tail -n 1)
    done
    echo "| ddp_init / MPI_Init, worst of 2..32 ranks | <= 0.5 | ${worst:-n/a} | $(verdict "$worst" '<=' 0.5) |"
    fences=$(for n in $SCALE_RANKS; do init_fences ddp "$n"; done | sort -u | tr '\n' ' ' | sed 's/ $//')
    fv=n/a
    # Two: the backend choice every rank agrees on (libjob/core/choice.h),
    # then the backend's own set-up exchange.
    case "$fences" in "") ;; -1) fences="not counted" ;; 2) fv=yes ;; *) fv="**NO**" ;; esac
    echo "| PMIx fences in ddp_init, 2..32 ranks | 2 | ${fences:-n/a} | $fv |"
    v=$(ratio "$(launch_median plugin)" "$base" %.3f)
    echo "| plugin loaded, no --ddp: launch ratio | <= 1.02 | $v | $(verdict "$v" '<=' 1.02) |"
    v=$(ratio "$(launch_median plugin-ddp)" "$base" %.3f)
    echo "| plugin, --ddp=host: launch ratio | <= 1.05 | $v | $(verdict "$v" '<=' 1.05) |"
    g=$(cell ddp-N2n2 rss_growth "" bytes | awk '{ printf "%.0f", $1 / 1024 }')
    b=$(cell ddp-N2n2 rss_base "" bytes)
    gv=n/a
    [ -n "$g" ] && gv=$(awk -v g="$g" -v b="${b:-0}" 'BEGIN { print (g <= 64 || g * 1024 <= b / 100) ? "yes" : "**NO**" }')
    echo "| ddp RSS growth over $(cell ddp-N2n2 rss_growth "" count) allreduces (-N2 -n2) | flat (<= 64 KiB or 1%) | ${g:-n/a} KiB | $gv |"
    echo "| NCCL: ddp within 2% / 2 us of raw NCCL | | n/a | n/a (no GPU on this machine) |"
    echo
    echo "## Result checks and failures"
    echo
    nfail=$(awk -F'\t' '$14 ~ /^FAIL/' "$out/results.tsv" | wc -l)
    nchk=$(awk -F'\t' '$14 == "ok"' "$out/results.tsv" | wc -l)
    echo "- Rows with results checked and correct: $nchk; rows with wrong results: $nfail."
    if [ -s "$out/retried" ]; then
        echo "- Runs that failed and passed when tried again:"
        sed 's/^/  - /' "$out/retried"
    fi
    if [ -s "$failures" ]; then
        echo "- Failed runs:"
        sed 's/^/  - /' "$failures"
    else
        echo "- Failed runs: none."
    fi
} >"$report.new" && mv -f "$report.new" "$report"

cat "$report"
say "report written to $report"
nfail=$(awk -F'\t' '$14 ~ /^FAIL/' "$out/results.tsv" | wc -l)
[ -s "$failures" ] || [ "$nfail" != 0 ] && exit 1
exit 0
