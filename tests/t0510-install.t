#!/bin/sh
test_description='make install: plugin, library, header, ddp.pc, man pages and example; a user program builds with pkg-config'
. "$(dirname "$0")/test-lib.sh"

# No cluster needed.  The build tree is installed with DESTDIR into a
# directory under the build tree (not /tmp, and without the space sharness
# puts in its trash directory names), then checked file by file.  A user
# program is built with `cc prog.c $(pkg-config --cflags --libs ddp)`:
# PKG_CONFIG_SYSROOT_DIR makes pkg-config prefix the paths of the installed
# ddp.pc (whose prefix is the configured one) with DESTDIR, which is how
# DESTDIR staging is meant to be used.  `make distcheck` builds the same
# program against a real --prefix installation (installcheck in contrib/).

DEST=$DDP_BUILD_DIR/tests/.t0510-destdir
# make without the MAKEFLAGS of a surrounding `make check` (TESTS=..., -j)
MAKE1="env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make"

command -v pkg-config >/dev/null 2>&1 && test_set_prereq PKGCONFIG
command -v man >/dev/null 2>&1 && test_set_prereq MAN
command -v c++ >/dev/null 2>&1 && test_set_prereq CXX
test -f "$DDP_BUILD_DIR/spank/ddp.so" && test_set_prereq PLUGIN

# instdir NAME: an installation directory as configured, variables expanded.
instdir () {
    sed -n "s|^$1=||p" dirs
}

test_expect_success 'make install DESTDIR=... succeeds' '
	rm -rf "$DEST" &&
	$MAKE1 -s -C "$DDP_BUILD_DIR/doc" print-dirs >dirs.out &&
	grep "^[a-z_]*=/" dirs.out >dirs &&
	test -n "$(instdir libdir)" && test -n "$(instdir slurm_plugindir)" &&
	$MAKE1 -C "$DDP_BUILD_DIR" install DESTDIR="$DEST" >install.log 2>&1 ||
		{ tail -n 40 install.log; return 1; }
'

test_expect_success 'nothing is installed outside DESTDIR' '
	test -d "$DEST$(instdir prefix)" &&
	for d in slurm_plugindir bindir libdir includedir mandir docdir pyexecdir; do
		test -d "$(instdir $d)" || continue
		find "$(instdir $d)" -newer dirs \( -name "*ddp*" -o -name "spank-ddp*" \) \
			! -type d >>outside 2>/dev/null
	done &&
	{ test ! -s outside || { cat outside; false; }; }
'

test_expect_success 'the library, its header and ddp.pc are installed' '
	lib=$DEST$(instdir libdir) &&
	test -f "$lib/libddp.so.0" -o -L "$lib/libddp.so.0" &&
	test -L "$lib/libddp.so" &&
	test_cmp "$DDP_SRC_DIR/libjob/ddp.h" "$DEST$(instdir includedir)/ddp.h" &&
	grep -qx "prefix=$(instdir prefix)" "$lib/pkgconfig/ddp.pc" &&
	grep -q "^Libs: .*-lddp" "$lib/pkgconfig/ddp.pc"
'

test_expect_success PLUGIN 'the plugin is installed in the configured Slurm plugin directory' '
	so=$DEST$(instdir slurm_plugindir)/ddp.so &&
	test -f "$so" &&
	nm -D --defined-only "$so" >plugin.syms &&
	grep -q " slurm_spank_init$" plugin.syms &&
	grep -q " plugin_name$" plugin.syms
'

test_expect_success 'ddp-run and ddp-bench are installed; ddp-run runs a job from there' '
	bin=$DEST$(instdir bindir) &&
	test -x "$bin/ddp-bench" && test -x "$bin/ddp-run" &&
	env -u CUDA_VISIBLE_DEVICES -u DDP_BACKEND "$bin/ddp-run" -n 2 -b host -- \
		sh -c "echo \$RANK/\$WORLD_SIZE \$DDP_BACKEND" | sort >ran &&
	printf "0/2 host\n1/2 host\n" >expect &&
	test_cmp expect ran
