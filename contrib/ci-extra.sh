#!/bin/bash
# contrib/ci-extra.sh - the checks beyond the main suite (issue 6):
#
#   san       build with AddressSanitizer + UndefinedBehaviorSanitizer
#             (configure --enable-sanitizers; the SPANK plugin gets UBSan
#             only) and run the suite, cluster tests included, with prove;
#             any sanitizer report anywhere fails the stage.  Left out (to
#             keep check.sh under 25 minutes; they run in the main suite):
#             SAN_SKIP, the tests that mostly wait on Slurm (requeue
#             credential windows, KillWait, time-limit signals) or time the
#             benchmark
#   valgrind  memcheck over every unit test binary (a plain build):
#             no error, nothing definitely lost
#   static    cppcheck and gcc -fanalyzer over spank/ and libjob/
#   fuzz      the libFuzzer targets of tests/fuzz/ (clang), each for a short
#             fixed time (8 s) from its committed corpus.  New inputs land in
#             build-fuzz/work_NAME; to keep the ones that add coverage:
#             build-fuzz/fuzz_NAME -merge=1 tests/fuzz/corpus/NAME \
#                 build-fuzz/work_NAME
#             (`make check` replays every corpus: tests/fuzz/replay.c)
#
# Usage: contrib/ci-extra.sh [STAGE...]      (default: all four, in order)
#        contrib/ci-extra.sh fuzz [SECONDS]  (each target SECONDS, default 8;
#                                             e.g. `fuzz 600` on demand)
#
# For a fresh Debian 12 machine, as root (it installs what it needs through
# contrib/deps.sh).  Prints PASS/FAIL per stage and a summary; exits non-zero
# if any stage failed.  Builds go to build-san/, build-vg/, build-static/ and
# build-fuzz/ in the source tree (recreated each run), logs to
# build-extra-logs/ ($DDP_EXTRA_LOGS when set: check.sh runs two of these
# at once, each with its own).  DDP_VG_BUILD=TREE: valgrind runs the unit
# tests of that built tree (a plain build, such as check.sh's) instead of
# building build-vg/.  DDP_AUTORECONF=0: configure is not regenerated
# (check.sh: a suite beside this reads it).
#
# LeakSanitizer: it needs ptrace of the process's own threads (its
# StopTheWorld).  On this project's machines (a VM with a normal kernel, no
# Yama) that works, also inside the test cluster's job tasks, so leaks are
# detected (detect_leaks=1) everywhere.  Where ptrace is refused (gVisor,
# seccomp, a container without CAP_SYS_PTRACE and Yama scope 3) LSan would
# die with "LeakSanitizer has encountered a fatal error" at every exit and
# turn every test red; the probe (ddp_san_setup, contrib/deps.sh) detects
# that case and then runs with detect_leaks=0 and says so, instead of
# failing on the sandbox.
set -u
set -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/contrib/deps.sh"

logs=${DDP_EXTRA_LOGS:-$top/build-extra-logs}
fuzz_secs=8
SAN_SKIP="t0160-spank-jobs.t t0600-bench.t t0710-example-stop.t"
stages=""
while [ $# -gt 0 ]; do
    case $1 in
        san|valgrind|static|fuzz) stages="$stages $1" ;;
        all) stages="$stages san valgrind static fuzz" ;;
        [0-9]*) fuzz_secs=$1 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "ci-extra: unknown stage '$1' (san valgrind static fuzz all)" >&2; exit 2 ;;
    esac
    shift
done
[ -n "$stages" ] || stages="san valgrind static fuzz"

results=""
failed=0
t_all=$(date +%s)

# stage_end NAME RC START: record and print the verdict of one stage.
stage_end () {
    local verdict=PASS
    [ "$2" = 0 ] || { verdict=FAIL; failed=1; }
    results="$results
  $verdict  $1 ($(( $(date +%s) - $3 )) s)"
    echo "== ci-extra: $1: $verdict ($(( $(date +%s) - $3 )) s)"
}

# make_vars BUILD VAR...: print the values make has for VARs in BUILD
# (flags configure found: PMIX_CFLAGS, SLURM_CPPFLAGS, ...).
make_var () {
    make -s -C "$1" --no-print-directory -f Makefile -f - print-var V="$2" <<'EOF'
print-var:
	@echo $($(V))
EOF
}

