#!/bin/bash
# gpu-check.sh - libddp's NCCL backend on a GPU machine, in one command.
#
# For a Linux machine with NVIDIA GPUs, CUDA and NCCL, and no Slurm or PMIx
# (a GPU cloud VM), run as root from a build made elsewhere and carried
# there.  Needs only bash, coreutils, util-linux (unshare) and the build's
# binaries.  Each step has its own time limit, and the whole run its budget
# (default 470 s, under 8 minutes on one H100).  Steps:
#
#   probe           nccl_check --probe: the GPU, the CUDA runtime and driver
#   check-1         nccl_check (full) at 1 rank: every collective, dtype, op
#                   and buffer kind against a CPU reference; and which NCCL
#                   and CUDA runtime libddp loaded at run time (the report's
#                   "libddp loaded" line)
#   avg-probe       nccl_bench --avg-probe: does raw NCCL still leave the
#                   tail of an out-of-place ncclAvg unwritten, and does
#                   libddp write every element (doc/nccl.md)
#   check-2x1gpu,   nccl_check --quick at 2 and 4 ranks on one GPU, each rank
#   check-4x1gpu    in its own UTS namespace with its own host name and
#                   NCCL_HOSTID (NCCL then sees separate hosts and uses its
#                   socket transport over lo)
#   avg-2x1gpu      nccl_check --count 1048579 --op avg at 2 ranks on one
#                   GPU: every dtype and buffer kind at the count where
#                   NCCL 2.28.3 left an out-of-place average unfinished
#   check-pergpu    nccl_check --quick at one rank per GPU (several GPUs only)
#   bench           nccl_bench --quick: libddp against raw NCCL, 1 rank
#   kill-barrier,   2 ranks on one GPU, DDP_TIMEOUT=5: rank 1 kills itself
#   kill-allreduce  (SIGKILL) in a loop of barriers / 4 MiB allreduces; the
#                   survivor's reaction time and message, which must name
#                   rank 1
#   skip            rank 1 never enters a barrier: the survivor's time and
#                   message, which must name rank 1
#   abort           rank 1 calls ddp_abort(7): the job ends with status 7
#   train           contrib/examples/train at 2 ranks on one GPU (if built)
#
# The report (markdown: GPU, driver, CUDA and NCCL versions, a verdict and
# the key numbers of every step, then each step's details) goes to --out;
# every command's output stays in the work directory.
#
# Usage: gpu-check.sh [--build DIR] [--out FILE] [--work DIR]
#                     [--lib-path DIRS] [--budget SECONDS] [--quick]
#                     [--stand-in]
#        gpu-check.sh [--build DIR] --pack DEST
#   --build DIR      the build tree (default $DDP_BUILD_DIR, else ./build,
#                    else .); its test programs are run from tests/progs
#                    (the real binaries in .libs/ when libtool made
#                    wrappers), with DIR/libjob/.libs first on
#                    LD_LIBRARY_PATH, and DIR/lib (see --pack) after
#                    --lib-path
#   --pack DEST      copy what a run needs from the build into DEST, in the
#                    same layout (the programs, libddp, the stand-in), and
#                    into DEST/lib the shared libraries they load that are
#                    neither glibc's, the compiler's, CUDA's nor NCCL's
#                    (libpmix and its dependencies); carry DEST to the GPU
#                    machine and give it as --build there
#   --out FILE       the report (default gpu-check-report.md)
#   --work DIR       where the steps run and keep their output (default: a
#                    new directory under ${TMPDIR:-/tmp})
#   --lib-path DIRS  colon-separated folders of the shared libraries the
#                    machine lacks (libpmix...), put on LD_LIBRARY_PATH
#   --budget SECONDS the whole run's bound (default 470; at least 20)
#   --quick          the 1-rank checks with --quick, a smaller bench
#   --stand-in       no GPU needed: every program runs against the build's
#                    stand-in for libcudart and libnccl
#                    (tests/progs/.libs/nccl_mock.so, LD_PRELOAD), which
#                    shows 2 GPUs, lets communicators of several ranks form
#                    (MOCK_NCCL_PEERS=fake: each rank's collectives move only
#                    its own data, so the multi-rank checks and the training
#                    fail there) and, for the failure steps, lets the ranks
#                    see each other (MOCK_NCCL_PEER_DIR): a dead peer is
#                    NCCL's remote error, an absent one a stream that waits.
#                    It tests this script (tests/t0404-gpu-check.t).
# Environment: DDP_BUILD_DIR (as --build), GPU_CHECK_NVIDIA_SMI (the
# nvidia-smi command, default nvidia-smi), NCCL_SOCKET_IFNAME (default lo),
# NCCL_IB_DISABLE (default 1), CUDA_VISIBLE_DEVICES (the GPUs to use; the
# one-GPU steps use its first).
# Exit status: 0 every step passed (or was skipped for a reason the report
# gives), 1 a step failed or could not run, 2 a bad command line or build
# tree, 77 no GPU here (no nvidia-smi, or it lists no GPU).

# Single quotes around "$RANK" and backquotes in markdown are meant as such.
# shellcheck disable=SC2016

set -u
set -o pipefail

PROG=gpu-check
BUILD=${DDP_BUILD_DIR:-}
OUT=gpu-check-report.md
WORK=
LIBPATH=
BUDGET=470
QUICK=0
STANDIN=0
NVSMI=${GPU_CHECK_NVIDIA_SMI:-nvidia-smi}
PACK=
MOCK_LINK_DIR=
P_nccl_check='' P_nccl_bench='' P_ddp_local_run='' P_ddp_fault='' P_ddp_victim='' P_train=''
FAULT_TIMEOUT=5       # DDP_TIMEOUT of the failure steps
CMDLINE="$0 $*"

# ---- small helpers ----------------------------------------------------------

usage () {
    sed -n '/^# Usage:/,/^# tree, 77/s/^# \{0,1\}//p' "$0"
}

# log MESSAGE: to stderr and the run's log.
log () {
    printf '%s: %s\n' "$PROG" "$*" >&2
    if [ -n "$WORK" ] && [ -d "$WORK" ]; then
        printf '%s %s\n' "$(date -u +%H:%M:%S)" "$*" >>"$WORK/gpu-check.log"
    fi
}

