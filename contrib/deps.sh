# contrib/deps.sh - the Debian 12 packages slurm-ddp needs, and a function
# that installs the missing ones.  Sourced by check.sh and quickstart.sh; the
# single list of what a fresh machine must get.

# Build: toolchain, autotools, Slurm's SPANK header, PMIx, Python's headers
# (the Python module ddp).
DDP_PKGS_BUILD="gcc g++ make autoconf automake libtool pkg-config libc6-dev
libslurm-dev libpmix-dev python3-dev"
# A test cluster (tests/cluster/ddp-test-cluster): Slurm's daemons and
# client, munge, and what the script calls.  With the build's, all that
# contrib/quickstart.sh installs.
DDP_PKGS_CLUSTER="slurm-wlm slurm-wlm-basic-plugins munge iproute2 procps
util-linux coreutils"
# The tests beside: the TAP tools, Open MPI (the peer the benchmarks
# measure against), gnuplot (the picture of the benchmark's node sweep,
# which t0600 checks; -nox: no X libraries), what the harness scripts
# call, pip's offline route for the Python module (venv, pip,
# setuptools, wheel: tests/t0740-python-pip.t), and nftables (t0806 drops
# one link's packets).
DDP_PKGS_TEST="$DDP_PKGS_CLUSTER sharness perl openmpi-bin libopenmpi-dev
gnuplot-nox man-db groff-base binutils bsdextrautils python3-venv python3-pip
python3-setuptools python3-wheel nftables"
# Optional: PyTorch for Debian's python3 (CPU; 1.13 on Debian 12), for the
# PyTorch example's cluster test (tests/t0730-python-torch.t), the tensor
# collectives' (t0750-python-tensors.t), the torch store's and backend's
# (t0760, t0770), which skip without it, saying so.  Installed when the
# archive has it; a machine whose archive lacks it gets the rest, with a
# warning.  Also in the Debian 13 root (contrib/debian13.sh: torch 2.6 on
# Python 3.13), whose stage runs t0760 and t0770 with it (FSDP there).
DDP_PKGS_OPTIONAL="python3-torch"

# ddp_apt ARGS...: apt-get ARGS (its output on stdout as apt-get gives
# it), waiting while another apt or dpkg holds its lock, as
# unattended-upgrades does for minutes after a fresh Debian machine boots:
# it says so once, naming the holder, and tries again every 5 s for at
# most DDP_APT_LOCK_WAIT seconds (default 900); then, or on any other
# error, it fails with apt-get's own message.
ddp_apt () {
    local limit=${DDP_APT_LOCK_WAIT:-900} waited=0 err holder
    err=$(mktemp) || return 1
    while :; do
        if apt-get "$@" 2>"$err"; then
            cat "$err" >&2
            rm -f "$err"
            return 0
        fi
        grep -q 'Could not get lock' "$err" && [ "$waited" -lt "$limit" ] || break
        if [ "$waited" = 0 ]; then
            holder=$(grep -o 'held by process [0-9]* ([^)]*)' "$err" | head -n 1)
            echo "deps: apt's lock is ${holder:-held by another process}; waiting for it (at most $limit s, DDP_APT_LOCK_WAIT)" >&2
        fi
        sleep 5
        waited=$((waited + 5))
    done
    [ "$waited" = 0 ] || echo "deps: gave up on apt's lock after $waited s" >&2
    cat "$err" >&2
    rm -f "$err"
    return 1
}

# ddp_install_deps [extra packages...]: apt-get install what is missing,
# then the optional packages (DDP_PKGS_OPTIONAL) the archive has.  Needs
# root; does nothing (and needs nothing) when all are installed, nor with
# DDP_DEPS_INSTALLED=1 (then a missing package is an error).  An
# optional package that cannot be installed is a warning, not a failure.
# DDP_DEPS_QUICKSTART=1: the build's and a test cluster's only, nothing
# optional (contrib/quickstart.sh).
ddp_install_deps () {
    local p missing="" optional="" want="$DDP_PKGS_BUILD $DDP_PKGS_TEST" extra=$DDP_PKGS_OPTIONAL
    if [ "${DDP_DEPS_QUICKSTART:-0}" = 1 ]; then
        want="$DDP_PKGS_BUILD $DDP_PKGS_CLUSTER"
        extra=
    fi
    for p in $want "$@"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
            || missing="$missing $p"
    done
    for p in $extra; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' \
            || optional="$optional $p"
    done
    if [ -z "$missing$optional" ]; then
        echo "deps: all packages present"
        return 0
    fi
    # check.sh installs everything first, then sets DDP_DEPS_INSTALLED=1:
    # its stages, two of which run at once, must not run apt (its lock).
    if [ "${DDP_DEPS_INSTALLED:-0}" = 1 ]; then
        [ -z "$missing" ] || {
            echo "deps: missing packages:$missing (not installed by check.sh's first step)" >&2
            return 1
        }
        return 0
    fi
    if [ "$(id -u)" != 0 ]; then
        [ -z "$missing" ] || {
            echo "deps: missing packages:$missing; run as root or install them" >&2
            return 1
        }
        echo "deps: optional packages not installed:$optional (the tests that need them skip)" >&2
        return 0
    fi
    export DEBIAN_FRONTEND=noninteractive
    ddp_apt update -qq || return 1
    if [ -n "$missing" ]; then
        echo "deps: installing:$missing"
        # shellcheck disable=SC2086
        ddp_apt install -y -qq --no-install-recommends $missing >/dev/null || return 1
    fi
    for p in $optional; do
        echo "deps: installing (optional): $p"
        ddp_apt install -y -qq --no-install-recommends "$p" >/dev/null \
            || echo "deps: warning: optional package $p not installed (the tests that need it skip)" >&2
    done
    return 0
}

