#!/bin/bash
# compare.sh - libddp against Open MPI and gloo on the test cluster, in one
# command.
#
#   contrib/bench/compare.sh [--short] [--out DIR] [--report FILE] [--reps N]
#                            [--launch-reps N] [--plugstack] [--no-launch]
#                            [--sections LIST] [--nodes LIST] [--ppn LIST]
#                            [--plot FILE] [--baseline FILE] [--no-gloo]
#                            [--sizes LIST] [--best-of N] [--ops LIST]
#                            [--net] [--net-rate RATE] [--net-mtu N]
#
# Runs ddp-bench and mpi-bench (the same loop on MPI) under the same
# `srun --mpi=pmix`, and gloo-bench.py (the same loop on torch.distributed's
# gloo backend, joined through env:// from the variables of `srun
# --ddp=host`) where a python3 with torch is found (else its columns are
# left out and the report says why), one after the other for each
# configuration: every collective for one node with 2 ranks (-N1 -n2) and
# two nodes with one rank each (-N2 -n2); barrier and allreduce at every node
# count of --nodes with every ranks-per-node count of --ppn (the node sweep);
# ddp_init against MPI_Init for 2, 4, 8, 16 and 32 ranks on two nodes
# (counting the PMIx fences each makes); `srun -N2 -n8 true` without the
# plugin, with it loaded and no --ddp, and with --ddp=host.  Then report.awk
# writes a markdown report (our time / peer time for every row, every target
# with its result) to FILE, which is printed, and plot.gp draws the sweep.
#
#   --short        few sizes, iterations and repetitions, MPI_Init timed up
#                  to 8 ranks only (CI: about a minute)
#   --out DIR      raw results (TSV and text per run; default
#                  $DDP_BUILD_DIR/contrib/bench/results); not under /tmp
#                  unless inside the build tree
#   --report FILE  the report (default DIR/report.md)
#   --reps N       repetitions of each init run (default 5; --short 1)
#   --launch-reps N  repetitions of each launch-cost run (default 20; --short 3)
#   --plugstack    let it rewrite plugstack.conf of a cluster it did not start
#                  (it restores the file at the end); without it the no-plugin
#                  launch rows of a reused cluster are skipped
#   --no-launch    skip the launch-cost rows (--sections collectives,scale,init)
#   --sections LIST  of collectives, scale, init, launch (default: all four)
#   --nodes LIST   node counts of the sweep (default 1,2,4,8,16; --short
#                  1,2,4); counts beyond the cluster's are reported as not run
#   --ppn LIST     ranks per node in the sweep (default 1,4; --short 1,2)
#   --plot FILE    the sweep's picture, PNG (default DIR/scale.png when gnuplot
#                  is installed; with --plot it must be)
#   --baseline FILE  results.tsv of an earlier run: ddp's 1- and 2-node times
#                  are compared with it (a scaling target)
#   --no-gloo      leave gloo out (no torch needed)
#   --best-of N    run the collectives and the sweep N times over (each
#                  round every configuration, the peers one after the
#                  other) and report each row's best (lowest) time; a wrong
#                  result in any round is reported (default 1)
#   --sizes LIST   message sizes in bytes of the collectives and the sweep,
#                  e.g. 8,32768,1048576 (default: --short 8,65536,1048576;
#                  else 8 B to 64 MiB, x2 for the collectives, x8 for the
#                  sweep)
#   --ops LIST     the sweep's operations, of barrier, allreduce, allgather,
#                  reduce_scatter, group_allreduce (an allreduce on each half
#                  of the world split by rank % 2) and overlap (iallreduce
#                  around a compute loop against allreduce then the loop;
#                  ddp-bench(1)) (default barrier,allreduce); gloo-bench.py
#                  runs those of the first three only
#   --net          start the cluster with its nodes on a network
#                  (ddp-test-cluster start --net: each node its own address
#                  on a simulated switch) rather than all on 127.0.0.1
#   --net-rate RATE  and its links shaped to RATE (tc's units: 200mbit,
#                  1gbit; implies --net)
#   --net-mtu N    and its MTU N (default 1500; implies --net)
#
# On a networked cluster (started with --net, or reused with its net.conf)
# the report names the network (rate, MTU) and the link rate measured at
# start and at end, one TCP stream n1 -> n2 (ddp-test-cluster stream), so
# that the limit is observed, not assumed; allreduce and allgather rows get
# their bus bandwidth against that rate (as nccl-tests: allreduce 2(n-1)/n
# x bytes / time, allgather (n-1)/n x total bytes / time).  Open MPI's TCP
# links are then on eth0 (not lo, which reaches only the node itself).
#
# The cluster: reused when DDP_CLUSTER_DIR (or SLURM_CONF) points at a running
# one, else started with as many nodes as --nodes needs
# (tests/cluster/ddp-test-cluster start --nodes N) and stopped at exit.
# Programs: DDP_BENCH, MPI_BENCH, DDP_BENCH_FENCES (the LD_PRELOAD fence
# counter) default to the build tree DDP_BUILD_DIR (default: the source tree).
# DDP_BENCH_SOURCE names the source of the programs in the report (default:
# git describe of the tree compare.sh is in).  GLOO_BENCH (default:
# gloo-bench.py beside compare.sh; empty: no gloo) runs under GLOO_PYTHON
# (default: the first of python3 and /usr/bin/python3 that imports torch with
# gloo; Debian's python3-torch is for /usr/bin/python3).  gloo is not in the
# init and launch sections (those are about PMIx and the plugin), and not in
# the sweep beyond GLOO_MAX_NODES nodes (--short: 2; each gloo rank imports
# torch, ~1 s of CPU) or GLOO_MAX_RANKS ranks (default: no limit; each rank
# holds about 300 MiB and two buffers of the largest size).
# MPI runs with OMPI_MCA_pml=ob1 (the PML Open MPI selects anyway here, without
# first probing UCX, ~200 ms of MPI_Init) and its shared-memory segments in the
# node's private /tmp (vader in Open MPI 4, sm in 5; the test nodes share
# one /dev/shm, and Open MPI's
# segment names could collide), and its TCP links on the loopback interface
# (the test nodes are namespaces of one machine: with distinct host names Open
# MPI takes them for separate hosts and would otherwise try every interface,
# some unreachable on a CI machine; seen there as exit 1 and segfaults of
# mpi-bench); MPI_ENV overrides all three.  A run
# with more ranks than the machine has cores also gets
# OMPI_MCA_mpi_yield_when_idle=1, as mpirun sets it when it sees the
# oversubscription (srun cannot tell Open MPI).
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
sections=collectives,scale,init,launch
nodes=
ppn=
plot=
baseline=
no_gloo=0
sizes=
best_of=1
sweep_ops=barrier,allreduce
net=0
net_rate=
net_mtu=
while [ $# -gt 0 ]; do
    case "$1" in
        --short) short=1 ;;
        --out) out=${2:?--out needs a directory}; shift ;;
        --report) report=${2:?--report needs a file}; shift ;;
        --reps) reps=${2:?--reps needs a number}; shift ;;
        --launch-reps) launch_reps=${2:?--launch-reps needs a number}; shift ;;
        --plugstack) allow_plugstack=1 ;;
        --no-launch) sections=collectives,scale,init ;;
        --sections) sections=${2:?--sections needs a list}; shift ;;
        --nodes) nodes=${2:?--nodes needs a list, e.g. 1,2,4,8,16}; shift ;;
        --ppn) ppn=${2:?--ppn needs a list, e.g. 1,4}; shift ;;
        --plot) plot=${2:?--plot needs a file}; shift ;;
        --baseline) baseline=${2:?--baseline needs a results.tsv}; shift ;;
        --no-gloo) no_gloo=1 ;;
        --best-of) best_of=${2:?--best-of needs a number}; shift ;;
        --sizes) sizes=${2:?--sizes needs a list, e.g. 8,65536,1048576}; shift ;;
        --ops) sweep_ops=${2:?--ops needs a list, e.g. barrier,allreduce,reduce_scatter}; shift ;;
        --net) net=1 ;;
        --net-rate) net_rate=${2:?--net-rate needs a rate, e.g. 200mbit}; net=1; shift ;;
        --net-mtu) net_mtu=${2:?--net-mtu needs a number, e.g. 9000}; net=1; shift ;;
        -h|--help) sed -n '2,/^set -u/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) die "unknown argument '$1' (see --help)" ;;
    esac
    shift