# usage_error MESSAGE: a bad command line or build tree; exit 2.
usage_error () {
    log "error: $*"
    exit 2
}

now_ms () {
    local t
    t=$(date +%s%N)
    echo $(( t / 1000000 ))
}

# fmt_ms MS: "12.3" (seconds, one decimal).
fmt_ms () {
    printf '%d.%d' $(( $1 / 1000 )) $(( $1 % 1000 / 100 ))
}

# tenths X: X ("5.53", "12") in tenths of a unit (55, 120), or -1.
tenths () {
    local f
    if ! [[ $1 =~ ^([0-9]+)(\.([0-9]*))?$ ]]; then
        echo -1
        return
    fi
    f=${BASH_REMATCH[3]:-0}
    echo $(( 10#${BASH_REMATCH[1]} * 10 + 10#${f:0:1} ))
}

# cell TEXT: TEXT fit for a markdown table cell.
cell () {
    local s=${1//|/\\|}
    printf '%s' "${s//$'\n'/ }"
}

# nccl_version CODE: "2.28.3" from 22803.
nccl_version () {
    if [[ $1 =~ ^[0-9]+$ ]] && (( $1 >= 10000 )); then
        printf '%d.%d.%d' $(( $1 / 10000 )) $(( $1 % 10000 / 100 )) $(( $1 % 100 ))
    else
        printf '%s' "$1"
    fi
}

# first_line PATTERN FILE: the first line of FILE matching PATTERN (ERE).
first_line () {
    grep -E -m1 -- "$1" "$2" 2>/dev/null || true
}

# count PATTERN FILE: lines of FILE matching PATTERN (ERE), 0 if none.
count () {
    local n
    n=$(grep -E -c -- "$1" "$2" 2>/dev/null) || true
    echo "${n:-0}"
}

# ---- the command line --------------------------------------------------------

parse_args () {
    while [ $# -gt 0 ]; do
        case $1 in
        --build|--out|--work|--lib-path|--budget|--pack)
            [ $# -ge 2 ] || usage_error "$1 needs a value"
            case $1 in
            --build) BUILD=$2 ;;
            --pack) PACK=$2 ;;
            --out) OUT=$2 ;;
            --work) WORK=$2 ;;
            --lib-path) LIBPATH=$2 ;;
            --budget) BUDGET=$2 ;;
            esac
            shift 2 ;;
        --quick) QUICK=1; shift ;;
        --stand-in) STANDIN=1; shift ;;
        -h|--help) usage; exit 0 ;;
        *) usage >&2; usage_error "unknown argument '$1'" ;;
        esac
    done
    # 20 s: the probe and one step bounded at 10 s or more (limit_for).
    if ! [[ $BUDGET =~ ^[0-9]+$ ]] || (( BUDGET < 20 )); then
        usage_error "--budget '$BUDGET': give a number of seconds, 20 or more"
    fi
    if [ -z "$BUILD" ]; then
        if [ -d build/tests/progs ]; then BUILD=build; else BUILD=.; fi
    fi
    [ -d "$BUILD/tests/progs" ] ||
        usage_error "no build tree at '$BUILD' (no tests/progs): give --build DIR or DDP_BUILD_DIR"
    BUILD=$(cd "$BUILD" && pwd) || usage_error "cannot enter '$BUILD'"
    case $OUT in /*) ;; *) OUT=$PWD/$OUT ;; esac
}

# ---- the build's programs ------------------------------------------------------

is_elf () {
    [ -f "$1" ] && [ "$(od -An -tx1 -N4 "$1" 2>/dev/null | tr -d ' \n')" = 7f454c46 ]
}

# find_prog REL: the real binary of the build's REL (tests/progs/nccl_check):
# REL's .libs/ copy when libtool made a wrapper, else REL itself.
find_prog () {
    local dir base c
    dir=$(dirname "$1")
    base=$(basename "$1")
    for c in "$BUILD/$dir/.libs/$base" "$BUILD/$dir/.libs/lt-$base" "$BUILD/$dir/$base"; do
        if is_elf "$c"; then
            echo "$c"
            return 0
        fi
    done
    return 1
}

# The programs every run needs, and the optional training example.
find_programs () {
    local p path
    for p in nccl_check nccl_bench ddp-local-run ddp_fault ddp_victim; do
        path=$(find_prog "tests/progs/$p") ||
            usage_error "$BUILD/tests/progs/$p: no binary (configure found NCCL? run make check TESTS= in the build)"
        printf -v "P_${p//-/_}" '%s' "$path"
        log "program: $path"
    done
    if P_train=$(find_prog contrib/examples/train); then
        log "program: $P_train"
    else
        P_train=
        log "contrib/examples/train is not built: the train step is skipped"
    fi
    MOCK=
    if [ "$STANDIN" = 1 ]; then
        MOCK=$BUILD/tests/progs/.libs/nccl_mock.so
        [ -f "$MOCK" ] || usage_error "--stand-in: no $MOCK (a build with NCCL, after make check TESTS=)"
    fi
}

# pack DEST: copy the programs, libddp, the stand-in and the libraries
# the machine may lack into DEST (--pack).
pack () {
    local dest=$1 rel f name path
    mkdir -p "$dest/lib" "$dest/libjob/.libs" || usage_error "cannot create $dest"
    for rel in tests/progs/nccl_check tests/progs/nccl_bench tests/progs/ddp-local-run \
               tests/progs/ddp_fault tests/progs/ddp_victim contrib/examples/train; do
        if ! f=$(find_prog "$rel"); then
            [ "$rel" = contrib/examples/train ] && continue
            usage_error "$BUILD/$rel: no binary (configure found NCCL? run make check TESTS= in the build)"
        fi
        if ! { mkdir -p "$dest/$(dirname "$rel")" && cp -p "$f" "$dest/$rel"; }; then
            usage_error "cannot copy $f to $dest/$rel"
        fi
        log "pack: $rel"
    done
    cp -P "$BUILD"/libjob/.libs/libddp.so* "$dest/libjob/.libs/" ||
        usage_error "cannot copy $BUILD/libjob/.libs/libddp.so*"
    if [ -f "$BUILD/tests/progs/.libs/nccl_mock.so" ]; then
        if ! { mkdir -p "$dest/tests/progs/.libs" &&
               cp -p "$BUILD/tests/progs/.libs/nccl_mock.so" "$dest/tests/progs/.libs/"; }; then
            usage_error "cannot copy the stand-in"
        fi
    fi
    command -v ldd >/dev/null 2>&1 || usage_error "--pack needs ldd to find the libraries"
    ldd "$dest"/tests/progs/* "$dest"/libjob/.libs/libddp.so 2>/dev/null |
        sed -n 's/^[[:space:]]*\([^ ]*\) => \(\/[^ ]*\) .*/\1 \2/p' | sort -u |
        while read -r name path; do
            case $name in
            libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|ld-linux*|libstdc++*|libgcc_s*|libcuda*|libnccl*|libddp*) continue ;;
            esac
            cp -L "$path" "$dest/lib/$name" || usage_error "cannot copy $path"
            log "pack: lib/$name (from $path)"
        done || exit 2
    log "packed into $dest ($(du -sh "$dest" | cut -f1)): carry it and run gpu-check.sh --build DIR there"
}

