# Install suite: the Debian packages, built from this tree and checked.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_debs.py SOURCE_ROOT

The rule: `dpkg-buildpackage -b -us -uc` builds the packages of debian/
from a copy of this tree; each package holds what it should and no file is
in two; extracted into a temp root, the plugins are found by GStreamer and
the Python package by Python with only that root's paths:
  - gst-inspect-1.0 pinnedshmsink / pinnedcudaupload, GStreamer's system
    plugin path set to the root's plugin dir alone, a fresh registry; their
    origin is the README the package installs;
  - python3 -c 'import pinnedflow' (PYTHONPATH and LD_LIBRARY_PATH of the
    root), and the root's libpinnedflow is the one mapped;
  - PyGObject loads the root's GstPinnedflow-1.0 typelib (GI_TYPELIB_PATH)
    and test_gir.py allocates pinned buffers through it;
  - a C program built with the root's pkg-config files against the root's
    headers and libraries;
  - gst-launch-1.0 with the root's pinnedshmsink feeding a consumer that is
    the root's Python package: the frames arrive byte for byte.
An extraction is not an installation: dpkg would put these paths in the
places GStreamer and Python search by default; above they are set, one each,
to the root. Where this process may make a mount namespace (root with
CAP_SYS_ADMIN, as here), the root's /usr is then also laid over the real
/usr (overlayfs, private to `unshare -m`: the system is not touched), and
gst-inspect-1.0, import pinnedflow and test_gir.py run again with no path
variable at all, only a fresh GST_REGISTRY_1_0; where it may not, the test
says so in its output. The build runs with DEB_BUILD_OPTIONS=nocheck (the
suite runs here already). Everything lives in one temp dir, removed at exit;
with PINNEDFLOW_DEBS_OUT=DIR the checked .debs are copied to DIR first.
"""
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile


def run(cmd, env=None, **kw):
    print("+", " ".join(cmd), flush=True)
    return subprocess.run(cmd, env=env, check=True, **kw)


def out(cmd, env=None):
    return run(cmd, env, capture_output=True, text=True).stdout


def copy_tree(src_root, dest):
    """The working tree as git sees it (tracked and untracked, not
    ignored); a plain copy without build directories outside git."""
    try:
        names = subprocess.run(
            ["git", "-C", src_root, "ls-files", "-z", "-co",
             "--exclude-standard"], check=True, capture_output=True
        ).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        names = None
    if names is None:
        shutil.copytree(src_root, dest, symlinks=True,
                        ignore=shutil.ignore_patterns(
                            ".git", "build*", "obj-*", "__pycache__"))
        return
    for name in names:
        path = os.path.join(src_root, name)
        if not name or not os.path.lexists(path):
            continue                    # deleted in the working tree
        target = os.path.join(dest, name)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copy2(path, target, follow_symlinks=False)


DOC = "usr/share/doc/gstreamer1.0-pinnedflow"
HERE = os.path.dirname(os.path.abspath(__file__))


def check(cond, msg):
    if not cond:
        raise AssertionError(msg)


def installed_check(root, tmp, base, triplet):
    """The packages' files at their real paths (the root's /usr over /usr
    in a private mount namespace), nothing in the environment."""
    env = {k: v for k, v in base.items()
           if k not in ("LD_LIBRARY_PATH", "PYTHONPATH", "GI_TYPELIB_PATH",
                        "GST_PLUGIN_SYSTEM_PATH_1_0", "GST_PLUGIN_PATH",
                        "GST_PLUGIN_PATH_1_0", "PINNEDFLOW_LIBRARY")}
    env["GST_REGISTRY_1_0"] = os.path.join(tmp, "registry-installed.bin")
    script = ('mount -t overlay overlay -o lowerdir="$0"/usr:/usr /usr '
              '&& cd / && exec "$@"')

    def ns(cmd, check=True):
        return subprocess.run(["unshare", "-m", "--propagation", "private",
                               "sh", "-c", script, root] + cmd, env=env,
                              capture_output=True, text=True, check=check)

    probe = ns(["true"], check=False)
    if probe.returncode != 0:
        print("not checked at the real paths: no private mount namespace "
              "here (%s)" % probe.stderr.strip())
        return
    outside = subprocess.run([sys.executable, "-c", "import pinnedflow"],
                             env=env, cwd="/", capture_output=True)
    if outside.returncode == 0:
        print("not checked at the real paths: pinnedflow is installed on "
              "this system already, the check would prove nothing")
        return
    lib = "/usr/lib/" + triplet
    text = ns(["gst-inspect-1.0", "pinnedshmsink"]).stdout
    m = re.search(r"Filename +(\S+)", text)
    check(m and m.group(1) in (lib + "/gstreamer-1.0/libgstpinnedshm.so",
                               lib[4:] + "/gstreamer-1.0/libgstpinnedshm.so"),
          text)
    check(re.search(r"Origin URL +file:///%s/README\.md\n" % re.escape(DOC),
                    text), text)
    where = ns([sys.executable, "-c",
                "import pinnedflow; print(pinnedflow.__file__); "
                "print([l.split()[-1] for l in open('/proc/self/maps') "
                "if 'libpinnedflow.so' in l][0])"]).stdout.split()
    check(where[0] == "/usr/lib/python3/dist-packages/pinnedflow/__init__.py"
          and os.path.realpath(where[1]).endswith("/libpinnedflow.so.0.1.0")
          and os.path.dirname(where[1]) in (lib, lib[4:]), where)
    ns([sys.executable, os.path.join(HERE, "test_gir.py")])
    print("at the real paths, no path variable set: gst-inspect-1.0 "
          "pinnedshmsink from %s, import pinnedflow from %s with %s, "
          "test_gir.py passes" % (m.group(1), where[0], where[1]))


def main():
    src_root = sys.argv[1]
    triplet = out(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"]).strip()
    lib = "usr/lib/" + triplet
    plugins = lib + "/gstreamer-1.0"
    pydir = "usr/lib/python3/dist-packages"
    # package -> paths it must hold (./-relative, as dpkg-deb -c prints)
    want = {
        "libpinnedflow0": [lib + "/libpinnedflow.so.0"],
        "libpinnedflow-dev": [lib + "/libpinnedflow.so",
                              "usr/include/pinnedflow/pf-node.h",
                              "usr/include/pinnedflow/pf-segment.h",
                              lib + "/pkgconfig/pinnedflow.pc"],
        "libgstpinnedflow-1.0-0": [lib + "/libgstpinnedflow-1.0.so.0",
                                   lib + "/libgstpinnedflowcuda-1.0.so.0"],
        "libgstpinnedflow-1.0-dev": [
            lib + "/libgstpinnedflow-1.0.so",
            lib + "/libgstpinnedflowcuda-1.0.so",
            "usr/include/gstreamer-1.0/gst/pinnedflow/pinnedflow.h",
            "usr/include/gstreamer-1.0/gst/pinnedcuda/gstpinnedcuda.h",
            lib + "/pkgconfig/gstreamer-pinnedflow-1.0.pc",
            lib + "/pkgconfig/gstreamer-pinnedflow-cuda-1.0.pc",
            "usr/share/gir-1.0/GstPinnedflow-1.0.gir"],
        "gir1.2-gstpinnedflow-1.0": [
            lib + "/girepository-1.0/GstPinnedflow-1.0.typelib"],
        "gstreamer1.0-pinnedflow": [plugins + "/libgstpinnedshm.so",
                                    plugins + "/libgstpinnedcuda.so",
                                    DOC + "/README.md",
                                    DOC + "/elements.md"],
        "python3-pinnedflow": [pydir + "/pinnedflow/__init__.py",
                               pydir + "/pinnedflow/_native.py"],
    }

    tmp = tempfile.mkdtemp(prefix="pf-debs-")
    try:
        src = os.path.join(tmp, "gst-pinnedflow")
        copy_tree(src_root, src)
        env = dict(os.environ)
        env["DEB_BUILD_OPTIONS"] = "nocheck noautodbgsym parallel=%d" % (
            min(os.cpu_count() or 1, 2))
        for k in ("GST_PLUGIN_PATH", "GST_PLUGIN_PATH_1_0", "LD_LIBRARY_PATH",
                  "PYTHONPATH", "PINNEDFLOW_LIBRARY", "MESON_TEST_ITERATION"):
            env.pop(k, None)
        log = os.path.join(tmp, "build.log")
        with open(log, "w") as f:
            rc = subprocess.run(["dpkg-buildpackage", "-b", "-us", "-uc"],
                                cwd=src, env=env, stdout=f,
                                stderr=subprocess.STDOUT).returncode
        if rc != 0:
            sys.stdout.write(open(log).read()[-6000:])
            raise AssertionError("dpkg-buildpackage failed: %d" % rc)

        debs = {}
        for deb in sorted(glob.glob(os.path.join(tmp, "*.deb"))):
            name = out(["dpkg-deb", "-f", deb, "Package"]).strip()
            debs[name] = deb
        check(sorted(debs) == sorted(want),
              "packages %s, expected %s" % (sorted(debs), sorted(want)))
        owner = {}
        for name, deb in sorted(debs.items()):
            listing = out(["dpkg-deb", "-c", deb])
            paths = set()
            for line in listing.splitlines():
                path = line.split()[5]
                if path.endswith("/"):
                    continue
                path = path[2:]                  # ./usr/... -> usr/...
                check(path not in owner, "%s in %s and %s"
                      % (path, owner.get(path), name))
                owner[path] = name
                paths.add(path)
            for path in want[name]:
                check(path in paths, "%s lacks %s:\n%s" % (name, path,
                                                            listing))
            print("%s: %d files, has %s" % (name, len(paths),
                                            ", ".join(want[name])))

        root = os.path.join(tmp, "root")
        for deb in debs.values():
            run(["dpkg-deb", "-x", deb, root])

        base = {k: v for k, v in env.items() if k != "DEB_BUILD_OPTIONS"}
        base["GST_REGISTRY_1_0"] = os.path.join(tmp, "registry.bin")
        base["LD_LIBRARY_PATH"] = os.path.join(root, lib)
        gst = dict(base)
        gst["GST_PLUGIN_SYSTEM_PATH_1_0"] = os.path.join(root, plugins)
        for element, plugin in (("pinnedshmsink", "libgstpinnedshm.so"),
                                ("pinnedcudaupload", "libgstpinnedcuda.so")):
            text = out(["gst-inspect-1.0", element], gst)
            check(os.path.join(root, plugins, plugin) in text,
                  "%s not from the root:\n%s" % (element, text))
            # The origin is the documentation the package installs.
            check(re.search(r"Origin URL +file:///%s/README\.md\n"
                            % re.escape(DOC), text),
                  "%s: origin:\n%s" % (element, text))
        check(os.path.isfile(os.path.join(root, DOC, "README.md")), DOC)
        print(out(["gst-inspect-1.0", "pinnedshmsink"], gst)[:900])

        py = dict(base)
        py["PYTHONPATH"] = os.path.join(root, pydir)
        py["PYTHONDONTWRITEBYTECODE"] = "1"
        where = out([sys.executable, "-c",
                     "import os, pinnedflow; print(pinnedflow.__file__); "
                     "print([l.split()[-1] for l in open('/proc/self/maps') "
                     "if 'libpinnedflow.so' in l][0])"], py).split()
        check(where[0].startswith(os.path.join(root, pydir) + "/"), where)
        check(os.path.realpath(where[1]).startswith(root + "/"), where)
        print("import pinnedflow: %s with %s" % tuple(where))

        # PyGObject through the root's typelib (test_gir.py, as in the
        # build tree): a pinned buffer allocated from Python.
        gi = dict(base)
        gi["GI_TYPELIB_PATH"] = os.path.join(root, lib, "girepository-1.0")
        # the typelib mapped (PyGObject 3.52+, e.g. Debian unstable's,
        # refuses GIRepository 2.0 and its get_default())
        typelib = out([sys.executable, "-c",
                       "import gi; gi.require_version('GstPinnedflow', '1.0'); "
                       "from gi.repository import GstPinnedflow; "
                       "print([l.split()[-1] for l in open('/proc/self/maps') "
                       "if l.rstrip().endswith('/GstPinnedflow-1.0.typelib')]"
                       "[0])"], gi).strip()
        check(typelib.startswith(root + "/"), typelib)
        run([sys.executable, os.path.join(HERE, "test_gir.py")], gi)

        installed_check(root, tmp, base, triplet)

        # A C program against the root's headers, .pc files and libraries.
        prog = os.path.join(tmp, "pc-check.c")
        with open(prog, "w") as f:
            f.write("#include <gst/pinnedflow/pinnedflow.h>\n"
                    "#include <pinnedflow/pf-node.h>\n"
                    "int main (int argc, char **argv) {\n"
                    "  gst_init (&argc, &argv);\n"
                    "  GstAllocator *a = gst_pinned_allocator_get ();\n"
                    "  GstMemory *m = gst_allocator_alloc (a, 4096, NULL);\n"
                    "  int ok = m && gst_is_pinned_memory (m)"
                    " && pf_node_abi_sizeof (\"pf_node_frame\") > 0;\n"
                    "  if (m) gst_memory_unref (m);\n"
                    "  gst_object_unref (a);\n"
                    "  return ok ? 0 : 1;\n}\n")
        # The root's .pc files with prefix=/usr moved into the root (what
        # a sysroot would do for ours alone; the system's stay as they are).
        pcdir = os.path.join(tmp, "pkgconfig")
        os.mkdir(pcdir)
        for f in glob.glob(os.path.join(root, lib, "pkgconfig", "*.pc")):
            text = open(f).read()
            check("prefix=/usr\n" in text, f + " has no prefix=/usr")
            with open(os.path.join(pcdir, os.path.basename(f)), "w") as g:
                g.write(text.replace("prefix=/usr\n",
                                     "prefix=%s/usr\n" % root, 1))
        pc = dict(base)
        pc["PKG_CONFIG_PATH"] = pcdir
        flags = out(["pkg-config", "--cflags", "--libs",
                     "gstreamer-pinnedflow-1.0", "pinnedflow"], pc).split()
        check(any(f.startswith("-I" + root) for f in flags), flags)
        exe = os.path.join(tmp, "pc-check")
        run(["cc", "-o", exe, prog] + flags)
        run([exe], base)

        # The root's pinnedshmsink feeding the root's Python package; a
        # tee keeps a copy of every frame. The sink may skip a frame for a
        # client that holds max-client-buffers (it does under load), so
        # each frame that arrives is compared with the copy of the same
        # pts (a moving ball: every frame differs), and EOS must arrive.
        sock = os.path.join(tmp, "cam.sock")
        launch = dict(gst)
        launch["GST_PLUGIN_SYSTEM_PATH_1_0"] = "%s:/usr/lib/%s/gstreamer-1.0" % (
            os.path.join(root, plugins), triplet)
        producer = subprocess.Popen(
            ["gst-launch-1.0", "-q", "videotestsrc", "num-buffers=5",
             "pattern=ball", "!",
             "video/x-raw,format=GRAY8,width=64,height=48,framerate=30/1",
             "!", "tee",
             "name=t", "t.", "!", "queue", "!", "pinnedshmsink",
             "socket-path=" + sock, "wait-for-connection=true", "t.", "!",
             "queue", "!", "filesink", "location=" + sock + ".raw"],
            env=launch)
        try:
            got = out([sys.executable, "-c", """