done
want () { case ",$sections," in *",$1,"*) return 0 ;; *) return 1 ;; esac; }
for s in ${sections//,/ }; do
    case $s in collectives|scale|init|launch) ;; *) die "unknown section '$s' (of collectives, scale, init, launch)" ;; esac
done
case "${reps:-1}${launch_reps:-1}$best_of" in *[!0-9]*) die "--reps, --launch-reps and --best-of take numbers" ;; esac
[ "$best_of" -ge 1 ] || die "--best-of takes a number of at least 1"
for s in ${sweep_ops//,/ }; do
    case $s in barrier|allreduce|allgather|reduce_scatter|group_allreduce|overlap) ;;
        *) die "--ops: unknown operation '$s' (of barrier, allreduce, allgather, reduce_scatter, group_allreduce, overlap)" ;; esac
done
# gloo-bench.py has no reduce-scatter, groups or overlap: its share of the
# sweep's operations (empty: gloo is left out of the sweep).
gloo_sweep_ops=$(tr , '\n' <<<"$sweep_ops" | grep -xE 'barrier|allreduce|allgather' | paste -sd, -)
if [ $short = 1 ]; then
    : "${nodes:=1,2,4}" "${ppn:=1,2}"
else
    : "${nodes:=1,2,4,8,16}" "${ppn:=1,4}"
