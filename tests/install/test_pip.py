# Install suite: pip-installs bridge/python offline into a venv.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_pip.py SOURCE_ROOT BUILD_LIBPINNEDFLOW VERSION

The rule: `pip install --no-build-isolation --no-index ./bridge/python`
works offline in a venv with system site packages (Debian's setuptools is
the build backend), the installed package is the one imported, its version
is the meson project's, and it finds libpinnedflow
  1. the system's way (dlopen by soname; LD_LIBRARY_PATH stands in for the
     libpinnedflow0 package here) and passes the bridge suite's binding test;
  2. next to itself, when built with PINNEDFLOW_BUNDLE_LIBRARY, with no
     path set at all.
The source is copied first: setuptools writes build/ and *.egg-info/ into
the directory it builds. Everything lives in one temp dir, removed at exit.
"""
import os
import shutil
import subprocess
import sys
import tempfile


def run(cmd, env, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, env=env, check=True, **kw)


def main():
    src_root, build_lib, version = sys.argv[1:4]
    here = os.path.dirname(os.path.abspath(__file__))
    tmp = tempfile.mkdtemp(prefix="pf-pip-")
    try:
        src = os.path.join(tmp, "src")
        shutil.copytree(os.path.join(src_root, "bridge", "python"), src,
                        ignore=shutil.ignore_patterns(
                            "__pycache__", "build", "*.egg-info"))
        venv = os.path.join(tmp, "venv")
        # No pip inside the venv: Debian's pip (python3-pip) comes in with
        # the system site packages and installs into the venv.
        run([sys.executable, "-m", "venv", "--system-site-packages",
             "--without-pip", venv], None)
        py = os.path.join(venv, "bin", "python")
        pkg = subprocess.run(
            [py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            check=True, capture_output=True, text=True).stdout.strip()
        pkg = os.path.join(pkg, "pinnedflow")

        # A clean environment: nothing of the build tree, no pip config
        # (--isolated), no index.
        base = {k: v for k, v in os.environ.items()
                if k not in ("PYTHONPATH", "PINNEDFLOW_LIBRARY",
                             "LD_LIBRARY_PATH", "PINNEDFLOW_BUNDLE_LIBRARY")}
        base["PYTHONDONTWRITEBYTECODE"] = "1"
        pip = [py, "-m", "pip", "--isolated", "install", "--no-build-isolation",
               "--no-index", "--no-deps", "--no-cache-dir", "--quiet"]

        # 1. pure package, the system's library
        run(pip + [src], base)
        run([py, "-c", "import importlib.metadata as m, sys; "
             "v = m.version('pinnedflow'); "
             "sys.exit(0 if v == sys.argv[1] else 'version %s != %s' "
             "% (v, sys.argv[1]))", version], base)
        assert not os.path.exists(os.path.join(pkg, "libpinnedflow.so.0"))
        env = dict(base)
        env["LD_LIBRARY_PATH"] = os.path.dirname(build_lib)
        run([py, os.path.join(here, "pip_roundtrip.py"), pkg, build_lib], env)
        env["PYTHONPATH"] = os.path.join(src_root, "tests", "bridge")
        run([py, os.path.join(src_root, "tests", "bridge", "test_python.py"),
             "binding"], env)

        # 2. the library bundled next to the package, no path set
        env = dict(base)
        env["PINNEDFLOW_BUNDLE_LIBRARY"] = build_lib
        shutil.rmtree(os.path.join(src, "build"), ignore_errors=True)
        run(pip + ["--force-reinstall", src], env)
        bundled = os.path.join(pkg, "libpinnedflow.so.0")
        assert os.path.isfile(bundled), bundled
        run([py, os.path.join(here, "pip_roundtrip.py"), pkg, bundled], base)
        print("pip install: both ways pass")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