'

test_expect_success 'the example plugstack.conf.d file names the installed plugin' '
	conf=$DEST$(instdir docdir)/examples/plugstack.conf.d/ddp.conf &&
	test -f "$conf" &&
	grep "^required " "$conf" >line &&
	test $(wc -l <line) = 1 &&
	grep -q "^required $(instdir slurm_plugindir)/ddp.so " line &&
	! grep -q "@" "$conf" &&
	! test -e "$DEST/etc/slurm/plugstack.conf.d/ddp.conf"
'

test_expect_success 'every man page and every function name is installed' '
	man=$DEST$(instdir mandir) &&
	$MAKE1 -s -C "$DDP_BUILD_DIR/doc" print-man-pages |
		grep -E "^[a-z0-9_.-]+\.[1-8]\$" >pages &&
	$MAKE1 -s -C "$DDP_BUILD_DIR/doc" print-man3-links |
		grep -E "^[a-z0-9_]+\.3:[a-z0-9_]+\.3\$" >links &&
	test -s pages && test -s links &&
	for p in $(cat pages); do
		test -f "$man/man${p##*.}/$p" || { echo "missing $p"; return 1; }
	done &&
	while IFS=: read -r page link; do
		echo ".so man3/$page" >expect &&
		test_cmp expect "$man/man3/$link" || return 1
	done <links
'

test_expect_success MAN 'man finds every function name and renders its page cleanly' '
	man=$DEST$(instdir mandir) &&
	while IFS=: read -r page link; do
		name=${link%.3} &&
		title=$(echo "${page%.3}" | tr a-z A-Z) &&
		LC_ALL=C.UTF-8 MANWIDTH=80 man --warnings -M "$man" 3 "$name" \
			>"$name.txt" 2>"$name.err" || { cat "$name.err"; return 1; }
		test -s "$name.err" && { cat "$name.err"; return 1; }
		head -n 1 "$name.txt" | grep -q "^$title(3)" ||
			{ echo "man $name: not the $page page"; head -n 2 "$name.txt"; return 1; }
	done <links &&
	man -M "$man" -w 8 spank-ddp | grep -q "^$man/man8/spank-ddp.8" &&
	man -M "$man" -w 1 ddp-run | grep -q "^$man/man1/ddp-run.1" &&
	man -M "$man" -w 7 ddp | grep -q "^$man/man7/ddp.7"
'

# The Python module, where configure built it (libjob/python/build.env).
if test -f "$DDP_BUILD_DIR/libjob/python/build.env"; then
	. "$DDP_BUILD_DIR/libjob/python/build.env"
	test "$DDP_PYTHON_BUILT" = yes && test_set_prereq PYMOD
fi

test_expect_success PYMOD 'the Python module is installed into the Python extension directory' '
	pydir=$DEST$(instdir pyexecdir) &&
	test -f "$pydir/ddp/__init__.py" &&
	so=$(ls "$pydir"/ddp/_ddp.*so) &&
	suffix=$("$DDP_PYTHON" -c "import sysconfig; print(sysconfig.get_config_var(\"EXT_SUFFIX\"))") &&
	test "$so" = "$pydir/ddp/_ddp$suffix" &&
	! test -e "$pydir/ddp/_ddp.la" &&
	env -u PYTHONHOME PYTHONPATH="$pydir" PYTHONDONTWRITEBYTECODE=1 \
		LD_LIBRARY_PATH="$DEST$(instdir libdir)" \
		"$DDP_PYTHON" -c "import ddp; print(ddp.__file__, ddp.version(), ddp.rank(), ddp.world_size())" >pyout &&
	echo "$pydir/ddp/__init__.py $(sed -n "s/^Version: //p" "$DDP_BUILD_DIR/libjob/ddp.pc") 0 1" >expect &&
	test_cmp expect pyout
'

cat >prog.cc <<'EOF'
#include <cstdio>
#include <ddp.h>

