"""setup.py - `pip install ./libjob/python`: the Python module ddp without
the project's own build.

Builds the extension ddp._ddp (the py_*.c files beside this one, as
Makefile.am does) for the interpreter that runs pip, and installs it with
the pure-Python part (ddp/__init__.py) where that interpreter (or its venv)
looks.  libddp comes from one of two places (DDP_LIBDDP picks; default
auto):

  pkg-config  an installed libddp (`pkg-config ddp`: the ddp.pc of a
              `make install`, of libddp-dev, or PKG_CONFIG_PATH's).  The
              module links it dynamically, with an rpath to its directory
              when that is not a system one.  Its version must be this
              checkout's (the module is compiled against the checkout's
              calls).
  checkout    libddp built from this checkout: configure (autoreconf first
              when there is no ./configure) and make libjob/ in a build
              folder under setuptools' build_temp, static and
              position-independent (--disable-shared --with-pic), linked
              into the module.  The module is then one self-contained file:
              nothing to install beside it, no rpath that a wheel copied
              elsewhere would break, no libddp.so of another version picked
              up instead; a version script keeps every symbol but
              PyInit__ddp local, so libddp's copy inside the module is seen
              by no other library in the process.  Needs what the project's
              build needs (a C compiler, autotools for a git checkout,
              libpmix-dev; CUDA and NCCL are used when configure finds
              them, as in a full build); DDP_CONFIGURE_FLAGS adds configure
              options (e.g. --without-nccl).
  auto        pkg-config when `pkg-config --exists ddp`, else checkout.

Offline, with the distribution's setuptools and wheel:
    python3 -m pip install --no-build-isolation ./libjob/python
    python3 -m pip wheel --no-build-isolation --no-deps -w dist ./libjob/python
(doc/user-guide.md "Python", ddp-python(7); tests/t0740-python-pip.t runs
both).

pip (21.3 on) builds in the source folder itself, and setuptools puts its
build folder (build/) and its metadata (slurm_ddp.egg-info) beside
setup.py: here they go into a temporary folder of their own instead,
removed when setup.py exits, so that a pip install leaves the checkout as
it was.  A build_base or egg_base given on the command line or in a
distutils configuration file (setup.cfg, ~/.pydistutils.cfg) still wins.
"""

import atexit
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup, Extension
from setuptools.command.build_ext import build_ext

HERE = os.path.dirname(os.path.abspath(__file__))
TOP = os.path.dirname(os.path.dirname(HERE))
SOURCES = ["ddpmodule.c", "py_init.c", "py_wait.c", "py_errors.c",
           "py_coll.c", "py_objects.c", "py_group.c", "py_request.c",
           "py_data.c", "py_helpers.c", "py_stop.c", "py_log.c",
           "py_sampler.c"]
# Directories the dynamic linker searches anyway: no rpath to them.
SYSTEM_LIBDIRS = ("/lib", "/lib64", "/usr/lib", "/usr/lib64",
                  "/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu",
                  "/usr/lib/aarch64-linux-gnu", "/lib/aarch64-linux-gnu")


class DdpBuildError(Exception):
    """A step of the build failed; the message says what to do."""


def checkout_version():
    """The version in the checkout's configure.ac (AC_INIT), or raise."""
    path = os.path.join(TOP, "configure.ac")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        raise DdpBuildError(
            "%s: %s; setup.py builds from a slurm-ddp checkout "
            "(libjob/python in it)" % (path, e.strerror)) from e
    m = re.search(r"AC_INIT\(\[slurm-ddp\],\s*\[([^\]]+)\]", text)
    if not m:
        raise DdpBuildError("%s: no AC_INIT([slurm-ddp], [VERSION])" % path)
    return m.group(1)


def run(cmd, cwd, what):
    """Run cmd (a list) in cwd, its output shown; raise saying what failed."""
    print("ddp: %s: %s (in %s)" % (what, " ".join(map(shlex.quote, cmd)),
                                   cwd), flush=True)
    try:
        rc = subprocess.call(cmd, cwd=cwd)
    except OSError as e:
        raise DdpBuildError("%s: cannot run %s: %s" %
                            (what, cmd[0], e.strerror)) from e
    if rc != 0:
        raise DdpBuildError("%s failed (exit %d): see its output above" %
                            (what, rc))


