#!/bin/bash
# contrib/debian13.sh - build and test slurm-ddp against the Slurm and PMIx of
# Debian 13 (trixie: Slurm 24.11, PMIx 5, Open MPI 5), from a Debian 12 host.
#
#   contrib/debian13.sh rootfs       make the root file system if it is
#                                    missing or stale; print its path
#   contrib/debian13.sh check [ARGS] build a copy of the source tree inside
#                                    it (build-debian13/src, built in
#                                    build-debian13/obj) and run the whole
#                                    suite (unit and cluster tests) with
#                                    prove; ARGS go to prove instead (test
#                                    files, relative to the tree: a part).
#                                    DDP_DEBIAN13_SANITIZE=1: built with
#                                    --enable-sanitizers (ASan+UBSan), run
#                                    with contrib/deps.sh's ddp_san_setup,
#                                    contrib/{lsan,asan}-debian13.supp; any
#                                    report fails it (the reports in
#                                    build-debian13/san-reports)
#   contrib/debian13.sh build        only the build of `check` (then
#                                    DDP_DEBIAN13_PREBUILT=1 makes `check`
#                                    test that build instead of making one;
#                                    check.sh builds in the background)
#   contrib/debian13.sh run CMD...   run CMD inside it, in the source tree
#   contrib/debian13.sh versions     print Slurm's, PMIx's and Open MPI's
#                                    versions inside it
#
# The root file system is made once from Debian's archive with mmdebstrap
# (minbase and the packages of contrib/deps.sh) and kept in
# $DDP_DEBIAN13_CACHE (default /var/cache/slurm-ddp/debian13).  It is made
# anew when stale: when the package list or this script's recipe changed
# (a stamp holds their hash), or when it is older than
# $DDP_DEBIAN13_MAX_AGE days (default 7: Debian's point and security
# updates).  A new one is made beside the old and swapped in, under a lock,
# so concurrent runs never see half of one.
#
# Nothing is mounted outside a private mount namespace: each command runs in
# `unshare -m`, which binds the root onto itself (the test cluster's
# `unshare -m` needs a mount point to make private), /proc, /sys (with
# /sys/fs/cgroup, which slurmd wants), /dev, /dev/pts, a fresh /dev/shm, and
# the source tree at its own path, and /usr/local/cuda's target (read-only:
# the NCCL backend builds and its stand-in tests run as on the host);
# everything goes away when the command ends.  As root, on a machine that can make mount namespaces.
set -eu
set -o pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
. "$top/contrib/deps.sh"