# preload_path: make MOCK a path LD_PRELOAD can hold (ld.so splits it at
# spaces and colons): a link in a new directory when it is not.
preload_path () {
    local d
    [[ $MOCK =~ [[:space:]:] ]] || return 0
    if ! d=$(mktemp -d "/tmp/gpu-check-mock.XXXXXX") || ! ln -s "$MOCK" "$d/nccl_mock.so"; then
        usage_error "cannot link the stand-in into /tmp (its path has a space or colon)"
    fi
    MOCK_LINK_DIR=$d
    MOCK=$d/nccl_mock.so
    log "stand-in: its path has a space or colon, preloading it through $MOCK"
}

# ---- the environment -------------------------------------------------------------

set_environment () {
    local v d ldp
    # No launcher around us: the single-rank steps bootstrap alone, the
    # others through ddp-local-run.
    for v in $(env | sed -n 's/^\(SLURM_[A-Za-z0-9_]*\|PMIX_[A-Za-z0-9_]*\|PMI_[A-Za-z0-9_]*\|OMPI_[A-Za-z0-9_]*\)=.*/\1/p'); do
        unset "$v"
    done
    unset WORLD_SIZE RANK LOCAL_RANK LOCAL_WORLD_SIZE NODE_RANK DDP_LOCAL_FD DDP_BOOTSTRAP
    export DDP_BACKEND=nccl
    export NCCL_SOCKET_IFNAME=${NCCL_SOCKET_IFNAME:-lo}
    export NCCL_IB_DISABLE=${NCCL_IB_DISABLE:-1}
    ldp=$BUILD/libjob/.libs
    [ -n "$LIBPATH" ] && ldp=$ldp:$LIBPATH
    [ -d "$BUILD/lib" ] && ldp=$ldp:$BUILD/lib
    [ -n "${LD_LIBRARY_PATH:-}" ] && ldp=$ldp:$LD_LIBRARY_PATH
    # Where CUDA's runtime usually is (the newest toolkit last).
    for d in /usr/local/cuda/lib64 /usr/local/cuda/targets/*-linux/lib \
             /usr/local/cuda-*/targets/*-linux/lib; do
        [ -d "$d" ] && ldp=$ldp:$d
    done
    export LD_LIBRARY_PATH=$ldp
    log "LD_LIBRARY_PATH=$LD_LIBRARY_PATH"
    log "NCCL_SOCKET_IFNAME=$NCCL_SOCKET_IFNAME NCCL_IB_DISABLE=$NCCL_IB_DISABLE CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-unset}"
    if [ "$STANDIN" = 1 ]; then
        preload_path
        export LD_PRELOAD=$MOCK${LD_PRELOAD:+:$LD_PRELOAD}
        # Two GPUs, communicators of several ranks, and NCCL 2.28.3's
        # out-of-place ncclAvg defect (doc/nccl.md).
        export MOCK_CUDA_DEVICES=2 MOCK_NCCL_PEERS=fake MOCK_NCCL_AVG_TAIL=3
        log "stand-in: LD_PRELOAD=$LD_PRELOAD MOCK_CUDA_DEVICES=2 MOCK_NCCL_PEERS=fake MOCK_NCCL_AVG_TAIL=3"
    fi
    # The one-GPU steps: the first GPU of CUDA_VISIBLE_DEVICES, else 0.
    ONE_GPU=${CUDA_VISIBLE_DEVICES:-0}
    ONE_GPU=${ONE_GPU%%,*}
}

# Shared libraries the programs need and this machine lacks (ldd, if any).
missing_libraries () {
    command -v ldd >/dev/null 2>&1 || return 0
    ldd "$P_nccl_check" "$P_nccl_bench" 2>&1 | grep 'not found' | sort -u |
        sed 's/^[[:space:]]*//'
}

# How a rank gets its own UTS namespace: NS=(unshare -u) as root, else a
# user namespace if the kernel allows it, else NS=() and NS_WHY says why.
choose_namespace () {
    NS_WHY=
    if unshare -u true 2>/dev/null; then
        NS=(unshare -u)
    elif unshare -r -u true 2>/dev/null; then
        NS=(unshare -r -u)
    else
        NS=()
        NS_WHY="cannot create a UTS namespace (unshare -u and unshare -r -u fail): run as root"
    fi
    log "UTS namespaces: ${NS[*]:-none ($NS_WHY)}"
}

# ---- running a step ----------------------------------------------------------------

# limit_for WANT: WANT seconds, or less where the budget has less left
# (5 s kept back); 0 when under 10 s are left.
limit_for () {
    local left=$(( BUDGET - ($(now_ms) - T0) / 1000 - 5 ))
    if (( left < 10 )); then
        echo 0
    elif (( $1 < left )); then
        echo "$1"
    else
        echo "$left"
    fi
}

# run NAME LIMIT CMD...: run CMD in the step's directory SD, stdout and
# stderr to SD/out and SD/err, killed after LIMIT s.  Sets RC and MS.
run () {
    local name=$1 limit=$2 t
    shift 2
    quote_args "$@" >"$SD/cmd"
    log "$name: $* (limit $limit s)"
    t=$(now_ms)
    (cd "$SD" && exec timeout -k 5 "$limit" "$@") >"$SD/out" 2>"$SD/err"
    RC=$?
    MS=$(( $(now_ms) - t ))
    CUT=0
    # 124: timeout's (or ddp-local-run's) limit; 137: killed after it.
    if (( RC == 124 || (RC == 137 && MS >= limit * 1000) )); then
        CUT=1
    fi
    log "$name: exit status $RC after $(fmt_ms "$MS") s$( ((CUT)) && echo ": it ran into its limit of $limit s")"
}

