#!/bin/bash
# contrib/ci-packaging.sh - check the release packaging of slurm-ddp.
#
#   contrib/ci-packaging.sh [--deb] [--quick] [--no-tests|--sharness|--cluster] [WORKDIR]
#
# Steps, each printed with its time:
#   1. configure and `make distcheck`: the tarball builds out of tree from a
#      read-only source, passes `make check` (the compiled unit tests; the
#      sharness tests skip with DDP_UNIT_TESTS_ONLY=1, since contrib/check.sh
#      runs them from the same commit, and step 1 checks that every file
#      they read is in the tarball; --sharness runs the ones without a
#      cluster, --cluster all of them; --no-tests builds the test programs
#      and runs none: check.sh runs this beside its suites, at idle CPU
#      priority, where a timed test could starve),
#      installs into a temporary --prefix, passes `make installcheck` there
#      (a user program built with `cc prog.c $(pkg-config --cflags --libs
#      ddp)` against that prefix, and run), and uninstalls cleanly.  Then
#      every file under version control must be in the tarball.
#      --quick: `make dist` instead of distcheck.
#   2. `rpmbuild -ta --without check` on the tarball (Debian's rpm; --nodeps
#      because Debian has no RPM database of build dependencies; distcheck
#      ran `make check` on the same tarball), then the packages' file lists
#      are checked.
#   3. with --deb: the Debian packaging (contrib/debian) with
#      `dpkg-buildpackage -us -uc -b` (its `make check`, the unit tests of
#      a build with Debian's hardening flags, runs; not with --no-tests:
#      DEB_BUILD_OPTIONS=nocheck), and the packages' contents.
#
# WORKDIR (default: ./ci-packaging in the current directory) is emptied
# first.  It may be under /tmp (a checkout there builds in it): with
# --cluster, the test cluster binds distcheck's source and build trees under
# /tmp into its nodes, which have a private /tmp.
# Exit status 0 when every step passed.
set -euo pipefail

PROG=ci-packaging
die () { echo "$PROG: error: $*" >&2; exit 1; }
say () { echo "$PROG: $*"; }

deb=no
quick=no
skip_cluster=1
unit_only=1
no_tests=no
while [ $# -gt 0 ]; do
    case $1 in
        --deb) deb=yes; shift ;;
        --quick) quick=yes; shift ;;
        --sharness) unit_only=0; shift ;;
        --no-tests) no_tests=yes; shift ;;
        --cluster) skip_cluster=0; unit_only=0; shift ;;
        -h|--help) sed -n '2,/^set -euo/{/^set/d;s/^# \{0,1\}//;p}' "$0"; exit 0 ;;
        -*) die "unknown option $1" ;;
        *) break ;;
    esac