# ddp_autoreconf TOP: regenerate TOP's configure, unless DDP_AUTORECONF=0
# (check.sh sets it once configure is made: its suite's tests run configure
# while its background stages build).
ddp_autoreconf () {
    [ "${DDP_AUTORECONF:-1}" = 0 ] || ( cd "$1" && autoreconf -fi >/dev/null 2>&1 )
}

# ddp_build TOP BUILD [configure args...]: configure and build TOP out of
# tree in BUILD (recreated, so the build starts clean).
ddp_build () {
    local top=$1 build=$2; shift 2
    ddp_autoreconf "$top" || { echo "autoreconf failed" >&2; return 1; }
    rm -rf "$build" && mkdir -p "$build" || return 1
    ( cd "$build" && "$top/configure" "$@" >configure.out 2>&1 ) \
        || { tail -n 30 "$build/configure.out" >&2; echo "configure failed (see $build/config.log)" >&2; return 1; }
    sed -n '/configuration summary/,$p' "$build/configure.out"
    make -C "$build" -j"$(nproc)" >"$build/make.out" 2>&1 \
        || { tail -n 40 "$build/make.out" >&2; echo "make failed" >&2; return 1; }
    if grep -q 'warning:' "$build/make.out"; then
        grep 'warning:' "$build/make.out" >&2
        echo "the build has compiler warnings" >&2
        return 1
    fi
}

# ddp_san_setup REPORTS: export the sanitizers' settings for running a tree
# built with --enable-sanitizers: every report a file in the directory
# REPORTS (emptied), leaks detected where LeakSanitizer can run (its probe,
# a program that leaks 33 bytes, built with gcc in REPORTS/lsan-probe:
# LSan needs ptrace of the process's own threads, refused under gVisor,
# seccomp or Yama scope 3; there leaks go unchecked and it says so).
# Suppressions: LSAN_SUPP (default contrib/lsan.supp: leaks in PMIx
# itself) and ASAN_SUPP (default none: errors inside PMIx).
# Usage: ddp_san_setup REPORTS [LSAN_SUPP [ASAN_SUPP]]
ddp_san_setup () {
    local reports=$1 top probe supp asupp
    top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    supp=${2:-$top/contrib/lsan.supp}
    asupp=${3:-}
    # verify_asan_link_order=0: some tests run programs that are not built
    # with ASan but load the instrumented libddp (the mpicc-built MPI
    # benchmark, the program t0510 compiles against the installed library,
    # `env` with the LD_PRELOADed NCCL mock); ASan refuses to start those
    # unless its runtime comes first, which only the check stops them for.
    # Every report goes to a file in REPORTS as well as failing its process:
    # a sanitizer error in a process whose failure a test expects (a killed
    # rank's peers, srun exiting non-zero) would otherwise pass.  REPORTS
    # and the suppressions must be where the test cluster's tasks see them
    # (in the source or build tree: ddp-test-cluster binds one under /tmp
    # into the nodes' private /tmp).  detect_leaks is left to its default
    # (on) when LSan works, so that a program may turn it off for itself
    # (mpi-bench: Open MPI's leaks).
    rm -rf "$reports" && mkdir -p "$reports/lsan-probe" || return 1
    probe=$reports/lsan-probe
    printf '#include <stdlib.h>\nvoid *volatile p;\nint main (void) { p = malloc (33); p = 0; return 0; }\n' >"$probe/leak.c"
    ASAN_OPTIONS="abort_on_error=0:exitcode=86:verify_asan_link_order=0"
    if gcc -fsanitize=address -g -o "$probe/leak" "$probe/leak.c" >"$probe/out" 2>&1; then
        ASAN_OPTIONS=detect_leaks=1 "$probe/leak" >"$probe/out" 2>&1 || true
    fi
    if grep -q 'Direct leak of 33 byte' "$probe/out"; then
        echo "== sanitizers: LeakSanitizer works here: detect_leaks=1"
    else
        echo "== sanitizers: LeakSanitizer cannot run here (ptrace refused?): detect_leaks=0"
        cat "$probe/out" 2>/dev/null
        ASAN_OPTIONS="detect_leaks=0:$ASAN_OPTIONS"
    fi
    rm -rf "$probe"
    export ASAN_OPTIONS="$ASAN_OPTIONS:log_path=$reports/asan:log_exe_name=1${asupp:+:suppressions=$asupp}"
    export LSAN_OPTIONS="suppressions=$supp:print_suppressions=0"
    export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1:log_path=$reports/ubsan:log_exe_name=1"
}