# quote_args ARG...: the command line, each word quoted for sh where needed.
quote_args () {
    local a out=""
    for a in "$@"; do
        if [[ $a =~ ^[A-Za-z0-9_./=:,@%+-]+$ ]]; then
            out+="$a "
        else
            out+="'${a//\'/\'\\\'\'}' "
        fi
    done
    printf '%s\n' "${out% }"
}

# single NAME LIMIT PROG ARGS...: PROG as one process (no launcher).
single () {
    local name=$1 limit=$2
    shift 2
    run "$name" "$limit" env DDP_BOOTSTRAP=single "$@"
}

# ranks NAME LIMIT N NODES NS(0|1) [VAR=VALUE...] -- PROG ARGS...: N ranks
# under ddp-local-run in NODES simulated nodes; with NS=1 each rank in its
# own UTS namespace, host name and NCCL_HOSTID h<RANK>, all on one GPU.
# Rank r writes SD/rank<r>.out and .err.
ranks () {
    local name=$1 limit=$2 n=$3 nodes=$4 ns=$5 wrap
    local -a envs=(env)
    shift 5
    while [ $# -gt 0 ] && [ "$1" != -- ]; do
        envs+=("$1")
        shift
    done
    shift
    wrap='exec "$@" >"rank$RANK.out" 2>"rank$RANK.err"'
    if [ "$ns" = 1 ]; then
        wrap='if command -v hostname >/dev/null; then hostname "h$RANK"; else echo "h$RANK" >/proc/sys/kernel/hostname; fi && test "$(uname -n)" = "h$RANK" && export NCCL_HOSTID="h$RANK" && '$wrap
        envs+=("CUDA_VISIBLE_DEVICES=$ONE_GPU")
        run "$name" "$limit" "${envs[@]}" "$P_ddp_local_run" -n "$n" -N "$nodes" \
            -t $(( limit - 3 )) -- "${NS[@]}" sh -c "$wrap" sh "$@"
    else
        run "$name" "$limit" "${envs[@]}" "$P_ddp_local_run" -n "$n" -N "$nodes" \
            -t $(( limit - 3 )) -- sh -c "$wrap" sh "$@"
    fi
}

# ---- results --------------------------------------------------------------------

declare -a R_NAME=() R_VERDICT=() R_TIME=() R_KEY=()
FAILED=0

# step_begin NAME TITLE: a new step; makes SD.  Returns 1 (recorded as not
# run) when the budget is spent.
step_begin () {
    STEP=$1
    STEP_TITLE=$2
    SD=$WORK/$1
    RC=0 CUT=0 MS=0
    if ! mkdir -p "$SD"; then
        result "NOT RUN" "cannot create $SD" "Not run: cannot create $SD."
        return 1
    fi
    if (( $(limit_for 3600) == 0 )); then
        result "NOT RUN" "the time budget (--budget $BUDGET s) is spent" \
            "Not run: the time budget of $BUDGET s was spent before it."
        return 1
    fi
    log "== $STEP: $STEP_TITLE"
    return 0
}

# not_run WHY STEP...: record every STEP as not run, for WHY.
not_run () {
    local why=$1
    shift
    MS=0
    for STEP in "$@"; do
        STEP_TITLE="not run"
        SD=$WORK/$STEP
        result "NOT RUN" "$why" "Not run: $why."
    done
}

# result VERDICT KEY DETAILS: record the current step.  DETAILS is markdown.
result () {
    R_NAME+=("$STEP")
    R_VERDICT+=("$1")
    R_TIME+=("$(fmt_ms "${MS:-0}")")
    R_KEY+=("$2")
    case $1 in PASS|SKIP) ;; *) FAILED=1 ;; esac
    log "$STEP: $1: $2"
    {
        printf '\n### %s: %s\n\n' "$STEP" "$STEP_TITLE"
        printf '**%s** (%s s): %s\n\n' "$1" "$(fmt_ms "${MS:-0}")" "$2"
        if [ -f "$SD/cmd" ]; then
            printf 'Command (in %s):\n\n```\n%s\n```\n\n' "$SD" "$(cat "$SD/cmd")"
        fi
        printf '%s\n' "$3"
    } >>"$WORK/details.md"
}

# excerpt FILE [LINES]: the last LINES (default 15) lines of FILE, fenced.
excerpt () {
    local n=${2:-15}
    if [ -s "$1" ]; then
        printf '\n`%s` (last %d lines):\n\n```\n%s\n```\n' "$(basename "$1")" "$n" "$(tail -n "$n" "$1")"
    fi
}

# rc_note: what a step's exit status says when it is not 0.
rc_note () {
    if (( CUT )); then
        printf 'cut at its time limit (exit status %s)' "$RC"
    elif (( RC != 0 )); then
        printf 'exit status %s' "$RC"
    fi
}

# ---- TAP (nccl_check) -----------------------------------------------------------

# tap_summary FILE: TAP_TEXT ("OK/PLAN", or what is wrong) and TAP_GOOD=1
# when FILE is a complete TAP run with a plan above 0 and no failure.
tap_summary () {
    local ok nok plan
    TAP_GOOD=0
    if [ ! -f "$1" ]; then
        TAP_TEXT="no output"
        return
    fi
    ok=$(count '^ok ' "$1")
    nok=$(count '^not ok ' "$1")
    plan=$(sed -n 's/^1\.\.\([0-9][0-9]*\).*/\1/p' "$1" | tail -n 1)
    if [ -z "$plan" ]; then
        TAP_TEXT="$ok passed, $nok failed, no plan (did not finish)"
    elif (( plan == 0 )); then
        TAP_TEXT="skipped: $(first_line '^1\.\.0' "$1")"
    elif (( nok > 0 || ok != plan )); then
        TAP_TEXT="$ok of $plan passed, $nok failed"
    else
        TAP_GOOD=1
        TAP_TEXT="$ok/$plan"
    fi
}

