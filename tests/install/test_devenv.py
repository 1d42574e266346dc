# Install suite: `meson devenv -C BUILD` is enough to run what we ship.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_devenv.py MESON

The rule: inside `meson devenv` alone (none of the test environment's
GST_PLUGIN_PATH_1_0, LD_LIBRARY_PATH or PYTHONPATH), from the source root:
  - gst-inspect-1.0 finds pinnedshmsink and pinnedcudaupload in the build;
  - python3 -c 'import pinnedflow' imports bridge/python and maps the
    build's libpinnedflow;
  - the example nodes run: bridge/examples/camera_node.py (Python) feeds
    pf-latency-node (C, found on PATH) 5 frames and the EOS.
"""
import os
import re
import subprocess
import sys
import tempfile

SOURCE = os.environ["PINNEDFLOW_SOURCE_ROOT"]
BUILD = os.environ["PINNEDFLOW_BUILD_ROOT"]


def devenv(meson, cmd, env):
    print("+ meson devenv", " ".join(cmd), flush=True)
    return subprocess.run([meson, "devenv", "-C", BUILD, "-w", SOURCE] + cmd,
                          env=env, check=True, capture_output=True,
                          text=True, timeout=120).stdout


def main():
    meson = sys.argv[1]
    tmp = tempfile.mkdtemp(prefix="pf-devenv-")
    env = {k: v for k, v in os.environ.items()
           if k not in ("GST_PLUGIN_PATH", "GST_PLUGIN_PATH_1_0",
                        "LD_LIBRARY_PATH", "PYTHONPATH", "PINNEDFLOW_LIBRARY",
                        "GI_TYPELIB_PATH")}
    env["GST_REGISTRY_1_0"] = os.path.join(tmp, "registry.bin")
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    try:
        for element, plugin in (("pinnedshmsink", "gst/shm/libgstpinnedshm.so"),
                                ("pinnedcudaupload",
                                 "ext/cuda/libgstpinnedcuda.so")):
            text = devenv(meson, ["gst-inspect-1.0", element], env)
            m = re.search(r"Filename +(\S+)", text)
            assert m and os.path.realpath(m.group(1)) == os.path.realpath(
                os.path.join(BUILD, plugin)), (element, m and m.group(1))
            print("%s from %s" % (element, m.group(1)))

        where = devenv(meson, [sys.executable, "-c",
                               "import pinnedflow; print(pinnedflow.__file__); "
                               "print([l.split()[-1] for l in "
                               "open('/proc/self/maps') "
                               "if 'libpinnedflow.so' in l][0])"], env).split()
        assert where[0] == os.path.join(SOURCE, "bridge", "python",
                                        "pinnedflow", "__init__.py"), where
        assert os.path.realpath(where[1]).startswith(
            os.path.realpath(BUILD) + "/"), where
        print("import pinnedflow: %s with %s" % tuple(where))

        sock = os.path.join(tmp, "cam.sock")
        text = devenv(meson, ["bash", "-c",
                              "pf-latency-node %s & "
                              "%s bridge/examples/camera_node.py %s 5 64 48 30 "
                              "&& wait $!" % (sock, sys.executable, sock)],
                      env)
        frames = re.findall(r"^frame \d+ ", text, re.M)
        assert len(frames) == 5 and "EOS" in text, text
        print("camera_node.py -> pf-latency-node: 5 frames and EOS")
    finally:
        subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    main()