# ---------------------------------------------------------------- san ----
stage_san () {
    local build=$top/build-san san_logs rc=0 state
    echo "== ci-extra: san: build ($build)"
    ddp_build "$top" "$build" --enable-sanitizers --enable-werror || return 1
    make -C "$build" -j2 check TESTS= >"$logs/san-make-check.out" 2>&1 \
        || { tail -n 40 "$logs/san-make-check.out"; return 1; }

    san_logs=$logs/san-reports
    ddp_san_setup "$san_logs" || return 1

    export DDP_SRC_DIR=$top DDP_BUILD_DIR=$build DDP_REQUIRE_CLUSTER=1
    # The PyTorch example's test (t0730) runs here too when python3-torch
    # is installed (torch with the ASan runtime and libstdc++ preloaded: about
    # 55 s instead of 30).
    if dpkg-query -W -f='${Status}' python3-torch 2>/dev/null | grep -q 'install ok installed'; then
        export DDP_REQUIRE_TORCH=1
    fi
    state=$build/tests/.cluster
    # However the run ends, stop the shared test cluster (as check.sh does).
    trap 'if [ -f "'"$state"'" ]; then "'"$top"'/tests/cluster/ddp-test-cluster" stop "$(cat "'"$state"'")" || true; rm -f "'"$state"'" "'"$state"'.etc"; fi' EXIT
    echo "== ci-extra: san: the whole suite under ASan+UBSan"
    echo "== ci-extra: san: left out (run in the main suite): $SAN_SKIP"
    ( cd "$top" && DDP_PROVE_SKIP=$SAN_SKIP ddp_prove "$build" -v --timer ) \
        >"$logs/san-prove.out" 2>&1 || rc=1
    tail -n 25 "$logs/san-prove.out"
    [ $rc = 0 ] || grep -E '^(not ok|Bail out)|Failed|Wstat' "$logs/san-prove.out" | head -n 40
    if [ -f "$state" ]; then
        "$top/tests/cluster/ddp-test-cluster" stop "$(cat "$state")" || rc=1
        rm -f "$state" "$state.etc"
    fi
    trap - EXIT
    unset ASAN_OPTIONS LSAN_OPTIONS UBSAN_OPTIONS DDP_REQUIRE_CLUSTER
    ddp_san_reports "$san_logs" || rc=1
    return $rc
}

# ----------------------------------------------------------- valgrind ----
stage_valgrind () {
    local build=${DDP_VG_BUILD:-$top/build-vg} t n=0 bad=0 out
    if [ -n "${DDP_VG_BUILD:-}" ]; then
        echo "== ci-extra: valgrind: the unit tests of $build (DDP_VG_BUILD)"
    else
        echo "== ci-extra: valgrind: build ($build)"
        ddp_build "$top" "$build" --enable-werror || return 1
    fi
    make -C "$build" -j2 check TESTS= >"$logs/vg-make-check.out" 2>&1 \
        || { tail -n 40 "$logs/vg-make-check.out"; return 1; }
    mkdir -p "$logs/valgrind"
    for t in $(ddp_unit_tests "$build"); do
        [ -x "$t" ] || continue
        n=$((n + 1))
        out=$logs/valgrind/$(basename "$t").log
        if ( cd "$build/tests" && valgrind -q --error-exitcode=99 \
                 --leak-check=full --errors-for-leak-kinds=definite \
                 --show-leak-kinds=definite --track-origins=yes \
                 --suppressions="$top/contrib/valgrind.supp" \
                 --log-file="$out.vg" "$t" ) >"$out" 2>&1; then
            echo "ok $n - valgrind $(basename "$t")"
        else
            echo "not ok $n - valgrind $(basename "$t") (exit $?)"
            grep -E '^not ok' "$out" | head -n 10
            head -n 60 "$out.vg"
            bad=1
        fi
    done
    [ $n -gt 0 ] || { echo "no unit test binary found in $build"; return 1; }
    return $bad
}

