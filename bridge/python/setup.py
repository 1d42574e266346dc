# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Build hooks for the pinnedflow package (metadata is in pyproject.toml).

Only one thing needs code: PINNEDFLOW_BUNDLE_LIBRARY=PATH copies that
libpinnedflow.so.0 into the package, where pinnedflow._native looks first
(after PINNEDFLOW_LIBRARY), and makes the wheel platform-specific.
Without it the package is pure Python and uses the system's library.
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

BUNDLE = os.environ.get("PINNEDFLOW_BUNDLE_LIBRARY", "")


class BuildPy(build_py):
    def run(self):
        super().run()
        if BUNDLE:
            if not os.path.isfile(BUNDLE):
                raise SystemExit("PINNEDFLOW_BUNDLE_LIBRARY=%s: no such file"
                                 % BUNDLE)
            dest = os.path.join(self.build_lib, "pinnedflow",
                                "libpinnedflow.so.0")
            shutil.copyfile(BUNDLE, dest)
            os.chmod(dest, 0o755)


class BinaryDistribution(Distribution):
    def has_ext_modules(self):
        return bool(BUNDLE)


setup(cmdclass={"build_py": BuildPy}, distclass=BinaryDistribution)