fi
for list in "$nodes" "$ppn" ${sizes:+"$sizes"}; do
    [[ $list =~ ^[1-9][0-9]*(,[1-9][0-9]*)*$ ]] ||
        die "--nodes, --ppn and --sizes take lists of whole numbers, e.g. 1,2,4 (got '$list')"
done
[ -z "$baseline" ] || [ -f "$baseline" ] || die "--baseline $baseline: no such file (give an earlier run's results.tsv)"
[ -z "$plot" ] || command -v gnuplot >/dev/null ||
    die "--plot needs gnuplot: apt-get install gnuplot-nox (contrib/deps.sh)"

src=$(cd "$(dirname "$0")/../.." && pwd)
here=$src/contrib/bench
build=${DDP_BUILD_DIR:-$src}
build=$(cd "$build" && pwd) || die "no build directory $build"
CLUSTER=${DDP_CLUSTER:-$src/tests/cluster/ddp-test-cluster}
DDP_BENCH=${DDP_BENCH:-$build/contrib/bench/ddp-bench}
MPI_BENCH=${MPI_BENCH:-$build/contrib/bench/mpi-bench}
FENCES=${DDP_BENCH_FENCES-$build/contrib/bench/.libs/ddp-bench-fences.so}
mpi_env_given=${MPI_ENV+1}
MPI_ENV=${MPI_ENV-OMPI_MCA_pml=ob1 OMPI_MCA_btl_vader_backing_directory=/tmp OMPI_MCA_btl_sm_backing_directory=/tmp OMPI_MCA_btl_tcp_if_include=lo}
MPI_ENV_DEFAULT="OMPI_MCA_btl_vader_backing_directory=/tmp OMPI_MCA_btl_sm_backing_directory=/tmp OMPI_MCA_btl_tcp_if_include=lo"
SCALE_RANKS="2 4 8 16 32"
# MPI_Init is timed at these (a subset of SCALE_RANKS).  --short stops at 8:
# Open MPI's init at 32 ranks took 10 s on the idle 2-core CI machine, and
# with two busy processes beside it 29 s, ending in a segfault and a retry
# (2026-11-28): most of the suite's benchmark test under CI load, for a
# peer's figure the full run measures.
MPI_INIT_RANKS=$SCALE_RANKS
CORES=$(nproc)

if [ $short = 1 ]; then
    BENCH_ARGS="--short"
    SWEEP_ARGS="--short -o $sweep_ops -M 0 -T 2"
    SWEEP_SIZES=8,65536,1048576
    : "${reps:=1}" "${launch_reps:=3}"
    RUN_TIMEOUT=120
    MPI_INIT_RANKS="2 4 8"
    # gloo's ranks each import torch (~1 s of CPU): CI runs it on 1 and 2
    # nodes only.
    GLOO_MAX_NODES=${GLOO_MAX_NODES-2}
    INIT_TIMEOUT=60
else
    BENCH_ARGS=""
    SWEEP_SIZES=8,64,512,4096,32768,262144,1048576,4194304,16777216,67108864
    SWEEP_ARGS="-o $sweep_ops -M 0 -s $SWEEP_SIZES -m 5 -T 5"
    : "${reps:=5}" "${launch_reps:=20}"
    RUN_TIMEOUT=600
    GLOO_MAX_NODES=${GLOO_MAX_NODES-}
    INIT_TIMEOUT=120