# tap_failures FILE: the first failures and their diagnostics, fenced.
tap_failures () {
    local lines
    lines=$(grep -E '^not ok |^# .*(FAILED|element|rc=|allocation)' "$1" 2>/dev/null | head -n 30)
    [ -n "$lines" ] && printf '\nFailures in `%s` (first 30 lines):\n\n```\n%s\n```\n' "$(basename "$1")" "$lines"
}

# check_result N: the verdict of nccl_check over N ranks' files (rank0.out
# ... or, for one process, out).
check_result () {
    local n=$1 r f key="" details="" good=1
    for (( r = 0; r < n; r++ )); do
        if (( n == 1 )); then f=$SD/out; else f=$SD/rank$r.out; fi
        tap_summary "$f"
        (( TAP_GOOD )) || good=0
        key+="${key:+; }rank $r: $TAP_TEXT"
        (( TAP_GOOD )) || details+=$(tap_failures "$f")$'\n'
        (( TAP_GOOD || n == 1 )) || details+=$(excerpt "$SD/rank$r.err" 10)$'\n'
    done
    if (( RC != 0 )); then
        good=0
        key+="; $(rc_note)"
    fi
    (( good )) || details+=$(excerpt "$SD/err" 10)$'\n'
    if (( good )); then
        result PASS "$key" "$(excerpt "$f" 3)"
    else
        result FAIL "$key" "$details"
    fi
}

# ---- the steps ------------------------------------------------------------------

