#!/bin/sh
test_description='configure names the Slurm and PMIx it found, and refuses ones older than it supports'
. "$(dirname "$0")/test-lib.sh"

# No cluster needed.  configure runs in directories under the build tree
# (in .t0530: sharness's trash directory has a space in its name, which
# -I flags cannot hold) against copies of this machine's Slurm and PMIx headers whose version
# lines say an older release (the copies live in prefixes given with
# --with-slurm= and --with-pmix=).  The oldest supported versions are
# configure.ac's DDP_SLURM_MIN and DDP_PMIX_MIN.

# A source tree configured in place (rpmbuild's and dpkg-buildpackage's
# builds) refuses to be configured again from another directory.
if test -f "$DDP_SRC_DIR/config.status"; then
	skip_all="the source tree is configured in place (a package build): configure cannot run from it elsewhere; the main suite runs this"
	test_done
fi

SPANK=$(echo '#include <slurm/spank.h>' | cpp -H -o /dev/null 2>&1 | sed -n 's/^\. //p' | head -1)
PMIXH=$(pkg-config --variable=includedir pmix 2>/dev/null)
test -n "$SPANK" && test -f "$(dirname "$SPANK")/slurm_version.h" && test_set_prereq SLURM
test -n "$PMIXH" && test -f "$PMIXH/pmix_version.h" && test_set_prereq PMIX

W=$DDP_BUILD_DIR/tests/.t0530
rm -rf "$W" && mkdir -p "$W" && cd "$W" || exit 1

# conf NAME ARGS...: configure (no CUDA, quickly) in a fresh directory NAME.
conf () {
	local name=$1; shift
	rm -rf "$name" && mkdir "$name" &&
	( cd "$name" && "$DDP_SRC_DIR/configure" --without-nccl "$@" >out 2>&1 )
}

test_expect_success SLURM,PMIX 'the summary names the versions found' '
	conf plain &&
	grep -E "^  Slurm SPANK headers: +yes [0-9]+\.[0-9]{2}\.[0-9]+ " plain/out &&
	grep -E "^  PMIx: +yes [0-9]+\.[0-9]+\.[0-9]+ " plain/out
'
test_expect_success SLURM 'Slurm 21.08 is refused, naming the version and the way out' '
	mkdir -p old-slurm/include &&
	cp -r "$(dirname "$SPANK")" old-slurm/include/ &&
	sed -i "s/^#define SLURM_VERSION_NUMBER .*/#define SLURM_VERSION_NUMBER 0x150803/" \
		old-slurm/include/slurm/slurm_version.h &&
	test_must_fail conf slurm2108 --with-slurm="$PWD/old-slurm" &&
	cat slurm2108/out &&
	grep "error: Slurm 21.08.3 (slurm/slurm_version.h) is older than 22.05, the oldest Slurm slurm-ddp supports" slurm2108/out &&
	grep -e "--without-slurm to build libddp without the plugin" slurm2108/out
'
test_expect_success SLURM '... and without the plugin (--without-slurm) it configures' '
	conf noslurm --without-slurm &&
	grep -E "^  SPANK plugin built: +no" noslurm/out
'
# The old PMIx's pmix.pc comes first in PKG_CONFIG_PATH (configure puts
# PREFIX/lib/pkgconfig there), ahead of the system one.
test_expect_success PMIX 'PMIx 3.2 is refused, naming the version and the way out' '
	mkdir -p old-pmix/include old-pmix/lib/pkgconfig &&
	cp -r "$PMIXH"/* old-pmix/include/ &&
	sed -e "s|^includedir=.*|includedir=$PWD/old-pmix/include|" \
	    -e "s|^Version:.*|Version: 3.2.0|" \
		"$(pkg-config --variable=pcfiledir pmix)/pmix.pc" \
		>old-pmix/lib/pkgconfig/pmix.pc &&
	sed -i -e "s/^#define PMIX_VERSION_MAJOR .*/#define PMIX_VERSION_MAJOR 3L/" \
	       -e "s/^#define PMIX_VERSION_MINOR .*/#define PMIX_VERSION_MINOR 2L/" \
		old-pmix/include/pmix_version.h &&
	test_must_fail conf pmix32 --with-pmix="$PWD/old-pmix" &&
	cat pmix32/out &&
	grep "error: PMIx 3.2.[0-9]* (pmix_version.h) is older than 4.2, the oldest PMIx slurm-ddp supports" pmix32/out
'
test_expect_success 'clean up' '
	cd "$SHARNESS_TRASH_DIRECTORY" && rm -rf "$W"
'
test_done