import sys, time, pinnedflow
for _ in range(200):
    try:
        cons = pinnedflow.Consumer(sys.argv[1], timeout_ms=10000); break
    except OSError:
        time.sleep(0.05)
while True:
    f = cons.next(10000)
    if f is pinnedflow.EOS:
        print("EOS")
        break
    with f:
        print(f.pts, bytes(f.array()).hex())
cons.close()
""", sock], py)
            check(producer.wait(60) == 0, "gst-launch failed")
        finally:
            if producer.poll() is None:
                producer.kill()
                producer.wait()
        raw = open(sock + ".raw", "rb").read()
        size = 64 * 48
        check(len(raw) == 5 * size, "tee copy: %d bytes" % len(raw))
        lines = got.split()
        check(lines and lines[-1] == "EOS", "no EOS: %s" % got[-200:])
        frames = list(zip(lines[:-1:2], lines[1:-1:2]))
        check(len(frames) >= 1, "no frame")
        for pts, data in frames:
            n = round(int(pts) / (1e9 / 30))
            check(0 <= n < 5 and bytes.fromhex(data) == raw[n * size:
                                                            (n + 1) * size],
                  "frame pts %s differs from the copy" % pts)
        print("root pinnedshmsink -> root pinnedflow: %d of 5 frames, each "
              "byte-exact, then EOS" % len(frames))
        # tools/test-matrix.sh installs the checked packages with apt
        keep = os.environ.get("PINNEDFLOW_DEBS_OUT")
        if keep:
            for deb in debs.values():
                shutil.copy2(deb, keep)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
