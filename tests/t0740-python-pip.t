#!/bin/sh
test_description='pip: the Python module ddp installed with pip from the
checkout (libjob/python/setup.py), offline, into venvs of Debian'"'"'s
python3, not the interpreter configure chose: against an installed libddp
(pkg-config), and as a wheel with libddp built from the checkout inside it,
in a fresh venv; 2 ranks under ddp-run all-reduce with each'
. "$(dirname "$0")/test-lib.sh"

# The commands are doc/user-guide.md's ("Python", pip; the first test checks
# that the guide still gives them, line for line) and ddp-python(7)'s, run
# from the checkout as written, with the test's own venvs and wheel folder
# for ~/ddp-venv, ~/fresh-venv and dist; the source tree must be left as it
# was (pip builds in the folder it is given: no build/, no *.egg-info).
# Needs python3-venv, python3-pip, python3-setuptools, python3-wheel and
# python3-dev for DDP_PIP_PYTHON (default /usr/bin/python3; deps.sh's
# test packages); skips, saying which is missing, without them.  No
# cluster, no root.  About 40 s, most of it the wheel's configure and make
# of libddp (with the NCCL backend where CUDA is: the ranks use the host one).

PY=${DDP_PIP_PYTHON:-/usr/bin/python3}
RUN=$DDP_BUILD_DIR/contrib/ddp-run/ddp-run
unset PYTHONPATH PYTHONHOME PYTHONSTARTUP PYTHONUSERBASE VIRTUAL_ENV
unset PMIX_NAMESPACE SLURM_STEP_NUM_TASKS WORLD_SIZE RANK DDP_BOOTSTRAP
unset DDP_TIMEOUT DDP_INIT_TIMEOUT DDP_DEBUG DDP_BACKEND DDP_STOP_SIGNALS
unset DDP_LIBDDP DDP_CONFIGURE_FLAGS PKG_CONFIG_SYSROOT_DIR PIP_REQUIRE_VIRTUALENV
PYTHONDONTWRITEBYTECODE=1
export PYTHONDONTWRITEBYTECODE

why=
test -x "$PY" || why="no $PY (DDP_PIP_PYTHON)"
test -n "$why" || "$PY" -c 'import venv, ensurepip' 2>/dev/null ||
	why="$PY has no venv/ensurepip (install python3-venv)"
test -n "$why" || "$PY" -m pip --version >/dev/null 2>&1 ||
	why="$PY has no pip (install python3-pip)"
test -n "$why" || "$PY" -c 'import setuptools, wheel' 2>/dev/null ||
	why="$PY has no setuptools or wheel (install python3-setuptools python3-wheel)"
test -n "$why" || "$PY" -c 'import os, sys, sysconfig
sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' ||
	why="no Python.h for $PY (install python3-dev)"
test -n "$why" || command -v pkg-config >/dev/null 2>&1 || why="no pkg-config"
test -n "$why" || test -x "$RUN" || why="no $RUN: build the tree first"
if test -n "$why"; then
	skip_all="cannot pip install here: $why"
	test_done
fi
# configure in place (config.status in the source tree) leaves no room for
# the wheel's own build of libddp; setup.py refuses, saying so.
test -f "$DDP_SRC_DIR/config.status" || test_set_prereq VPATH

# The venvs and the staged libddp in a folder of the build tree without the
# space of sharness's trash directory names (configure and libtool need
# that).  setuptools' build folders are setup.py's business: a temporary
# folder of its own, not the source tree (what the tests below check).
W=$DDP_BUILD_DIR/tests/.t0740-pip
rm -rf "$W" && mkdir -p "$W"

# The guide's commands, as written there.
cat >guide-commands <<\EOF
/usr/bin/python3 -m venv --system-site-packages ~/ddp-venv
~/ddp-venv/bin/python -m pip install --no-build-isolation --no-index ./libjob/python
~/ddp-venv/bin/python -m pip wheel --no-build-isolation --no-index --no-deps -w dist ./libjob/python
/usr/bin/python3 -m venv ~/fresh-venv                 # the wheel: any venv of that Python
~/fresh-venv/bin/python -m pip install --no-index dist/slurm_ddp-*.whl
EOF

# tree_state: where pip builds, and setuptools used to leave build/ and
# slurm_ddp.egg-info: every file and folder of libjob/python, ignored ones
# included.  (Not the top of the tree: contrib/check.sh makes and removes
# build folders there while the suite runs.)
tree_state () {
	(cd "$DDP_SRC_DIR" && find libjob/python) | sort
}
tree_state >tree.before

test_expect_success 'doc/user-guide.md gives the commands this test runs' '
	while IFS= read -r line; do
		grep -qxF -e "$line" "$DDP_SRC_DIR/doc/user-guide.md" ||
			{ echo "not in doc/user-guide.md: $line"; return 1; }
	done <guide-commands
'

# The 2-rank program: each rank adds rank + 1 (1 + 2 = 3) and says which
# module it imported, in one write (unbuffered, print writes the line and
# its newline apart, and the ranks' lines interleave).
cat >allreduce.py <<\EOF
import os
import ddp
r, n = ddp.rank(), ddp.world_size()
os.write(1, ("rank %d/%d: all_reduce %r from %s\n" % (
    r, n, ddp.all_reduce(r + 1), ddp._ddp.__file__)).encode())
EOF