fi
if [ -n "$sizes" ]; then
    BENCH_ARGS="$BENCH_ARGS -s $sizes"
    SWEEP_ARGS="$SWEEP_ARGS -s $sizes"
    SWEEP_SIZES=$sizes
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
# The picture's first panel is allreduce's bandwidth: a sweep without it
# (--ops reduce_scatter,overlap) has nothing there, and gnuplot fails on an
# empty log-scale plot.
if [ -z "$plot" ] && want scale; then
    if [[ ,$sweep_ops, != *,allreduce,* ]]; then
        say "no picture of the sweep: it draws allreduce, not in --ops $sweep_ops"
    elif command -v gnuplot >/dev/null; then plot=$out/scale.png
    else say "gnuplot not found (apt-get install gnuplot-nox): no picture of the sweep"; fi
fi
rm -f "$out/link.txt" "$out/link.err" "$out"/ddp-* "$out"/mpi-* "$out"/gloo-* "$out"/init-* "$out"/launch-* "$out/results.tsv" "$out/rounds.tsv" \
      "$out/failures" "$out/retried" "$out/scale.dat"
[ -x "$DDP_BENCH" ] || die "ddp-bench not found at $DDP_BENCH (build first, or set DDP_BENCH)"
[ -x "$MPI_BENCH" ] || { say "mpi-bench not found at $MPI_BENCH: MPI columns will be n/a"; MPI_BENCH=; }
[ -n "$FENCES" ] && [ ! -f "$FENCES" ] && { say "no fence counter at $FENCES: fences not counted"; FENCES=; }

# gloo: a python3 that has torch with gloo, and the script.
GLOO_BENCH=${GLOO_BENCH-$here/gloo-bench.py}
gloo_note=
if [ $no_gloo = 1 ]; then
    GLOO_BENCH=; gloo_note="not run (--no-gloo)"
elif [ -z "$GLOO_BENCH" ]; then
    gloo_note="not run (GLOO_BENCH is empty)"
elif [ ! -f "$GLOO_BENCH" ]; then
    gloo_note="not run: no $GLOO_BENCH"; GLOO_BENCH=
else
    if [ -z "${GLOO_PYTHON:-}" ]; then
        for py in python3 /usr/bin/python3; do
            py=$(command -v "$py") || continue
            "$py" -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null &&
                { GLOO_PYTHON=$py; break; }
        done
    fi
    gloo_torch=$([ -n "${GLOO_PYTHON:-}" ] && "$GLOO_PYTHON" -c 'import torch.distributed as d; assert d.is_gloo_available(); import torch; print(torch.__version__)' 2>/dev/null)
    if [ -z "$gloo_torch" ]; then
        gloo_note="not run: no python3 with torch and its gloo backend (Debian: apt-get install python3-torch)"
        GLOO_BENCH=
    else
        gloo_note="torch $gloo_torch ($GLOO_PYTHON), gloo-bench.py under srun --ddp=host${GLOO_MAX_NODES:+, in the sweep on at most $GLOO_MAX_NODES nodes}${GLOO_MAX_RANKS:+, in the sweep at most $GLOO_MAX_RANKS ranks}"
    fi
fi
[ -n "$GLOO_BENCH" ] || say "gloo: $gloo_note: no gloo columns"
PEERS="ddp mpi${GLOO_BENCH:+ gloo}"

failures=$out/failures
: >"$failures"
fail () { echo "$*" >>"$failures"; say "FAILED: $*"; }