# ------------------------------------------------------------- static ----
# -I options for libjob's folders (ddp.h at the top, one folder a library),
# relative to the source tree.
lib_includes () {
    local d
    echo -Ilibjob
    for d in "$top"/libjob/*/; do
        [ -d "$d" ] && echo "-Ilibjob/$(basename "$d")"
    done
}

# A configured (not necessarily built) tree, for config.h and the flags.
configured_tree () {
    local b
    for b in "$top/build-static" "$top/build-san" "$top/build-vg"; do
        [ -f "$b/config.h" ] && { echo "$b"; return 0; }
    done
    b=$top/build-static
    ddp_autoreconf "$top" || return 1
    rm -rf "$b" && mkdir -p "$b" && ( cd "$b" && "$top/configure" >configure.out 2>&1 ) \
        || return 1
    echo "$b"
}

stage_static () {
    local build=$top/build-static srcs rc=0 fa d
    # cppcheck reads every C file of spank/ and libjob/ with config.h and the
    # project's include paths.  Not CUDA's: cppcheck stops at their
    # "#error UNKNOWN COMPILER"; it copes with the unknown NCCL types.
    # --library=python: its knowledge of Python's macros (Py_RETURN_NONE
    # returns), which the Python module's files use.
    echo "== ci-extra: static: configure ($build, gcc -fanalyzer)"
    ddp_autoreconf "$top" || { echo "autoreconf failed"; return 1; }
    rm -rf "$build" && mkdir -p "$build"
    ( cd "$build" && "$top/configure" --enable-werror CFLAGS="-g -O2 -fanalyzer" \
          >configure.out 2>&1 ) || { tail -n 30 "$build/configure.out"; return 1; }
    srcs=$(cd "$top" && find spank libjob -name '*.c' -not -path '*/test/*' | sort)

    echo "== ci-extra: static: $(cppcheck --version) on $(echo $srcs | wc -w) files"
    # shellcheck disable=SC2086
    if ( cd "$top" && cppcheck -q -j2 --std=c11 --enable=warning,performance,portability \
             --error-exitcode=1 --inline-suppr --library=python -I"$build" $(lib_includes) -Ispank \
             -DHAVE_CONFIG_H --suppress=missingIncludeSystem \
             --template='{file}:{line}: {severity} ({id}): {message}' \
             $srcs ) >"$logs/cppcheck.out" 2>&1; then
        echo "ok - cppcheck"
    else
        echo "not ok - cppcheck"; cat "$logs/cppcheck.out"; rc=1
    fi

    # gcc -fanalyzer: compile libjob/ and spank/ exactly as the build does
    # (same files, flags and conditionals), with -fanalyzer and -Werror.
    echo "== ci-extra: static: gcc -fanalyzer (libjob/, spank/)"
    : >"$logs/fanalyzer.out"
    fa=0
    for d in libjob spank; do
        make -C "$build/$d" -j2 -k V=1 >>"$logs/fanalyzer.out" 2>&1 || fa=1
    done
    if grep -q 'warning:' "$logs/fanalyzer.out" || [ $fa != 0 ]; then
        echo "not ok - gcc -fanalyzer"
        grep -E 'warning:|error:|Error [0-9]' "$logs/fanalyzer.out"
        rc=1
    else
        echo "ok - gcc -fanalyzer ($(grep -c '^libtool: compile: .*-fanalyzer.*-fPIC' \
             "$logs/fanalyzer.out") files)"
    fi
    return $rc
}

# --------------------------------------------------------------- fuzz ----
# Each tests/fuzz/fuzz_NAME.c says which sources it needs in a line
#   /* fuzz-sources: spank/sp_strint.c ... */
stage_fuzz () {
    local cfg build=$top/build-fuzz f name srcs rc=0 corpus work pmix slurm
    cfg=$(configured_tree) || { echo "configure failed"; return 1; }
    pmix=$(make_var "$cfg" PMIX_CFLAGS)
    slurm=$(make_var "$cfg" SLURM_CPPFLAGS)
    rm -rf "$build" && mkdir -p "$build"
    for f in "$top"/tests/fuzz/fuzz_*.c; do
        [ -f "$f" ] || continue
        name=$(basename "$f" .c)
        name=${name#fuzz_}
        srcs=$(sed -n 's|.*fuzz-sources:\(.*\)\*/.*|\1|p' "$f")
        # shellcheck disable=SC2086
        if ! ( cd "$top" && clang -g -O1 -fsanitize=fuzzer,address,undefined \
                 -fno-sanitize-recover=undefined -I"$cfg" $(lib_includes) -Ispank $pmix $slurm \
                 -o "$build/fuzz_$name" "$f" $srcs -lm -pthread ) \
                 >"$logs/fuzz_$name.build" 2>&1; then
            echo "not ok - fuzz_$name: build failed"; cat "$logs/fuzz_$name.build"; rc=1
            continue
        fi
        corpus=$top/tests/fuzz/corpus/$name
        work=$build/work_$name
        mkdir -p "$work"
        [ -d "$corpus" ] || { echo "not ok - fuzz_$name: no corpus in $corpus"; rc=1; continue; }
        # New inputs go to the work directory (first); the committed
        # corpus is read only.  -timeout: one input may take 5 s at most.
        if ( cd "$build" && ASAN_OPTIONS=detect_leaks=1 "./fuzz_$name" \
                 -max_total_time="$fuzz_secs" -timeout=5 -rss_limit_mb=1024 \
                 -print_final_stats=1 "$work" "$corpus" ) >"$logs/fuzz_$name.out" 2>&1; then
            echo "ok - fuzz_$name: $(grep -Eo 'stat::number_of_executed_units: *[0-9]+' \
                 "$logs/fuzz_$name.out" | grep -Eo '[0-9]+$') runs in ${fuzz_secs} s," \
                 "$(ls "$work" | wc -l) new inputs"
        else
            echo "not ok - fuzz_$name: crash (reproducer in $build)"
            grep -A 40 -E '^==[0-9]+==ERROR|runtime error|deadly signal' \
                "$logs/fuzz_$name.out" | head -n 60
            rc=1
        fi
    done
    return $rc
}

# ---------------------------------------------------------------- main ----
extra_pkgs="valgrind cppcheck clang libclang-rt-14-dev"
ddp_install_deps $extra_pkgs || { echo "== ci-extra: FAIL (dependencies)"; exit 1; }
rm -rf "$logs" && mkdir -p "$logs"

for s in $stages; do
    t0=$(date +%s)
    echo "== ci-extra: $s"
    "stage_$s"
    stage_end "$s" $? "$t0"
done

echo "== ci-extra: summary (logs in $logs):$results"
echo "== ci-extra: took $(( $(date +%s) - t_all )) s"
if [ $failed != 0 ]; then
    echo "== ci-extra: FAIL"
    exit 1
fi
echo "== ci-extra: PASS"