step_probe () {
    local lim missing
    step_begin probe "the GPU, CUDA and libddp (nccl_check --probe)" || return 1
    missing=$(missing_libraries)
    if [ -n "$missing" ]; then
        MS=0
        result FAIL "shared libraries missing: $(cell "$missing")" \
            "The build's programs need libraries this machine lacks:

\`\`\`
$missing
\`\`\`

Carry them (ldd on the build machine says where they are) and give their folder with --lib-path DIR."
        return 1
    fi
    lim=$(limit_for 20)
    single probe "$lim" "$P_nccl_check" --probe
    PROBE_NDEV=$(sed -n 's/^\([0-9][0-9]*\) GPU(s)$/\1/p' "$SD/out")
    if (( RC != 0 )) || [ -z "$PROBE_NDEV" ]; then
        result FAIL "CUDA cannot use a GPU: $(cell "$(head -n 1 "$SD/out")"); $(rc_note)" \
            "nvidia-smi lists a GPU but CUDA cannot use it.$(excerpt "$SD/out")$(excerpt "$SD/err")"
        return 1
    fi
    CUDA_RT=$(sed -n 's/^CUDA runtime: //p' "$SD/out")
    CUDA_DRV=$(sed -n 's/^CUDA driver API: //p' "$SD/out")
    DDP_VERSION=$(sed -n 's/^libddp: //p' "$SD/out")
    DEV0=$(sed -n 's/^device 0: //p' "$SD/out")
    result PASS "$PROBE_NDEV GPU(s) in CUDA's view, device 0: $DEV0; CUDA runtime $CUDA_RT, driver API $CUDA_DRV; libddp $DDP_VERSION" \
        "$(excerpt "$SD/out")"
}

step_check1 () {
    local lim args=() what="nccl_check (full)"
    (( QUICK )) && args=(--quick) && what="nccl_check --quick"
    step_begin check-1 "$what, 1 rank: every collective, dtype, op and buffer kind" || return
    lim=$(limit_for 150)
    single check-1 "$lim" "$P_nccl_check" "${args[@]}"
    NCCL_LOADED=$(sed -n 's/^# nccl: \(loaded at run time: NCCL .*\)/\1/p' "$SD/out" | head -n 1)
    check_result 1
}

step_avg_probe () {
    local lim args=() raw ddp key
    step_begin avg-probe "out-of-place AVG: raw NCCL and libddp (nccl_bench --avg-probe)" || return
    (( QUICK )) && args=(--quick)
    lim=$(limit_for 45)
    single avg-probe "$lim" "$P_nccl_bench" --avg-probe "${args[@]}"
    NCCL_CODE=$(sed -n 's/^# avg-probe: .*NCCL \([0-9][0-9]*\)$/\1/p' "$SD/out")
    raw=$(sed -n 's/^# avg-probe rank 0: raw NCCL left elements unwritten in \([0-9]* of [0-9]*\) cases.*/\1/p' "$SD/out")
    ddp=$(sed -n 's/^# avg-probe rank 0: .*, libddp in \([0-9]* of [0-9]*\).*/\1/p' "$SD/out")
    if [ -z "$raw" ] || [ -z "$ddp" ]; then
        result FAIL "no summary line; $(rc_note)" "$(excerpt "$SD/out")$(excerpt "$SD/err")"
        return
    fi
    key="raw NCCL left the tail unwritten in $raw cases"
    case $raw in 0\ of*) key+=" (defect absent)" ;; *) key+=" (defect present)" ;; esac
    key+="; libddp in $ddp"
    if (( RC == 0 )) && [[ $ddp == 0\ of* ]]; then
        result PASS "$key" "$(excerpt "$SD/out" 40)"
    else
        result FAIL "$key; $(rc_note)" "$(excerpt "$SD/out" 40)$(excerpt "$SD/err")"
    fi
}

# have_namespaces several|two: true when ranks can have a UTS namespace each;
# else the step fails, saying why ("Several ranks ..." or "Two ranks ...").
have_namespaces () {
    [ ${#NS[@]} -gt 0 ] && return 0
    MS=0
    if [ "$1" = several ]; then
        result FAIL "not run: $NS_WHY" "Several ranks on one GPU need a UTS namespace each: $NS_WHY."
    else
        result FAIL "not run: $NS_WHY" "Two ranks on one GPU need a UTS namespace each: $NS_WHY."
    fi
    return 1
}

# step_check_one_gpu N: nccl_check --quick at N ranks on one GPU.
step_check_one_gpu () {
    local n=$1 lim
    step_begin "check-${n}x1gpu" "nccl_check --quick, $n ranks on GPU $ONE_GPU, one UTS namespace each" || return
    have_namespaces several || return
    lim=$(limit_for $(( n == 2 ? 60 : 90 )))
    ranks "$STEP" "$lim" "$n" "$n" 1 -- "$P_nccl_check" --quick
    check_result "$n"
}

# step_avg_one_gpu: the AVG defect's count at 2 ranks on one GPU (the 1-rank
# full check and avg-probe cover world size 1).
step_avg_one_gpu () {
    local lim
    step_begin avg-2x1gpu "nccl_check --count 1048579 --op avg, 2 ranks on GPU $ONE_GPU" || return
    have_namespaces several || return
    lim=$(limit_for 90)
    ranks "$STEP" "$lim" 2 2 1 -- "$P_nccl_check" --count 1048579 --op avg
    check_result 2
}

step_check_per_gpu () {
    local lim n=${PROBE_NDEV:-1}
    step_begin check-pergpu "nccl_check --quick, one rank per GPU" || return
    if (( n < 2 )); then
        MS=0
        result SKIP "one GPU here" "Skipped: CUDA sees one GPU."
        return
    fi
    lim=$(limit_for 90)
    # The launcher binds one GPU per rank from CUDA_VISIBLE_DEVICES, else
    # from the driver's list: name the n GPUs CUDA counted (the stand-in
    # has no driver to list them).
    if [ -n "${CUDA_VISIBLE_DEVICES+set}" ]; then
        ranks check-pergpu "$lim" "$n" 1 0 -- "$P_nccl_check" --quick
    else
        ranks check-pergpu "$lim" "$n" 1 0 "CUDA_VISIBLE_DEVICES=$(seq -s, 0 $((n - 1)))" \
            -- "$P_nccl_check" --quick
    fi
    check_result "$n"
}

step_bench () {
    local lim max=33554432 key="" op line f
    step_begin bench "nccl_bench --quick: libddp against raw NCCL, 1 rank" || return
    (( QUICK )) && max=4096
    lim=$(limit_for 60)
    single bench "$lim" "$P_nccl_bench" --quick --max-bytes "$max"
    [ -z "${NCCL_CODE:-}" ] && NCCL_CODE=$(sed -n 's/^# nccl_bench: .*NCCL \([0-9][0-9]*\).*/\1/p' "$SD/out")
    for op in allreduce bcast allgather; do
        # op bytes iters raw_us ddp_us ratio rawpipe_us ddppipe_us ratio busbw
        line=$(grep -E "^  $op +8 " "$SD/out" | head -n 1)
        [ -n "$line" ] || continue
        read -r -a f <<<"$line"
        key+="${key:+; }$op 8 B: raw ${f[3]} us, ddp ${f[4]} us (x${f[5]}), pipelined x${f[8]}"
    done
    if (( RC == 0 )) && [ -n "$key" ]; then
        result PASS "$key" "$(excerpt "$SD/out" 40)"
    else
        result FAIL "${key:-no table}; $(rc_note)" "$(excerpt "$SD/out" 40)$(excerpt "$SD/err")"
    fi
}

# names_rank1 TEXT: "yes" when TEXT names rank 1.
names_rank1 () {
    if [[ $1 =~ rank[s]?\ 1([^0-9]|$) ]]; then echo yes; else echo no; fi
}

# library_error FILE: libddp's first error line in FILE ("[ddp rank 0/2]
# error: ..."), else the first line that says error.
library_error () {
    local m
    m=$(first_line '^\[ddp rank [0-9]+/[0-9]+\] error: ' "$1")
    [ -n "$m" ] || m=$(first_line 'error|Error|ERROR' "$1")
    printf '%s' "$m"
}

# launcher_says: ddp-local-run's last line.
launcher_says () {
    tail -n 1 "$SD/err" 2>/dev/null
}

# step_kill OP: rank 1 of 2 kills itself in a loop of OP.
step_kill () {
    local op=$1 lim line msg key mockenv=()
    step_begin "kill-$op" "kill -9 of rank 1 in a loop of ${op}s, 2 ranks on one GPU, DDP_TIMEOUT=$FAULT_TIMEOUT" || return
    have_namespaces two || return
    # The stand-in: the ranks see each other through files; rank 1's death
    # becomes NCCL's remote error on rank 0 once rank 0 waits for it.
    (( STANDIN )) && mkdir -p "$SD/peers" && mockenv=(MOCK_NCCL_PEER_DIR="$SD/peers")
    lim=$(limit_for 30)
    ranks "$STEP" "$lim" 2 2 1 DDP_TIMEOUT=$FAULT_TIMEOUT "${mockenv[@]}" -- \
        "$P_ddp_fault" kill 1 "$op"
    # "rank 0: failed after N calls in S s: CODE (strerror): WHY" (WHY:
    # ddp_last_error, which the library's own message repeats)
    line=$(first_line '^rank 0: failed after ' "$SD/rank0.out")
    msg=$(library_error "$SD/rank0.err")
    if [[ $line =~ ^rank\ 0:\ failed\ after\ ([0-9]+)\ calls\ in\ ([0-9.]+)\ s:\ (-?[0-9]+)\ \(([^\)]*)\)(:\ .*)?$ ]]; then
        local calls=${BASH_REMATCH[1]} secs=${BASH_REMATCH[2]} code=${BASH_REMATCH[3]} why=${BASH_REMATCH[4]}
        key="survivor: $code ($why) after $secs s; names rank 1: $(names_rank1 "$msg"); message: $(cell "${msg:-none}")"
        # It must fail after the kill (call 200 on), within the timeout,
        # naming rank 1.
        if (( calls >= 200 )) && [[ $code == -8 || $code == -7 ]] &&
           (( $(tenths "$secs") >= 0 && $(tenths "$secs") <= (FAULT_TIMEOUT + 1) * 10 )) &&
           [ "$(names_rank1 "$msg")" = yes ]; then
            result PASS "$key" "Launcher: $(launcher_says)$(excerpt "$SD/rank0.out" 5)$(excerpt "$SD/rank0.err" 10)"
            return
        fi
        result FAIL "$key (after $calls calls; want DDP_EPEER or DDP_ETIMEDOUT after call 200, within $((FAULT_TIMEOUT + 1)) s, naming rank 1)" \
            "$(excerpt "$SD/rank0.out")$(excerpt "$SD/rank0.err")$(excerpt "$SD/err")"
        return
    fi
    result FAIL "the survivor did not report a failure; $(rc_note)" \
        "$(excerpt "$SD/rank0.out")$(excerpt "$SD/rank0.err")$(excerpt "$SD/rank1.err")$(excerpt "$SD/err")"
}

step_skip () {
    local lim exitf msg key mockenv=()
    step_begin skip "rank 1 never enters a barrier, 2 ranks on one GPU, DDP_TIMEOUT=$FAULT_TIMEOUT" || return
    have_namespaces two || return
    # The stand-in: the ranks see each other through files; rank 0's
    # barrier waits for rank 1 as NCCL's would.
    (( STANDIN )) && mkdir -p "$SD/peers" && mockenv=(MOCK_NCCL_PEER_DIR="$SD/peers")
    lim=$(limit_for 30)
    ranks skip "$lim" 2 2 1 DDP_TIMEOUT=$FAULT_TIMEOUT \
        DDP_VICTIM_SKIP_SLEEP=$(( FAULT_TIMEOUT + 3 )) "${mockenv[@]}" -- \
        "$P_ddp_victim" skip "$SD"
    # exit.0: "CALL CODE SECONDS NODE"
    exitf=$(cat "$SD/exit.0" 2>/dev/null)
    msg=$(library_error "$SD/rank0.err")
    if [[ $exitf =~ ^ddp_barrier\ (-?[0-9]+)\ ([0-9.]+)\  ]]; then
        local code=${BASH_REMATCH[1]} secs=${BASH_REMATCH[2]}
        key="survivor: ddp_barrier $code after $secs s; names rank 1: $(names_rank1 "$msg"); message: $(cell "${msg:-none}")"
        if [[ $code == -7 || $code == -8 ]] &&
           (( $(tenths "$secs") <= (FAULT_TIMEOUT + 2) * 10 )) &&
           [ "$(names_rank1 "$msg")" = yes ]; then
            result PASS "$key" "$(excerpt "$SD/rank0.out" 5)$(excerpt "$SD/rank0.err" 10)"
            return
        fi
        result FAIL "$key (want DDP_ETIMEDOUT within $((FAULT_TIMEOUT + 2)) s, naming rank 1)" \
            "$(excerpt "$SD/rank0.out")$(excerpt "$SD/rank0.err")$(excerpt "$SD/err")"
        return
    fi
    result FAIL "the survivor did not report a failed barrier (exit.0: ${exitf:-none}); $(rc_note)" \
        "$(excerpt "$SD/rank0.out")$(excerpt "$SD/rank0.err")$(excerpt "$SD/err")"
}

step_abort () {
    local lim line
    step_begin abort "rank 1 calls ddp_abort(7) in a barrier loop, 2 ranks on one GPU" || return
    have_namespaces two || return
    lim=$(limit_for 30)
    ranks abort "$lim" 2 2 1 DDP_TIMEOUT=$FAULT_TIMEOUT -- "$P_ddp_fault" abort 1
    line=$(first_line '^rank 0: failed after ' "$SD/rank0.out")
    if (( RC == 7 )); then
        result PASS "job status 7 after $(fmt_ms "$MS") s (init included); survivor: ${line:-killed by the launcher first}" \
            "Launcher: $(launcher_says)$(excerpt "$SD/rank0.out" 5)$(excerpt "$SD/rank0.err" 10)"
    else
        result FAIL "job status $RC, want 7 (the ddp_abort status); $(rc_note)" \
            "$(excerpt "$SD/err")$(excerpt "$SD/rank0.out")$(excerpt "$SD/rank0.err")$(excerpt "$SD/rank1.err")"
    fi
}

step_train () {
    local lim same epoch backend r last key=""
    step_begin train "contrib/examples/train, 2 ranks on one GPU" || return
    if [ -z "$P_train" ]; then
        MS=0
        result SKIP "contrib/examples/train is not built" "Skipped: no contrib/examples/train in the build."
        return
    fi
    have_namespaces two || return
    lim=$(limit_for 45)
    ranks train "$lim" 2 2 1 -- "$P_train" --data "$SD/train-data.bin" \
        --checkpoint "$SD/train-checkpoint.bin"
    same=$(first_line 'parameters identical on all' "$SD/rank0.err")
    epoch=$(grep -E 'epoch [0-9]+ loss' "$SD/rank0.err" 2>/dev/null | tail -n 1)
    backend=$(first_line 'training on' "$SD/rank0.err")
    if (( RC == 0 )) && [[ $same == *": yes" ]] && [[ $backend == *"backend nccl"* ]]; then
        result PASS "${epoch##*] }; ${same##*] }" "$(excerpt "$SD/rank0.err" 12)"
        return
    fi
    # What each rank said last (libddp's lines start "[ddp rank R/N]").
    for r in 0 1; do
        last=$(grep -E '^\[ddp rank' "$SD/rank$r.err" 2>/dev/null | tail -n 1)
        key+="rank $r: ${last:-nothing}; "
    done
    result FAIL "$key$(rc_note)${backend:+; ${backend##*] }}" \
        "$(excerpt "$SD/err")$(excerpt "$SD/rank0.err")$(excerpt "$SD/rank1.err")"
}

# ---- the machine and the report -------------------------------------------------

# machine_info: GPU list, driver and CUDA version from nvidia-smi.
machine_info () {
    GPU_LIST=
    DRIVER=
    SMI_CUDA=
    if (( STANDIN )); then
        GPU_LIST="the stand-in's (tests/progs/nccl_mock.c), no GPU"
        DRIVER="none (stand-in)"
        SMI_CUDA="none (stand-in)"
        return
    fi
    GPU_LIST=$("$NVSMI" --query-gpu=index,name,memory.total,pci.bus_id --format=csv,noheader 2>&1)
    DRIVER=$("$NVSMI" --query-gpu=driver_version --format=csv,noheader 2>/dev/null | head -n 1)
    SMI_CUDA=$("$NVSMI" 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' | head -n 1)
    SMI_CUDA=${SMI_CUDA#CUDA Version: }
    log "GPUs: $GPU_LIST"
    log "driver $DRIVER, CUDA (driver) $SMI_CUDA"
}

# nccl_library: the file libnccl.so.2 resolves to (ldd), if known.
nccl_library () {
    local f
    command -v ldd >/dev/null 2>&1 || { echo "unknown (no ldd)"; return; }
    f=$(ldd "$P_nccl_bench" 2>/dev/null | sed -n 's/^[[:space:]]*libnccl\.so[^ ]* => \([^ ]*\) .*/\1/p' | head -n 1)
    if [ -n "$f" ]; then
        echo "$f -> $(readlink -f "$f")"
    else
        echo "unknown"
    fi
}

write_report () {
    local i verdict="PASS" tmp=$OUT.tmp.$$
    (( FAILED )) && verdict="FAIL"
    [ -n "${1:-}" ] && verdict="$1"
    {
        printf '# libddp GPU check: %s\n\n' "$verdict"
        if (( STANDIN )); then
            printf '**Stand-in run**: every program ran against tests/progs/nccl_mock.so, not a GPU.'
            printf ' It tests gpu-check.sh itself; its collectives of several ranks move only each'
            printf " rank's own data, so the multi-rank checks and the training fail there.\n\n"
        fi
        printf -- '- date: %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')"
        printf -- '- host: %s (%s, kernel %s)\n' "$(uname -n)" "$(uname -m)" "$(uname -r)"
        printf -- '- command: `%s`\n' "$CMDLINE"
        printf -- '- build: %s (libddp %s)\n' "$BUILD" "${DDP_VERSION:-unknown}"
        printf -- '- work directory (every output): %s\n' "$WORK"
        printf -- '- GPUs: %s\n' "$(cell "${GPU_LIST:-unknown}")"
        printf -- '- driver: %s; CUDA of the driver (nvidia-smi): %s\n' "${DRIVER:-unknown}" "${SMI_CUDA:-unknown}"
        printf -- '- CUDA runtime: %s; driver API: %s\n' "${CUDA_RT:-unknown}" "${CUDA_DRV:-unknown}"
        printf -- '- NCCL: %s (%s)\n' "$(nccl_version "${NCCL_CODE:-unknown}")" "$(nccl_library)"
        printf -- '- libddp %s\n' "${NCCL_LOADED:-did not say which NCCL it loaded (check-1 did not run or failed)}"
        printf -- '- environment: NCCL_SOCKET_IFNAME=%s NCCL_IB_DISABLE=%s CUDA_VISIBLE_DEVICES=%s; LD_LIBRARY_PATH=%s\n' \
            "$NCCL_SOCKET_IFNAME" "$NCCL_IB_DISABLE" "${CUDA_VISIBLE_DEVICES-unset}" "$LD_LIBRARY_PATH"
        printf -- '- run time: %s s of a %s s budget\n\n' "$(fmt_ms $(( $(now_ms) - T0 )))" "$BUDGET"
        printf '## Summary\n\n| step | verdict | seconds | key numbers |\n|---|---|---|---|\n'
        for (( i = 0; i < ${#R_NAME[@]}; i++ )); do
            printf '| %s | %s | %s | %s |\n' "${R_NAME[i]}" "${R_VERDICT[i]}" "${R_TIME[i]}" "$(cell "${R_KEY[i]}")"
        done
        printf '\n## Steps\n'
        cat "$WORK/details.md" 2>/dev/null
    } >"$tmp"
    if ! mv -f "$tmp" "$OUT"; then
        log "error: cannot write the report $OUT"
        return 1
    fi
    log "report: $OUT"
}

# no_gpu WHY: say so, leave a report, exit 77.
no_gpu () {
    log "no GPU here: $1; nothing to check (--stand-in tests this script without one)"
    {
        printf '# libddp GPU check: no GPU\n\n'
        printf -- '- date: %s\n- host: %s\n- %s\n' "$(date -u '+%Y-%m-%d %H:%M UTC')" "$(uname -n)" "$1"
    } >"$OUT" || log "error: cannot write the report $OUT"
    exit 77
}

# on_signal NAME NUMBER: the trap of SIGINT and SIGTERM.
# shellcheck disable=SC2317
on_signal () {
    log "interrupted by SIG$1: writing the report of the steps so far"
    FAILED=1
    write_report "INTERRUPTED (SIG$1)"
    exit $(( 128 + $2 ))
}

# ---- main ---------------------------------------------------------------------------

# need_tools: every command the script runs, or exit 2 naming the missing.
need_tools () {
    local t missing=""
    for t in timeout date od mktemp sed grep head tail sort cut tr du \
             readlink uname basename dirname env sh unshare; do
        command -v "$t" >/dev/null 2>&1 || missing+=" $t"
    done
    [ -z "$missing" ] || usage_error "missing commands:$missing (coreutils, grep, sed, util-linux)"
}

main () {
    local smi
    need_tools
    parse_args "$@"
    if [ -n "$PACK" ]; then
        pack "$PACK"
        exit 0
    fi
    if (( ! STANDIN )); then
        command -v "$NVSMI" >/dev/null 2>&1 ||
            no_gpu "no nvidia-smi ($NVSMI not found): no NVIDIA driver"
        smi=$("$NVSMI" -L 2>&1)
        grep -q '^GPU [0-9]' <<<"$smi" ||
            no_gpu "nvidia-smi lists no GPU: $(head -n 1 <<<"$smi")"
    fi
    T0=$(now_ms)
    if [ -z "$WORK" ]; then
        WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX") || usage_error "cannot create a work directory"
    fi
    mkdir -p "$WORK" || usage_error "cannot create $WORK"
    WORK=$(cd "$WORK" && pwd)
    : >"$WORK/details.md"
    log "work directory: $WORK; report: $OUT; budget $BUDGET s"
    trap 'on_signal INT 2' INT
    trap 'on_signal TERM 15' TERM
    trap '[ -z "$MOCK_LINK_DIR" ] || rm -rf "$MOCK_LINK_DIR"' EXIT
    find_programs
    set_environment
    choose_namespace
    machine_info
    if step_probe; then
        step_check1
        step_avg_probe
        step_check_one_gpu 2
        step_check_one_gpu 4
        step_avg_one_gpu
        step_check_per_gpu
        step_bench
        step_kill barrier
        step_kill allreduce
        step_skip
        step_abort
        step_train
    else
        not_run "the probe failed" check-1 avg-probe check-2x1gpu check-4x1gpu \
            avg-2x1gpu check-pergpu bench kill-barrier kill-allreduce skip abort train
    fi
    write_report || exit 1
    if (( FAILED )); then
        log "some steps failed: see $OUT"
        exit 1
    fi
    log "every step passed"
    exit 0
}

main "$@"