int main ()
{
    ddp_sampler_t s;
    int rc = ddp_sampler_init (&s, 10, 4, 1, true, 42, false);

    std::printf ("version %s sampler %d %llu\n", ddp_version (), rc,
                 (unsigned long long) s.num_samples);
    return rc == 0 ? 0 : 1;
}
EOF

# pkgconf: the installed ddp.pc, its paths seen through DESTDIR.
pkgconf () {
    PKG_CONFIG_PATH=$DEST$(instdir libdir)/pkgconfig PKG_CONFIG_SYSROOT_DIR=$DEST \
        PKG_CONFIG_LIBDIR=$DEST$(instdir libdir)/pkgconfig pkg-config "$@"
}

# run PROG: run it alone, as a user would outside Slurm, against the
# installed library only.
run () {
    env -u RANK -u WORLD_SIZE -u LOCAL_RANK -u DDP_BACKEND \
        -u PMIX_NAMESPACE -u PMIX_RANK -u PMIX_SERVER_URI2 -u PMIX_SERVER_URI3 \
        -u PMIX_SERVER_URI4 -u PMIX_SERVER_URI21 -u PMIX_SERVER_URI41 \
        LD_LIBRARY_PATH=$DEST$(instdir libdir) "$@"
}

test_expect_success PKGCONFIG 'pkg-config finds the installed ddp.pc' '
	pkgconf --modversion ddp >version &&
	test -s version &&
	pkgconf --cflags ddp >cflags &&
	grep -q -- "-I$DEST$(instdir includedir)" cflags ||
	test "$(instdir includedir)" = /usr/include
'

PROG_SRC=$DDP_SRC_DIR/contrib/pkgconfig-test.c
if nm -D "$DEST$(instdir libdir)/libddp.so" 2>/dev/null | grep -q " T ddp_init$"; then
    test_set_prereq LIBCORE
fi

test_expect_success PKGCONFIG 'a user program builds with cc prog.c $(pkg-config --cflags --libs ddp)' '
	if test_have_prereq LIBCORE; then v=; else
		say "# libddp has no ddp_init yet (no core built in): version only"
		v=-DDDP_TEST_VERSION_ONLY
	fi &&
	cc $v -Wall -Werror "$PROG_SRC" $(pkgconf --cflags --libs ddp) -o prog &&
	run ldd ./prog >ldd.out &&
	grep "libddp.so" ldd.out | grep -q "$DEST"
'

test_expect_success PKGCONFIG 'it runs as a single process without Slurm' '
	run ./prog >prog.out &&
	cat prog.out &&
	if test_have_prereq LIBCORE; then
		echo "version $(cat version) rank 0 of 1 backend host allreduce 0 1.5 -2 4"
	else
		echo "version $(cat version)"
	fi >expect &&
	test_cmp expect prog.out
'

test_expect_success PKGCONFIG,LIBCORE 'it runs as 2 ranks under the installed ddp-run' '
	run "$DEST$(instdir bindir)/ddp-run" -n 2 -b host -- ./prog >ranks.out &&
	cat ranks.out &&
	test $(grep -c "^version $(cat version) rank [01] of 2 backend host " ranks.out) = 2 &&
	grep -q " rank 1 of 2 " ranks.out
'

test_expect_success PKGCONFIG,CXX 'a C++ program builds against the installed header' '
	c++ -Wall -Werror prog.cc $(pkgconf --cflags --libs ddp) -o progxx &&
	run ./progxx >progxx.out &&
	echo "version $(cat version) sampler 0 3" >expect &&
	test_cmp expect progxx.out
'

test_expect_success 'make uninstall removes every file it installed' '
	$MAKE1 -C "$DDP_BUILD_DIR" uninstall DESTDIR="$DEST" >uninstall.log 2>&1 ||
		{ tail -n 40 uninstall.log; return 1; }
	find "$DEST" ! -type d >left &&
	{ test ! -s left || { cat left; false; }; }
'

test_expect_success 'clean up' '
	rm -rf "$DEST"
'

test_done