# ---- the cluster --------------------------------------------------------
max_nodes=2
for n in ${nodes//,/ }; do [ "$n" -gt $max_nodes ] && max_nodes=$n; done
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
    [ $net = 1 ] && ! [ -f "$cluster_dir/net.conf" ] &&
        die "--net: the cluster in $cluster_dir has no network of its own (unset DDP_CLUSTER_DIR, or start it with --net)"
elif [ -z "${DDP_CLUSTER_DIR:-}" ] && [ -n "${SLURM_CONF:-}" ] && scontrol ping 2>/dev/null | grep -q UP; then
    say "reusing the Slurm cluster of SLURM_CONF=$SLURM_CONF (launch rows need a test cluster)"
else
    export DDP_BUILD_DIR=$build
    # A cluster script without --nodes starts its two nodes.
    size_arg=
    [[ $("$CLUSTER" 2>&1) == *--nodes* ]] && size_arg="--nodes $max_nodes"
    net_args=
    [ $net = 1 ] && net_args="--net${net_rate:+ --rate $net_rate}${net_mtu:+ --mtu $net_mtu}"
    # shellcheck disable=SC2086
    cluster_dir=$("$CLUSTER" start $size_arg $net_args 2>"$out/cluster-start.err") \
        || die "could not start a test cluster: $(tail -n 20 "$out/cluster-start.err")"
    own_cluster=1
    . "$cluster_dir/env"
    say "started a test cluster in $cluster_dir"
fi
cluster_nodes=$(cat "$cluster_dir/nodes" 2>/dev/null ||
                sinfo -h -N -o %N 2>/dev/null | sort -u | wc -l)
# The network: "mtu=1500 data=0 docker=0 dead=0 rate=200mbit" in net.conf
# (ddp-test-cluster), or none (all nodes on 127.0.0.1).
net_conf=
[ -n "$cluster_dir" ] && [ -f "$cluster_dir/net.conf" ] && net_conf=$(cat "$cluster_dir/net.conf")
net_desc=
if [ -n "$net_conf" ]; then
    net_mtu=$(sed -n 's/.*mtu=\([0-9]*\).*/\1/p' <<<"$net_conf")
    net_rate=$(sed -n 's/.*rate=\([0-9a-z]*\).*/\1/p' <<<"$net_conf")
    net_desc="nodes on a network (ddp-test-cluster --net): eth0, MTU ${net_mtu:-?}, links ${net_rate:-not shaped}${net_rate:+ (tbf, both directions)}"
    # Open MPI's TCP links on the nodes' eth0: lo reaches only the node itself.
    [ -n "$mpi_env_given" ] || {
        MPI_ENV=${MPI_ENV/btl_tcp_if_include=lo/btl_tcp_if_include=eth0}
        MPI_ENV_DEFAULT=${MPI_ENV_DEFAULT/btl_tcp_if_include=lo/btl_tcp_if_include=eth0}
    }
fi
# link_rate: one TCP stream n1 -> n2 (ddp-test-cluster stream), in Gbit/s,
# or "" where there is no network or it failed (what it said goes to
# link.err).
link_rate () {
    [ -n "$net_conf" ] && [ "$cluster_nodes" -ge 2 ] || return 0
    "$CLUSTER" stream "$cluster_dir" n1 n2 "${LINK_SECS:-3}" 2>>"$out/link.err" |
        tee -a "$out/link.txt" | sed -n 's/.*: \([0-9.]*\) Gbit\/s.*/\1/p'
}
# gloo's rendezvous variables come from the plugin (srun --ddp=host).
if [ -n "$GLOO_BENCH" ] && [ -n "$cluster_dir" ] && ! grep -q . "$cluster_dir/plugin" 2>/dev/null; then
    gloo_note="not run: the cluster has no plugin (srun --ddp=host sets gloo's MASTER_ADDR and MASTER_PORT)"
    say "gloo: $gloo_note"
    GLOO_BENCH=; PEERS="ddp mpi"
fi

# ---- running the programs -------------------------------------------------
# mpi_env RANKS: Open MPI's settings for a run of RANKS ranks.
mpi_env () {
    if [ "$1" -gt "$CORES" ] && [[ $MPI_ENV != *yield_when_idle* ]]; then
        echo "$MPI_ENV OMPI_MCA_mpi_yield_when_idle=1"
    else
        echo "$MPI_ENV"
    fi
}

# run_bench TAG IMPL NODES RANKS PPN ARGS...: one srun of ddp-bench,
# mpi-bench or gloo-bench.py (PPN: ranks per node, or "" for Slurm's
# placement), TSV in TAG.tsv, table in TAG.txt, stderr in TAG.err.
run_bench () {
    local tag=$1 impl=$2 nodes=$3 ranks=$4 ppn=$5 prog env rc try why limit=$RUN_TIMEOUT
    local place='' launcher=--mpi=pmix interp=''
    shift 5
    case " $* " in *" --init-only "*) limit=$INIT_TIMEOUT ;; esac
    [ -n "$ppn" ] && place="--ntasks-per-node=$ppn"
    case $impl in
        ddp) prog=$DDP_BENCH; env="DDP_BACKEND=host" ;;
        mpi) prog=$MPI_BENCH; env=$(mpi_env "$ranks") ;;
        mpidefault) prog=$MPI_BENCH; env=$MPI_ENV_DEFAULT ;;
        # The plugin sets MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE.
        gloo) prog=$GLOO_BENCH; interp=$GLOO_PYTHON; env="DDP_BACKEND=host"
              launcher=--ddp=host ;;
    esac
    [ -n "$prog" ] || return 0
    [ -n "$FENCES" ] && [ $impl != gloo ] && env="$env LD_PRELOAD=$FENCES"
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
        timeout --kill-after=5 "$limit" srun $launcher --kill-on-bad-exit=1 \
            --job-name="compare-$tag" -N"$nodes" -n"$ranks" $place \
            env $env $interp "$prog" --tsv "$out/$tag.tsv" "$@" \
            >"$out/$tag.txt" 2>"$out/$tag.err"
        rc=$?
        [ $rc = 0 ] && break
        # srun killed at the time limit can leave its job allocated, its
        # tasks still running (seen: an MPI_Init hung at -N16 -n64 held all
        # 16 nodes for 11 minutes, and every run after it timed out waiting
        # for resources): cancel it before the next try.
        if [ $rc = 124 ] || [ $rc = 137 ]; then
            scancel --name="compare-$tag" 2>/dev/null
            for _ in 1 2 3 4 5 6 7 8 9 10; do
                [ -z "$(squeue -h --name="compare-$tag" 2>/dev/null)" ] && break
                sleep 1
            done
        fi
        # The first task that srun saw die names the cause; the others were
        # only ended with it (--kill-on-bad-exit).
        why="$tag ($impl -N$nodes -n$ranks $place $*): exit $rc; $( {
            grep -m1 '^srun: error: .*: tasks\{0,1\} [0-9,-]*: [^T]' "$out/$tag.err"
            grep -v '^\s*$' "$out/$tag.err" | tail -n 2; } | tr '\n' ' ')"
        # A run is tried three times: Open MPI's shared-memory setup fails
        # now and then on this all-nodes-on-one-host cluster (measured: a
        # SEGV after "open(2) ... No such file or directory" in 1 of 20
        # MPI_Init runs at -N2 -n8, 5 of 15 at -N2 -n16); every retry is
        # reported.  --kill-on-bad-exit ends the step when a task dies, or
        # the others would wait for it until the time limit.
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