def pkg_config(*args, env=None):
    """pkg-config ARGS' output split into words, or None when it fails."""
    try:
        out = subprocess.run(["pkg-config"] + list(args), env=env,
                             stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL,
                             universal_newlines=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    return shlex.split(out)


def rpaths_of(flags):
    """The -L directories of flags that the dynamic linker does not search
    by itself."""
    dirs = [f[2:] for f in flags if f.startswith("-L")]
    return [d for d in dirs
            if os.path.normpath(d) not in SYSTEM_LIBDIRS]


def write_private_headers(dest):
    """dest/config.h (what the module needs of configure's: the system
    extensions) and dest/common/sigchain.h (header-only, not installed by
    libddp-dev), so that the installed ddp.h, not the checkout's, is the one
    compiled against."""
    os.makedirs(os.path.join(dest, "common"), exist_ok=True)
    with open(os.path.join(dest, "config.h"), "w", encoding="utf-8") as f:
        f.write("/* config.h - written by libjob/python/setup.py: the "
                "module against an installed libddp. */\n"
                "#ifndef _GNU_SOURCE\n# define _GNU_SOURCE 1\n#endif\n")
    shutil.copy(os.path.join(TOP, "libjob", "common", "sigchain.h"),
                os.path.join(dest, "common", "sigchain.h"))


class BuildExt(build_ext):
    """build_ext that first finds or builds libddp (module docstring)."""

    def run(self):
        try:
            self.configure_libddp()
        except DdpBuildError as e:
            sys.exit("ddp: error: %s" % e)
        # Always link again: a module left in build_lib by an earlier build
        # may be of the other libddp (an installed one, not the checkout's)
        # and newer than its sources, which build_ext would take as done.
        self.force = True
        super().run()

    def configure_libddp(self):
        mode = os.environ.get("DDP_LIBDDP", "auto")
        if mode not in ("auto", "pkg-config", "checkout"):
            raise DdpBuildError("DDP_LIBDDP=%s: use auto, pkg-config or "
                                "checkout" % mode)
        found = pkg_config("--exists", "ddp") is not None
        if mode == "pkg-config" and not found:
            raise DdpBuildError(
                "DDP_LIBDDP=pkg-config but `pkg-config ddp` finds no libddp:"
                " install it (make install, libddp-dev) or add its "
                "lib/pkgconfig to PKG_CONFIG_PATH")
        if mode == "pkg-config" or (mode == "auto" and found):
            self.use_installed()
        else:
            self.use_checkout()

    def ext(self):
        return self.extensions[0]

    def common_flags(self, ext):
        ext.extra_compile_args += ["-std=gnu11", "-fvisibility=hidden"]
        script = os.path.join(self.build_temp, "ddp-module.map")
        os.makedirs(self.build_temp, exist_ok=True)
        with open(script, "w", encoding="utf-8") as f:
            f.write("/* Only the module's init function leaves it. */\n"
                    "{ global: PyInit__ddp; local: *; };\n")
        ext.extra_link_args += ["-Wl,--version-script=" + script]

    def use_installed(self):
        want = checkout_version()
        have = (pkg_config("--modversion", "ddp") or ["?"])[0]
        if have != want:
            raise DdpBuildError(
                "the installed libddp (pkg-config ddp) is %s, this checkout "
                "is %s: install this checkout's libddp, or build it into the"
                " module with DDP_LIBDDP=checkout" % (have, want))
        cflags = pkg_config("--cflags", "ddp") or []
        libs = pkg_config("--libs", "ddp") or []
        private = os.path.join(self.build_temp, "ddp-private")
        write_private_headers(private)
        ext = self.ext()
        ext.include_dirs = [private]
        ext.extra_compile_args += cflags
        ext.extra_link_args += libs
        ext.extra_link_args += ["-Wl,-rpath," + d for d in rpaths_of(libs)]
        self.common_flags(ext)
        print("ddp: libddp %s from pkg-config (%s)" % (have, " ".join(libs)),
              flush=True)

    def use_checkout(self):
        version = checkout_version()
        if os.path.exists(os.path.join(TOP, "config.status")):
            raise DdpBuildError(
                "%s is configured in place (config.status): configure there"
                " builds no second tree; `make distclean` it, or install its"
                " libddp (make install) and use that (pkg-config)" % TOP)
        if not os.path.exists(os.path.join(TOP, "configure")):
            run(["autoreconf", "-fi"], TOP, "autoreconf (no ./configure)")
        bdir = os.path.abspath(os.path.join(self.build_temp, "libddp"))
        os.makedirs(bdir, exist_ok=True)
        archive = os.path.join(bdir, "libjob", ".libs", "libddp.a")
        cmd = [os.path.join(TOP, "configure"), "--disable-shared",
               "--enable-static", "--with-pic", "--without-python",
               "--without-slurm", "--disable-dependency-tracking"]
        cmd += shlex.split(os.environ.get("DDP_CONFIGURE_FLAGS", ""))
        # Configured once per build folder, again when the options change
        # (the stamp holds the command that made config.status).
        stamp = os.path.join(bdir, "ddp-configure-command")
        try:
            with open(stamp, encoding="utf-8") as f:
                done = f.read() == repr(cmd)
        except OSError:
            done = False
        if not done or not os.path.exists(os.path.join(bdir, "config.status")):
            run(cmd, bdir, "configure libddp")
            with open(stamp, "w", encoding="utf-8") as f:
                f.write(repr(cmd))
        jobs = "-j%d" % max(1, min(4, os.cpu_count() or 1))
        run(["make", jobs, "-C", "libjob"], bdir, "make libddp")
        # What libddp itself links (ddp.pc's Libs.private: PMIx, NCCL,
        # CUDA, pthread), without the installed -lddp.
        env = dict(os.environ, PKG_CONFIG_PATH=os.path.join(bdir, "libjob"))
        libs = pkg_config("--static", "--libs", "ddp", env=env)
        libdir = pkg_config("--variable=libdir", "ddp", env=env)
        if libs is None or libdir is None:
            raise DdpBuildError("pkg-config cannot read %s/libjob/ddp.pc"
                                % bdir)
        libs = [f for f in libs if f not in ("-lddp", "-L" + libdir[0])]
        ext = self.ext()
        ext.include_dirs = [bdir, os.path.join(TOP, "libjob")]
        ext.extra_objects = [archive]
        ext.extra_link_args += libs
        ext.extra_link_args += ["-Wl,-rpath," + d for d in rpaths_of(libs)]
        self.common_flags(ext)
        print("ddp: libddp %s built from the checkout into the module (%s)"
              % (version, " ".join(libs)), flush=True)


def scratch_options():
    """setup()'s defaults for build_base and egg_base: a temporary folder
    (removed at exit), not the source folder (module docstring)."""
    scratch = tempfile.mkdtemp(prefix="slurm-ddp-setup-")
    atexit.register(shutil.rmtree, scratch, ignore_errors=True)
    return {"build": {"build_base": os.path.join(scratch, "build")},
            "egg_info": {"egg_base": scratch}}


def main():
    try:
        version = checkout_version()
    except DdpBuildError as e:
        sys.exit("ddp: error: %s" % e)
    setup(
        options=scratch_options(),
        name="slurm-ddp",
        version=version,
        description="libddp for Python (import ddp): slurm-ddp's job-side "
                    "library for distributed training on Slurm",
        license="see the slurm-ddp checkout's LICENSE",
        python_requires=">=3.7",
        packages=["ddp"],
        ext_modules=[Extension("ddp._ddp",
                               sources=SOURCES,
                               depends=["pyddp.h"])],
        cmdclass={"build_ext": BuildExt},
        zip_safe=False,
    )


if __name__ == "__main__":
    main()