# ddp_san_reports REPORTS: print the sanitizer reports in REPORTS (the head
# of each); returns 1 if there is any, 0 if none.
ddp_san_reports () {
    local f
    [ -n "$(ls -A "$1" 2>/dev/null)" ] || return 0
    echo "== sanitizers: reports in $1:"
    for f in "$1"/*; do echo "--- $f"; head -n 60 "$f"; done
    return 1
}

# ddp_unit_tests BUILD: print the unit test binaries of a built tree, one a
# line: the tests beside each library (libjob/*/test/, spank/test/) and
# tool (contrib/ddp-run/test/), and the fuzz targets' replays (tests/fuzz/).
ddp_unit_tests () {
    find "$1/libjob" "$1/spank" "$1/contrib" "$1/tests/fuzz" -name '*.t' -type f -perm -u+x \
        2>/dev/null | sort
}

# ddp_tap_digest LOG [MAX_LINES]: what failed in a `ddp_prove -v --timer`
# log, short enough to read at the end of a long CI run whose start has
# scrolled away: prove's "Test Summary Report", then for each failed file
# its "not ok" lines with the 30 lines before (the commands and their
# output) and 8 after (sharness's echo of the failed test), or, when it has
# no "not ok" (a crash, a bad plan, a hang killed), the last 40 lines of its
# section.  MAX_LINES (default 400) bounds the whole digest.  Prints
# nothing when LOG has no failed file.  prove pads the file names of its
# report to one width (CI of 8b3e312 printed no digest for that):
# tests/t0540-check-digest.t runs it on a real prove log.
ddp_tap_digest () {
    local log=$1 max=${2:-400} files from
    # prove's own verdict is the log's last "Result:" (a test's verbose
    # output may hold another prove's), its report the last one before it.
    from=$(awk '/^Test Summary Report/ { t = NR } /^Result: / { r = $2; f = t }
                END { if (r == "FAIL" && f) print f }' "$log")
    [ -n "$from" ] || return 0
    files=$(tail -n "+$from" "$log" | sed -n 's/^\([^ ]*\)  *(Wstat: .*/\1/p')
    [ -n "$files" ] || return 0
    {
    echo "== digest of $log: what failed"
    tail -n "+$from" "$log"
    echo "$files" | while read -r f; do
        awk -v f="$f" '
            /^\[[0-9][0-9]:[0-9][0-9]:[0-9][0-9]\] / {
                if (on) exit
                if (index($0, "] " f " ") || $2 == f) { on = 1; print "== digest: " f }
                next
            }
            /^Test Summary Report/ { if (on) exit }
            on { l[++n] = $0 }
            END {
                shown = 0; last = 0
                for (i = 1; i <= n; i++) if (l[i] ~ /^not ok /) {
                    from = i - 30 > last ? i - 30 : last + 1
                    if (from > last + 1) print "   [...]"
                    to = i + 8 < n ? i + 8 : n
                    for (j = from; j <= to; j++) print l[j]
                    last = to; shown = 1
                }
                if (!shown) {
                    if (n > 40) print "   [... last 40 lines]"
                    for (j = (n > 40 ? n - 39 : 1); j <= n; j++) print l[j]
                }
            }' "$log"
    done
    } | head -n "$max" || true    # a cut digest is not a failure (pipefail)
}

# ddp_prove BUILD [prove options...]: run the whole suite of a built tree
# with prove from the source tree (the current directory): the unit tests,
# then the sharness tests in tests/ (run verbose, -v after ::, so the log
# shows what the cluster tests ran; unit tests ignore the flag).
# DDP_PROVE_SKIP: names of tests/*.t to leave out (the sanitizer stage's
# list, contrib/ci-extra.sh).
ddp_prove () {
    local build=$1 t tests=
    shift
    for t in tests/*.t; do
        case " ${DDP_PROVE_SKIP:-} " in *" ${t#tests/} "*) continue ;; esac
        tests="$tests $t"
    done
    # shellcheck disable=SC2046,SC2086
    prove "$@" $(ddp_unit_tests "$build") $tests :: -v
}