# The cache line's round trip between two CPUs (ddp-pingpong), before and
# after: one node's small collectives move with it (doc/benchmarks.md).
PINGPONG=${DDP_PINGPONG:-$build/contrib/bench/ddp-pingpong}
round_trip () {
    if [ -x "$PINGPONG" ]; then "$PINGPONG" 2>/dev/null || echo "failed"
    else echo "not measured (no $PINGPONG)"; fi
}
load_start=$(uptime)
link_start=$(link_rate)
[ -z "$net_conf" ] || say "link rate n1 -> n2 at start: ${link_start:-not measured (see $out/link.err)} Gbit/s"
rt_start=$(round_trip)
t_start=$(date +%s)

# ---- 1. collectives: -N1 -n2 and -N2 -n2 ---------------------------------
# With --best-of N, sections 1 and 2 run N times; round K's files are
# TAG.rK.* and the report takes each row's best round (results.tsv below).
swept () { want collectives && { [ "$1:$2" = 1:2 ] || [ "$1:$2" = 2:1 ]; }; }
sweep_top=0
for round in $(seq 1 "$best_of"); do
    rs=; [ "$best_of" -gt 1 ] && rs=.r$round && say "round $round/$best_of"
    want collectives && for cfg in N1n2 N2n2; do
        n=${cfg:1:1}
        for impl in $PEERS; do
            say "collectives $impl -N$n -n2"
            # shellcheck disable=SC2086
            run_bench "$impl-$cfg$rs" $impl "$n" 2 "" $BENCH_ARGS
        done
    done

    # ---- 2. the node sweep ------------------------------------------------
    # swept N P: true when the collectives runs measured N nodes x P ranks.
    want scale && for p in ${ppn//,/ }; do
        for n in ${nodes//,/ }; do
            [ "$n" -le "$cluster_nodes" ] || continue
            [ "$n" -gt $sweep_top ] && sweep_top=$n
            swept "$n" "$p" && continue
            for impl in $PEERS; do
                [ $impl = gloo ] && { { [ -n "$GLOO_MAX_NODES" ] && [ "$n" -gt "$GLOO_MAX_NODES" ]; } ||
                    { [ -n "${GLOO_MAX_RANKS:-}" ] && [ $((n * p)) -gt "$GLOO_MAX_RANKS" ]; }; } && continue
                args=$SWEEP_ARGS
                if [ $impl = gloo ]; then
                    [ -n "$gloo_sweep_ops" ] || continue
                    args=${SWEEP_ARGS/-o $sweep_ops/-o $gloo_sweep_ops}
                fi
                say "sweep $impl -N$n --ntasks-per-node=$p"
                # shellcheck disable=SC2086
                run_bench "$impl-scale-N${n}p$p$rs" $impl "$n" $((n * p)) "$p" $args
            done
        done
    done
done
# More init runs at the largest node count (its target), the sweep run
# being the first.
want scale && [ $sweep_top -gt 0 ] && for p in ${ppn//,/ }; do
    for rep in $(seq 2 "$reps"); do
        for impl in ddp mpi; do
            say "init $impl -N$sweep_top --ntasks-per-node=$p ($rep/$reps)"
            run_bench "$impl-scale-N${sweep_top}p$p-init$rep" $impl "$sweep_top" \
                $((sweep_top * p)) "$p" --init-only
        done
    done
done

# ---- 3. init on two nodes ------------------------------------------------
want init && for n in $SCALE_RANKS; do
    for rep in $(seq 1 "$reps"); do
        for impl in ddp mpi; do
            [ $impl = ddp ] || [[ " $MPI_INIT_RANKS " == *" $n "* ]] || continue
            say "init $impl -N2 -n$n ($rep/$reps)"
            run_bench "init-$impl-$n-$rep" $impl 2 "$n" "" --init-only
        done
    done
done
if want init; then
    for rep in $(seq 1 "$reps"); do
        run_bench "init-mpidefault-2-$rep" mpidefault 2 2 "" --init-only
    done
    # ddp_init's phases, as the library logs them with DDP_DEBUG.
    DDP_DEBUG=1 run_bench "init-ddp-debug" ddp 2 2 "" --init-only
fi

# ---- 4. plugin launch cost -------------------------------------------------
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
link_end=$(link_rate)
rt_end=$(round_trip)
t_end=$(date +%s)

# ---- the report ----------------------------------------------------------
# All TSV rows in one file, with the run's name first; of the rounds of
# --best-of (TAG.rK.tsv: run TAG) each row's lowest time, or a wrong
# result where a round had one.  With --best-of, every round's rows also
# go to rounds.tsv: the report gives each row's median over the rounds
# beside its best, since the best round of a peer whose times spread
# more is lower by that spread alone (4 x 1 on 2 CPUs, 1 KiB allgather,
# 12 rounds: Open MPI 44-65 us, ddp 55-65, both medians 58).
{
    printf 'run\timpl\top\tnranks\tnnodes\tbytes\tcount\titers\ttime_us\tmean_us\tmin_us\talgbw_GBps\tbusbw_GBps\tcheck\n'
    for f in "$out"/*.tsv; do
        [ -f "$f" ] || continue
        case ${f##*/} in results.tsv|rounds.tsv) continue ;; esac
        awk -v run="$(basename "$f" .tsv)" 'NR > 1 { sub(/[.]r[0-9]+$/, "", run); print run "\t" $0 }' "$f"
    done
} | tee "$out/rounds.tsv.new" | awk -F'\t' '
    NR == 1 { print; next }
    { k = $1 SUBSEP $3 SUBSEP $6 }
    !(k in row) { keys[++n] = k; row[k] = $0; t[k] = $9; bad[k] = $14 ~ /^FAIL/; next }
    bad[k] { next }
    $14 ~ /^FAIL/ || ($9 + 0 >= 0 && $9 + 0 < t[k] + 0) { row[k] = $0; t[k] = $9; bad[k] = $14 ~ /^FAIL/ }
    END { for (i = 1; i <= n; i++) print row[keys[i]] }
' >"$out/results.tsv.new" && mv -f "$out/results.tsv.new" "$out/results.tsv"
if [ "$best_of" -gt 1 ]; then
    mv -f "$out/rounds.tsv.new" "$out/rounds.tsv"
else
    rm -f "$out/rounds.tsv.new" "$out/rounds.tsv"
fi

# write_report PLOT: report.awk over every raw file; the picture's data in
# scale.dat.
write_report () {
    local files=(kind=results "$out/results.tsv") f cfg shown=$1 sweep=$nodes
    [ -f "$out/rounds.tsv" ] && files+=(kind=rounds "$out/rounds.tsv")
    for f in "$out"/launch-*.txt; do
        [ -f "$f" ] || continue
        cfg=${f##*/launch-}; files+=(kind=launch "cfg=${cfg%.txt}" "$f")
    done
    [ -f "$out/init-ddp-debug.err" ] && files+=(kind=debug "$out/init-ddp-debug.err")
    [ -s "$out/retried" ] && files+=(kind=retried "$out/retried")
    files+=(kind=failures "$failures")
    [ -n "$baseline" ] && files+=(kind=baseline "$baseline")
    # The picture beside the report is named as a relative link.
    [ -n "$shown" ] && [ "$(dirname "$shown")" = "$(dirname "$report")" ] && shown=$(basename "$shown")
    want scale || sweep=
    awk -f "$here/report.awk" \
        -v date="$(date -u '+%Y-%m-%d %H:%M UTC')" \
        -v mode="$([ $short = 1 ] && echo short || echo full)" -v best_of="$best_of" \
        -v secs=$((t_end - t_start)) \
        -v programs="$build (source: ${DDP_BENCH_SOURCE:-$(git -C "$src" describe --always --dirty 2>/dev/null || echo unknown)})" \
        -v machine="$CORES CPUs ($(awk -F': ' '/model name/ { print $2; exit }' /proc/cpuinfo)), $(awk '/MemTotal/ { printf "%.0f GiB", $2 / 1048576 }' /proc/meminfo), Linux $(uname -r)" \
        -v cluster="$cluster_nodes slurmd (16 CPUs each) on this one host, $(srun --version 2>/dev/null); $(ompi_info --version 2>/dev/null | head -n 1 || echo 'Open MPI: not found')" \
        -v load_start="${load_start##*load average: }" -v load_end="${load_end##*load average: }" \
        -v rt_start="$rt_start" -v rt_end="$rt_end" \
        -v rawdata="$out/results.tsv" -v reps="$reps" -v scale_ranks="$SCALE_RANKS" \
        -v mpi_init_ranks="$MPI_INIT_RANKS" \
        -v launch_note="$launch_note" -v nodes="$sweep" -v ppn="$ppn" \
        -v sizes="$SWEEP_SIZES" -v maxnodes="$cluster_nodes" \
        -v plot="$shown" -v plotdata="${1:+$out/scale.dat}" \
        -v gloo="$([ -n "$GLOO_BENCH" ] && echo 1 || echo 0)" -v gloo_note="$gloo_note" \
        -v sweep_ops="$sweep_ops" -v net="$net_desc" -v sections="$sections" \
        -v link_start="$link_start" -v link_end="$link_end" \
        "${files[@]}" >"$report.new" && mv -f "$report.new" "$report"
}

write_report "$plot" || die "report.awk failed"
# The picture draws 1 MiB and the largest size: without 1 MiB in the
# sweep there is nothing to draw.
if [ -n "$plot" ] && [[ ,$SWEEP_SIZES, != *,1048576,* ]]; then
    say "no picture of the sweep: its sizes ($SWEEP_SIZES) do not include 1 MiB (1048576)"
    plot=
    write_report "" || die "report.awk failed"
fi
if [ -n "$plot" ] && [ -s "$out/scale.dat" ]; then
    gp_ppn=${ppn//,/ }
    gp_big=${SWEEP_SIZES##*,}
    gp_gloo=$([ -n "$GLOO_BENCH" ] && echo 1 || echo 0)
    # The link rate in GB/s, the higher of the two measured (as the report).
    gp_link=$(awk -v a="$link_start" -v b="$link_end" 'BEGIN { a += 0; b += 0; print (a > b ? a : b) / 8 }')
    gp_ag=$([[ ,$sweep_ops, == *,allgather,* ]] && echo 1 || echo 0)
    if ! gnuplot -e "datafile='$out/scale.dat'; outfile='$plot'; ppn='$gp_ppn'; big='$gp_big'; gloo=$gp_gloo; link=$gp_link; allgather=$gp_ag" \
            "$here/plot.gp" 2>"$out/plot.err"; then
        fail "plot: gnuplot failed: $(tail -n 3 "$out/plot.err" | tr '\n' ' ')"
        write_report "" || die "report.awk failed"
    fi
fi

cat "$report"
say "report written to $report${plot:+; the picture of the sweep: $plot}"
nfail=$(awk -F'\t' '$14 ~ /^FAIL/' "$out/results.tsv" | wc -l)
[ -s "$failures" ] || [ "$nfail" != 0 ] && exit 1
exit 0