done
[ $# -le 1 ] || die "usage: $0 [--deb] [--quick] [--no-tests|--sharness|--cluster] [WORKDIR]"
# --no-tests: TESTS= on make's command line reaches every make distcheck
# starts (through MAKEFLAGS): `make check` builds the test programs, runs
# none.
no_tests_make=()
[ $no_tests = no ] || no_tests_make=(TESTS=)

srcdir=$(cd "$(dirname "$0")/.." && pwd)
work=${1:-$PWD/ci-packaging}
[ -x "$srcdir/configure" ] || (cd "$srcdir" && autoreconf -fi) \
    || die "no configure in $srcdir and autoreconf failed"
rm -rf "$work"
mkdir -p "$work"
work=$(cd "$work" && pwd)
jobs=${DDP_MAKE_JOBS:-2}

# step NAME CMD...: run CMD with its output in WORKDIR/NAME.log; say how long
# it took; show the log's tail when it fails.
step () {
    local name=$1 t0 t1 rc=0
    shift
    say "$name: $*"
    t0=$(date +%s)
    "$@" >"$work/$name.log" 2>&1 || rc=$?
    t1=$(date +%s)
    if [ $rc -ne 0 ]; then
        tail -n 60 "$work/$name.log"
        die "$name failed (exit $rc) after $((t1 - t0)) s; log: $work/$name.log"
    fi
    say "$name: ok in $((t1 - t0)) s"
}

# ---- 1. distcheck -------------------------------------------------------
mkdir "$work/build"
cd "$work/build"
step configure "$srcdir/configure"
if [ $quick = yes ]; then
    step dist make -j"$jobs" dist
else
    step distcheck env DDP_SKIP_CLUSTER=$skip_cluster DDP_UNIT_TESTS_ONLY=$unit_only \
        make -j"$jobs" distcheck ${no_tests_make[@]+"${no_tests_make[@]}"}
    grep -q "installcheck: user program built with pkg-config: ok" "$work/distcheck.log" \
        || die "distcheck did not run the pkg-config user program (see distcheck.log)"
    say "distcheck: the pkg-config user program built and ran against the --prefix install"
fi
version=$(sed -n 's/^PACKAGE_VERSION = //p' Makefile)
tarball=$work/build/slurm-ddp-$version.tar.bz2
[ -f "$tarball" ] || die "no tarball $tarball"

# Every file under version control is in the tarball (a file missing from
# EXTRA_DIST breaks only builds from the tarball, which distcheck catches
# only when the build needs it).  Not shipped: .gitignore files, and
# doc/status.md (the developers' working log, kept in git only).
if git -C "$srcdir" rev-parse --is-inside-work-tree >/dev/null 2>&1; then
    git -C "$srcdir" ls-files | grep -v -E '(^|/)\.gitignore$|^doc/status\.md$' \
        | sort >"$work/git.files"
    tar -tjf "$tarball" | sed -e "s|^slurm-ddp-$version/||" -e '/\/$/d' -e '/^$/d' \
        | sort >"$work/dist.files"
    comm -23 "$work/git.files" "$work/dist.files" >"$work/not-in-dist"
    if [ -s "$work/not-in-dist" ]; then
        head -n 20 "$work/not-in-dist"
        die "$(wc -l <"$work/not-in-dist") files under version control are not in the tarball (add them to EXTRA_DIST); list: $work/not-in-dist"
    fi
    say "dist: every file under version control is in the tarball"
fi

# ---- 2. rpmbuild -ta ------------------------------------------------------
if command -v rpmbuild >/dev/null 2>&1; then
    step rpmbuild rpmbuild -ta --nodeps --without check --define "_topdir $work/rpm" "$tarball"
    rpms=$work/rpm/RPMS/$(uname -m)
    arch=$(uname -m)
    for p in slurm-ddp slurm-ddp-libs slurm-ddp-devel python3-ddp; do
        [ -f "$rpms/$p-$version-1.$arch.rpm" ] || die "rpmbuild made no $p-$version-1.$arch.rpm"
    done
    [ -f "$work/rpm/SRPMS/slurm-ddp-$version-1.src.rpm" ] || die "rpmbuild made no source rpm"
    check_rpm () {   # check_rpm PACKAGE REGEX...: the package has a file matching each
        local pkg=$1 re
        shift
        rpm -qlp "$rpms/$pkg-$version-1.$arch.rpm" >"$work/$pkg.files"
        for re in "$@"; do
            grep -Eq "$re" "$work/$pkg.files" || die "$pkg has no file matching $re"
        done
    }
    check_rpm slurm-ddp '/slurm/ddp\.so$' '/man8/spank-ddp\.8' '/man7/ddp\.7' \
        '/bin/ddp-bench$' '/man1/ddp-bench\.1' '/bin/ddp-run$' '/man1/ddp-run\.1' \
        '/examples/plugstack\.conf\.d/ddp\.conf$'
    check_rpm slurm-ddp-libs '/libddp\.so\.0$'
    check_rpm python3-ddp '/ddp/__init__\.py$' '/ddp/_ddp\.cpython-[^/]*\.so$' \
        '/man7/ddp-python\.7'
    check_rpm slurm-ddp-devel '/include/ddp\.h$' '/libddp\.so$' '/pkgconfig/ddp\.pc$' \
        '/man3/ddp\.3' '/man3/ddp_bcast\.3'
    say "rpmbuild: slurm-ddp, -libs, -devel, python3-ddp and the source rpm have the expected files"
else
    die "rpmbuild not found (apt-get install rpm)"
fi

# ---- 3. Debian packages -----------------------------------------------------
if [ $deb = yes ]; then
    command -v dpkg-buildpackage >/dev/null 2>&1 && command -v dh >/dev/null 2>&1 \
        || die "dpkg-buildpackage or dh not found (apt-get install dpkg-dev debhelper dh-python)"
    mkdir "$work/deb"
    tar -xjf "$tarball" -C "$work/deb"
    src=$work/deb/slurm-ddp-$version
    cp -r "$src/contrib/debian" "$src/debian"
    # the changelog names the release being built
    sed -i "1s/([^)]*)/($version-1)/" "$src/debian/changelog"
    deb_opts=${DEB_BUILD_OPTIONS:-}
    [ $no_tests = no ] || deb_opts="$deb_opts nocheck"
    ( cd "$src" && DDP_UNIT_TESTS_ONLY=$unit_only DEB_BUILD_OPTIONS="${deb_opts# }" \
          step dpkg-buildpackage dpkg-buildpackage -us -uc -b )
    debarch=$(dpkg --print-architecture)
    for p in slurm-ddp libddp0 libddp-dev python3-ddp; do
        deb_file=$work/deb/${p}_$version-1_$debarch.deb
        [ -f "$deb_file" ] || die "dpkg-buildpackage made no $deb_file"
        dpkg-deb -c "$deb_file" >"$work/$p.debfiles"
    done
    grep -q '/slurm-wlm/ddp\.so$' "$work/slurm-ddp.debfiles" || die "slurm-ddp.deb has no plugin"
    grep -q '/bin/ddp-run$' "$work/slurm-ddp.debfiles" || die "slurm-ddp.deb has no ddp-run"
    grep -q '/libddp\.so\.0' "$work/libddp0.debfiles" || die "libddp0.deb has no library"
    grep -q '/pkgconfig/ddp\.pc$' "$work/libddp-dev.debfiles" || die "libddp-dev.deb has no ddp.pc"
    grep -q '/man3/ddp_bcast\.3' "$work/libddp-dev.debfiles" || die "libddp-dev.deb has no ddp_bcast(3)"
    grep -q '/python3/dist-packages/ddp/__init__\.py$' "$work/python3-ddp.debfiles" \
        || die "python3-ddp.deb has no ddp/__init__.py"
    grep -Eq '/python3/dist-packages/ddp/_ddp\.cpython-[^/]*\.so$' "$work/python3-ddp.debfiles" \
        || die "python3-ddp.deb has no ddp/_ddp extension"
    dpkg-deb -f "$work/deb/python3-ddp_$version-1_$debarch.deb" Depends | grep -q 'python3 (' \
        || die "python3-ddp.deb does not depend on a python3 version"
    say "dpkg-buildpackage: slurm-ddp, libddp0, libddp-dev and python3-ddp have the expected files"
fi

say "all packaging checks passed (work directory: $work)"