SUITE=trixie
MIRROR=${DDP_DEBIAN13_MIRROR:-http://deb.debian.org/debian}
cache=${DDP_DEBIAN13_CACHE:-/var/cache/slurm-ddp/debian13}
max_age=${DDP_DEBIAN13_MAX_AGE:-7}
root=$cache/root
# Bump when the recipe below changes in a way the package list does not show.
RECIPE=1

say () { echo "debian13: $*" >&2; }
die () { say "$*"; exit 1; }

# packages: what the root file system holds, one name a line, sorted.
packages () {
    # shellcheck disable=SC2086
    printf '%s\n' $DDP_PKGS_BUILD $DDP_PKGS_TEST $DDP_PKGS_OPTIONAL \
        ${DDP_PKGS_DEBIAN13_EXTRA:-} ca-certificates | sort -u
}

# wanted_stamp: what the stamp of an up-to-date root file system says.
wanted_stamp () {
    { echo "recipe $RECIPE suite $SUITE mirror $MIRROR"; packages; } \
        | sha256sum | cut -d' ' -f1
}

# fresh: true when $root exists, was made from this recipe and package list,
# and is younger than max_age days.
fresh () {
    local stamp=$cache/stamp
    [ -f "$stamp" ] && [ -d "$root/usr" ] || return 1
    [ "$(cat "$stamp")" = "$(wanted_stamp)" ] || { say "stale: the package list or recipe changed"; return 1; }
    if [ -n "$(find "$stamp" -mtime +"$max_age" 2>/dev/null)" ]; then
        say "stale: made more than $max_age days ago"
        return 1
    fi
}

# make_rootfs: mmdebstrap a new root beside the old one, then swap it in.
make_rootfs () {
    local new=$cache/root.new log=$cache/mmdebstrap.log
    command -v mmdebstrap >/dev/null || ddp_install_deps mmdebstrap \
        || die "mmdebstrap is missing and could not be installed"
    rm -rf "$new"
    say "making a Debian 13 ($SUITE) root file system in $root (about a minute)"
    if ! mmdebstrap --variant=minbase --include="$(packages | paste -sd,)" \
            "$SUITE" "$new" "$MIRROR" >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        rm -rf "$new"
        die "mmdebstrap failed (log: $log)"
    fi
    printf '127.0.0.1 localhost\n::1 localhost ip6-localhost\n' >"$new/etc/hosts"
    rm -rf "$root.old"
    [ ! -d "$root" ] || mv "$root" "$root.old"
    mv "$new" "$root"
    rm -rf "$root.old"
    wanted_stamp >"$cache/stamp"
}

# rootfs: make sure an up-to-date root exists (under the cache's lock).
rootfs () {
    [ "$(id -u)" = 0 ] || die "must run as root (mmdebstrap, chroot, mounts)"
    mkdir -p "$cache"
    exec 9>"$cache/lock"
    flock 9
    fresh || make_rootfs
    flock -u 9
    exec 9>&-
}

# inside CMD...: run CMD in the root, in a private mount namespace, from the
# source tree (mounted at its own path).  The inner script gets the root and
# the tree as $1 and $2.
inside () {
    # The root's /etc/hosts names this machine as the host's does: Slurm
    # 24.11's slurmctld resolves srun's host name (the machine's) to answer
    # it, retrying for seconds when it cannot, and srun's next allocation
    # then fails ("Socket timed out on send/recv operation").
    printf '127.0.0.1 localhost %s\n::1 localhost ip6-localhost\n' "$(hostname)" \
        >"$cache/hosts"
    unshare -m --propagation private sh -c '
        set -e
        r=$1 src=$2 hosts=$3; shift 3
        mount --bind "$r" "$r"
        mount --make-private "$r"
        mount --bind "$hosts" "$r/etc/hosts"
        mount -t proc proc "$r/proc"
        mount --rbind /sys "$r/sys"
        mount --make-rslave "$r/sys"
        mount --rbind /dev "$r/dev"
        mount --make-rslave "$r/dev"
        mount -t tmpfs -o mode=1777 tmpfs "$r/dev/shm"
        mount -t tmpfs -o mode=1777 tmpfs "$r/tmp"
        mkdir -p "$r$src"
        mount --bind "$src" "$r$src"
        # CUDA and NCCL headers and libraries (for the NCCL backend built
        # against the stand-in), read-only, where the host has them.
        if [ -d /usr/local/cuda/ ]; then
            c=$(readlink -f /usr/local/cuda)
            mkdir -p "$r$c" && mount --bind -o ro "$c" "$r$c"
            [ "$c" = /usr/local/cuda ] || ln -sfn "$c" "$r/usr/local/cuda"
            # The host finds libnccl and libcudart through ld.so.conf.d;
            # so must programs run inside.
            for f in /etc/ld.so.conf.d/*cuda*.conf; do
                [ -f "$f" ] && cp "$f" "$r/etc/ld.so.conf.d/"
            done
            chroot "$r" ldconfig
        fi
        cd "$r$src"
        exec chroot "$r" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root \
            TERM="${TERM:-dumb}" LANG=C.UTF-8 sh -c "cd \"\$0\" && exec \"\$@\"" "$src" "$@"
    ' sh "$root" "$top" "$cache/hosts" "$@"
}

versions () {
    inside sh -c 'printf "Slurm %s, PMIx %s, Open MPI %s (Debian %s)\n" \
        "$(dpkg-query -W -f="\${Version}" slurm-wlm)" \
        "$(dpkg-query -W -f="\${Version}" libpmix-dev)" \
        "$(dpkg-query -W -f="\${Version}" openmpi-bin)" \
        "$(cat /etc/debian_version)"'
}

# copy_tree DEST: the source tree's files (git's tracked and untracked,
# not ignored ones in a checkout; else all but build trees) into DEST, so
# that autoreconf inside the root (another automake) never touches the
# tree a build on the host uses.
copy_tree () {
    local dest=$1
    mkdir -p "$dest"
    if git -C "$top" rev-parse --show-toplevel >/dev/null 2>&1; then
        git -C "$top" ls-files -z -co --exclude-standard \
            | (cd "$top" && tar --null -T - -cf -) | tar -C "$dest" -xf -
    else
        (cd "$top" && tar --exclude='./build*' -cf - .) | tar -C "$dest" -xf -
    fi
}

# check: copy the tree to build-debian13/src, build it into
# build-debian13/obj and run the suite, all inside the root.
# DDP_PROVE_SKIP, DDP_REQUIRE_CLUSTER, DDP_REQUIRE_TORCH, DDP_CLUSTER_NET and
# DDP_NCCL_SCALE_RANKS pass through.
# PHASE (build, test or all): build only (then build-debian13/.built marks
# it done), test a tree built so (DDP_DEBIAN13_SANITIZE as for its build),
# or both.
check () {
    local phase=$1 out=$top/build-debian13
    shift
    if [ "$phase" = test ]; then
        [ -f "$out/.built" ] || die "no finished build in $out (run: $0 build)"
    else
        rm -rf "$out"
        copy_tree "$out/src" || die "cannot copy the source tree to $out/src"
    fi
    inside env DDP_PROVE_SKIP="${DDP_PROVE_SKIP:-}" \
        DDP_REQUIRE_CLUSTER="${DDP_REQUIRE_CLUSTER:-1}" \
        DDP_REQUIRE_TORCH="${DDP_REQUIRE_TORCH:-0}" \
        DDP_CLUSTER_NET="${DDP_CLUSTER_NET:-auto}" \
        ${DDP_NCCL_SCALE_RANKS:+DDP_NCCL_SCALE_RANKS="$DDP_NCCL_SCALE_RANKS"} \
        DDP_DEBIAN13_SANITIZE="${DDP_DEBIAN13_SANITIZE:-0}" \
        bash -c '
        set -eu
        out=$1 phase=$2; shift 2
        top=$out/src build=$out/obj rc=0
        cd "$top"
        . contrib/deps.sh
        san=
        [ "$DDP_DEBIAN13_SANITIZE" != 1 ] || san=--enable-sanitizers
        echo "== debian13: $(. /etc/os-release; echo "$PRETTY_NAME"), Slurm $(dpkg-query -W -f="\${Version}" slurm-wlm), PMIx $(dpkg-query -W -f="\${Version}" libpmix-dev)${san:+, under ASan+UBSan}"
        if [ "$phase" != test ]; then
            echo "== debian13: build ($build${san:+, $san})"
            ddp_build "$top" "$build" --enable-werror $san
            make -C "$build" -j2 check TESTS= >/dev/null
            touch "$out/.built"
            [ "$phase" != build ] || exit 0
        fi
        [ -z "$san" ] || ddp_san_setup "$out/san-reports" "$top/contrib/lsan-debian13.supp" \
            "$top/contrib/asan-debian13.supp"
        export DDP_SRC_DIR=$top DDP_BUILD_DIR=$build
        state=$build/tests/.cluster
        trap '\''[ ! -f "$state" ] || tests/cluster/ddp-test-cluster stop "$(cat "$state")" || true'\'' EXIT
        echo "== debian13: tests"
        if [ $# -gt 0 ]; then
            prove "$@" :: -v || rc=1
        else
            ddp_prove "$build" -v --timer || rc=1
        fi
        if [ -n "$san" ]; then
            [ ! -f "$state" ] || tests/cluster/ddp-test-cluster stop "$(cat "$state")" || rc=1
            rm -f "$state"
            ddp_san_reports "$out/san-reports" || rc=1
        fi
        exit $rc
    ' bash "$out" "$phase" "$@"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    rootfs)   rootfs; echo "$root" ;;
    run)      [ $# -gt 0 ] || die "run: give a command"; rootfs; inside "$@" ;;
    versions) rootfs; versions ;;
    build)    rootfs; check build ;;
    check)    rootfs
              if [ "${DDP_DEBIAN13_PREBUILT:-0}" = 1 ]; then check test "$@"; else check all "$@"; fi ;;
    *)        sed -n '2,/^set -eu/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//' >&2; exit 2 ;;
esac