# ranks VENV NAME: 2 ranks of VENV's python (host backend) under ddp-run;
# NAME.out has their lines, sorted; each got 3 from VENV's module.
ranks () {
	timeout --kill-after=5 60 "$RUN" -n 2 -b host "$1/bin/python" allreduce.py \
		>"$2.raw" 2>"$2.err"
	rc=$?
	sort "$2.raw" >"$2.out"
	ddp_show "$2.out" "$2.err"
	test $rc = 0 &&
	sed -n "s|^rank \([01]\)/2: all_reduce 3 from $1/lib/python[0-9.]*/site-packages/ddp/_ddp\..*so$|\1|p" \
		"$2.out" >"$2.ranks" &&
	printf "0\n1\n" | test_cmp - "$2.ranks"
}

# The build tree's libddp, installed with DESTDIR (nothing of the build
# tree is rebuilt: the library's own install targets only), and found by
# pkg-config as an installed one (PKG_CONFIG_SYSROOT_DIR: t0510's way).
DEST=$W/dest
test_expect_success 'pip install into a venv, against an installed libddp (pkg-config)' '
	env -u MAKEFLAGS -u MAKELEVEL -u MFLAGS make -s -C "$DDP_BUILD_DIR/libjob" \
		install-libLTLIBRARIES install-pkgconfigDATA install-includeHEADERS \
		DESTDIR="$DEST" >make-install.log 2>&1 ||
		{ cat make-install.log; return 1; } &&
	libdir=$(PKG_CONFIG_PATH=$DDP_BUILD_DIR/libjob pkg-config --variable=libdir ddp) &&
	test -f "$DEST$libdir/pkgconfig/ddp.pc" &&
	"$PY" -m venv --system-site-packages "$W/venv1" &&
	(cd "$DDP_SRC_DIR" &&
	 PKG_CONFIG_SYSROOT_DIR=$DEST PKG_CONFIG_PATH=$DEST$libdir/pkgconfig DDP_LIBDDP=pkg-config \
		"$W/venv1/bin/python" -m pip install --no-build-isolation --no-index ./libjob/python) \
		>pip1.log 2>&1 || { cat pip1.log; return 1; } &&
	so=$(ls "$W"/venv1/lib/python*/site-packages/ddp/_ddp.*so) &&
	ldd "$so" >ldd1 && ddp_show ldd1 &&
	grep -q "libddp\.so\.0 => $DEST/" ldd1
'

test_expect_success '2 ranks under ddp-run all-reduce with the venv'"'"'s module' '
	ranks "$W/venv1" run1
'

test_expect_success 'pip install left the source tree as it was' '
	tree_state | test_cmp tree.before -
'

test_expect_success VPATH 'pip wheel with libddp built from the checkout, installed into a fresh venv' '
	{ test -x "$W/venv1/bin/python" ||
		"$PY" -m venv --system-site-packages "$W/venv1"; } &&
	(cd "$DDP_SRC_DIR" &&
	 DDP_LIBDDP=checkout \
		"$W/venv1/bin/python" -m pip wheel --no-build-isolation --no-index --no-deps -w "$W/dist" ./libjob/python) \
		>pip2.log 2>&1 || { cat pip2.log; return 1; } &&
	whl=$(ls "$W"/dist/slurm_ddp-*.whl) && echo "$whl" &&
	"$PY" -m venv "$W/venv2" &&
	"$W/venv2/bin/python" -m pip install --no-index "$whl" >pip3.log 2>&1 ||
		{ cat pip3.log; return 1; } &&
	so=$(ls "$W"/venv2/lib/python*/site-packages/ddp/_ddp.*so) &&
	ldd "$so" >ldd2 && ddp_show ldd2 &&
	# libddp is inside: no libddp.so to find, nothing but the init function exported
	! grep -q libddp ldd2 &&
	nm -D --defined-only "$so" | awk "{ print \$NF }" >exported &&
	echo PyInit__ddp | test_cmp - exported &&
	# built where CUDA and NCCL are, it links neither (doc/nccl.md)
	! grep -E "lib(cudart|nccl|cuda)\.so" ldd2
'

# One build for every node: the wheel made where CUDA and NCCL are
# installed imports and runs where they are not (a mount namespace covers
# their directory), and says how it finds NCCL.
CUDA_LIBDIR=$(ldconfig -p | awk '$1 ~ /^libnccl\.so\./ { print $NF; exit }')
CUDA_LIBDIR=${CUDA_LIBDIR:+$(dirname "$(readlink -f "$CUDA_LIBDIR")")}
test -n "$CUDA_LIBDIR" && test "$(id -u)" = 0 && unshare -m true 2>/dev/null &&
	grep -q 'define HAVE_NCCL 1' "$DDP_BUILD_DIR/config.h" 2>/dev/null &&
	test_set_prereq HIDE_CUDA
test_expect_success VPATH,HIDE_CUDA 'the wheel imports and runs with CUDA and NCCL out of sight' '
	unshare -m sh -c "mount -t tmpfs -o ro tmpfs \"$CUDA_LIBDIR\" &&
		! ls \"$CUDA_LIBDIR\"/libnccl* 2>/dev/null &&
		exec \"$W/venv2/bin/python\" -c \"import ddp; ddp.init(); print(ddp.backend()); print(ddp.nccl_info()); ddp.finalize()\"" \
		>hidden.out 2>hidden.err || { cat hidden.err; return 1; } &&
	cat hidden.out &&
	test "$(sed -n 1p hidden.out)" = host &&
	grep "^loaded at run time by the steps that use it: libnccl.so.2 and libcudart.so" hidden.out
'

test_expect_success VPATH '2 ranks under ddp-run all-reduce with the wheel'"'"'s module' '
	ranks "$W/venv2" run2
'

test_expect_success VPATH 'pip wheel, libddp'"'"'s build included, left the source tree as it was' '
	tree_state | test_cmp tree.before -
'

test_done
