# Docs suite: what README.md and docs/*.md tell a reader to run does run.
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_docs.py CASE
  launch    every gst-launch-1.0 line in a code block of README.md and
            docs/*.md runs and exits 0 with no ERROR or CRITICAL in its
            output (details below)
  includes  every #include of ours in a C code block resolves and links
            from the build tree (meson's uninstalled .pc files)
  counts    "# N tests" next to a `meson test ... --suite S` line is the
            number of tests in suite S
  origin    gst-inspect-1.0 shows the configured package origin, not
            GStreamer's "Unknown package origin"

How `launch` runs a line: verbatim through bash, in a directory where
`build` is the build tree and `bridge` the source's bridge/ (the docs say
build/...), with GST_PLUGIN_PATH_1_0 naming the build's plugins. Only
around the line, never inside it:
  - a time limit (60 s) on every process;
  - a line with pinnedshmsrc and no pinnedshmsink gets a producer on the
    same socket path (30 frames, RGBA 320x240, then EOS), started after the
    consumer: the documented consumer must wait for it and exit at EOS;
  - a line with pinnedshmsink and no pinnedshmsrc gets a consumer: one that
    reads to EOS when the line has num-buffers, else one that takes 10
    frames, after which the producer gets SIGINT (what Ctrl-C does);
  - a code block in which a command ends in `&` is one shell script (run
    with bash -e, then every background job is waited for and must exit 0);
  - lines with pinnedcuda elements run on the CPU emulator of cudart
    (GST_PINNEDFLOW_CUDART, as tests/cuda does) with PFEMU_LEAK_ABORT=1, so
    a CUDA resource left at exit fails the line;
  - lines with v4l2src run on the V4L2 stand-in of tests/v4l2 (preloaded,
    playing /dev/video0 and /dev/udmabuf), skipped where v4l2src is not
    installed.
The lines use fixed paths in /tmp (/tmp/cam.sock, ...): an flock on
/tmp/gst-pinnedflow-docs.lock keeps two build trees' runs apart.
"""
import fcntl
import glob
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile

SOURCE = os.environ["PINNEDFLOW_SOURCE_ROOT"]
BUILD = os.environ["PINNEDFLOW_BUILD_ROOT"]
EMULATOR = os.environ.get("PINNEDFLOW_DOCS_EMULATOR", "")
V4L2_STANDIN = os.environ.get("PINNEDFLOW_DOCS_V4L2", "")
LIMIT = 60
BAD = re.compile(r"^(ERROR|.*CRITICAL|.*\*\*.*WARNING)", re.M)


def doc_files():
    return [os.path.join(SOURCE, "README.md")] + sorted(
        glob.glob(os.path.join(SOURCE, "docs", "*.md")))


def code_blocks(path):
    """(first line number, language, [lines]) of each fenced block and each
    indented (4 spaces, after a blank line) block."""
    lines = open(path).read().split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.lstrip().startswith("```"):
            lang = line.strip()[3:].strip()
            start, body = i + 1, []
            i += 1
            while i < len(lines) and not lines[i].lstrip().startswith("```"):
                body.append(lines[i])
                i += 1
            yield start + 1, lang, body
        elif line.startswith("    ") and (i == 0 or not lines[i - 1].strip()):
            start, body = i, []
            while i < len(lines) and (lines[i].startswith("    ")
                                      or not lines[i].strip()):
                body.append(lines[i][4:])
                i += 1
            while body and not body[-1].strip():
                body.pop()
            yield start + 1, "", body
            continue
        i += 1


def commands(body):
    """(index in the block, command) of each shell command of a block,
    continuation lines joined."""
    out, cur, first = [], "", 0
    for n, line in enumerate(body):
        if cur:
            cur += " " + line.strip()
        else:
            cur, first = line.strip(), n
        if cur.endswith("\\"):
            cur = cur[:-1].rstrip()
            continue
        if cur and not cur.startswith("#"):
            out.append((first, cur))
        cur = ""
    return out


def strip_comment(cmd):
    return re.sub(r"\s+#.*$", "", cmd)


def units():
    """(where, kind, text) for everything `launch` runs."""
    found = []
    for path in doc_files():
        rel = os.path.relpath(path, SOURCE)
        for lineno, lang, body in code_blocks(path):
            if lang not in ("", "sh", "bash", "shell", "console"):
                continue
            cmds = commands(body)
            launch = [(n, c) for n, c in cmds if "gst-launch-1.0" in c]
            if not launch:
                continue
            if any(strip_comment(c).endswith("&") for _, c in cmds):
                found.append(("%s:%d" % (rel, lineno), "script",
                              "\n".join(body)))
                continue
            for n, c in launch:
                found.append(("%s:%d" % (rel, lineno + n), "line", c))
    return found


class Proc(object):
    """A bash command in its own process group, output to a file."""

    def __init__(self, cmd, env, cwd, name, opts=""):
        self.name = name
        self.log = os.path.join(cwd, "%s.log" % name)
        self.f = open(self.log, "w")
        self.p = subprocess.Popen(["bash"] + opts.split() + ["-c", cmd],
                                  env=env, cwd=cwd, stdout=self.f,
                                  stderr=subprocess.STDOUT,
                                  start_new_session=True)

    def signal(self, sig):
        try:
            os.killpg(self.p.pid, sig)
        except ProcessLookupError:
            pass

    def wait(self, timeout=LIMIT):
        try:
            rc = self.p.wait(timeout)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.p.wait()
            rc = "timeout after %d s" % timeout
        # whatever the command left behind (background jobs) goes too
        self.signal(signal.SIGKILL)
        self.f.close()
        return rc

    def output(self):
        return open(self.log).read()


def socket_of(text):
    m = re.search(r"socket-path=(\S+)", text)
    return m.group(1) if m else None


def run_unit(kind, text, env, cwd):
    """Returns a list of (what, rc, output) for the processes it ran."""
    if kind == "script":
        script = text + "\nfor j in $(jobs -p); do wait \"$j\" || exit $?; done\n"
        p = Proc(script, env, cwd, "script", "-e")
        return [("block", p.wait(), p.output())]
    sink, src = "pinnedshmsink" in text, "pinnedshmsrc" in text
    sock = socket_of(text)
    if src and not sink:
        doc = Proc(text, env, cwd, "doc")
        prod = Proc("sleep 0.5; exec gst-launch-1.0 videotestsrc num-buffers=30 ! "
                    "video/x-raw,format=RGBA,width=320,height=240,"
                    "framerate=30/1 ! pinnedshmsink socket-path=%s "
                    "wait-for-connection=true" % sock, env, cwd, "producer")
        rc = doc.wait()
        if rc != 0:                     # nobody will connect to it now
            prod.signal(signal.SIGKILL)
        return [("documented consumer", rc, doc.output()),
                ("test producer", prod.wait(), prod.output())]
    if sink and not src:
        doc = Proc(text, env, cwd, "doc")
        finite = "num-buffers=" in text
        cons = Proc("exec gst-launch-1.0 pinnedshmsrc socket-path=%s "
                    "connect-timeout=30000 %s ! fakesink"
                    % (sock, "" if finite else "num-buffers=10"),
                    env, cwd, "consumer")
        rc = cons.wait()
        res = [("test consumer", rc, cons.output())]
        if not finite:
            doc.signal(signal.SIGINT)
        elif rc != 0:
            doc.signal(signal.SIGKILL)
        res.insert(0, ("documented producer", doc.wait(), doc.output()))
        return res
    p = Proc(text, env, cwd, "doc")
    return [("line", p.wait(), p.output())]


def have_v4l2src():
    return subprocess.run(["gst-inspect-1.0", "--exists", "v4l2src"],
                          stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0


def case_launch():
    found = units()
    assert len(found) >= 10, "only %d launch lines found: %s" % (
        len(found), found)
    base = dict(os.environ)
    for k in ("GST_PLUGIN_PATH", "GST_PINNEDFLOW_CUDART"):
        base.pop(k, None)
    failed, skipped = [], 0
    lock = open("/tmp/gst-pinnedflow-docs.lock", "a")
    fcntl.flock(lock, fcntl.LOCK_EX)
    try:
        for n, (where, kind, text) in enumerate(found):
            env = dict(base)
            gpu = "pinnedcuda" in text
            if gpu and not EMULATOR:
                print("skip %s: %s (built with -Dcuda=disabled)" % (where,
                                                                   text))
                skipped += 1
                continue
            if "v4l2src" in text and not (V4L2_STANDIN and have_v4l2src()):
                print("skip %s: %s (no v4l2src or no stand-in)" % (where,
                                                                  text))
                skipped += 1
                continue
            if "v4l2src" in text:
                env["LD_PRELOAD"] = V4L2_STANDIN
                env["PFEMU_V4L2_DEVICE"] = "/dev/video0"
                env["PFEMU_UDMABUF"] = "1"
            if gpu:
                env["GST_PINNEDFLOW_CUDART"] = EMULATOR
                env["PINNEDFLOW_CUDA_MODE"] = "emulated"
                env["PFEMU_LEAK_ABORT"] = "1"
            cwd = tempfile.mkdtemp(prefix="pf-docs-")
            try:
                os.symlink(BUILD, os.path.join(cwd, "build"))
                os.symlink(os.path.join(SOURCE, "bridge"),
                           os.path.join(cwd, "bridge"))
                results = run_unit(kind, text, env, cwd)
            finally:
                shutil.rmtree(cwd, ignore_errors=True)
            ok = all(rc == 0 and not BAD.search(out)
                     for _, rc, out in results)
            print("%s %s%s: %s" % ("ok  " if ok else "FAIL", where,
                                   " (emulated CUDA)" if gpu else "",
                                   text.replace("\n", "; ")), flush=True)
            if not ok:
                failed.append(where)
                for what, rc, out in results:
                    print("  %s: exit %s\n    %s" % (
                        what, rc, out.strip()[-3000:].replace("\n",
                                                              "\n    ")))
    finally:
        lock.close()
    print("%d of %d documented launch lines ran, %d failed, %d skipped" % (
        len(found) - len(failed) - skipped, len(found), len(failed), skipped))
    assert not failed, "failed: %s" % ", ".join(failed)


def case_includes():
    headers = []
    for path in doc_files():
        for lineno, lang, body in code_blocks(path):
            if lang != "c":
                continue
            for line in body:
                m = re.match(r"\s*#include\s+<((?:gst/pinned|pinnedflow/)\S+)>",
                             line)
                if m:
                    headers.append((os.path.relpath(path, SOURCE), m.group(1)))
    assert headers, "no #include of ours in the docs' C blocks"
    env = dict(os.environ)
    env["PKG_CONFIG_PATH"] = os.path.join(BUILD, "meson-uninstalled")
    pcs = [os.path.basename(p)[:-len("-uninstalled.pc")] for p in glob.glob(
        os.path.join(BUILD, "meson-uninstalled", "*-uninstalled.pc"))]
    flags = subprocess.run(
        ["pkg-config", "--cflags", "--libs"] + pcs, env=env,
        check=True, capture_output=True, text=True).stdout.split()
    tmp = tempfile.mkdtemp(prefix="pf-docs-inc-")
    try:
        for doc, h in headers:
            src = os.path.join(tmp, "inc.c")
            with open(src, "w") as f:
                f.write("#include <%s>\nint main (void) { return 0; }\n" % h)
            subprocess.run(["cc", "-Werror", "-o", os.path.join(tmp, "inc"),
                            src] + flags, check=True)
            print("ok   %s: #include <%s>" % (doc, h))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def case_counts():
    claims = []
    for path in doc_files():
        for lineno, lang, body in code_blocks(path):
            for line in body:
                m = re.search(r"meson test .*--suite (\w+).*#\s*(\d+) tests",
                              line)
                if m:
                    claims.append((os.path.relpath(path, SOURCE), m.group(1),
                                   int(m.group(2))))
    assert claims, "no test count in the docs"
    # the introspection data, not `meson test --list`, whose format
    # changed ("proj:suite / name" in 1.0, "suite - proj:name" later)
    listed = json.loads(subprocess.run(
        ["meson", "introspect", "--tests", BUILD], check=True,
        capture_output=True, text=True).stdout)
    for doc, suite, n in claims:
        have = sum(1 for t in listed
                   if any(s.split(":")[-1] == suite for s in t["suite"]))
        assert have == n, "%s says suite %s has %d tests, it has %d" % (
            doc, suite, n, have)
        print("ok   %s: suite %s has %d tests" % (doc, suite, n))


def case_origin():
    want = sys.argv[2]
    out = subprocess.run(["gst-inspect-1.0", "pinnedshmsink"], check=True,
                         capture_output=True, text=True).stdout
    m = re.search(r"Origin URL +(.*)", out)
    assert m and m.group(1).strip() == want, (m and m.group(1), want)
    assert "Unknown package origin" not in out
    print("ok   Origin URL %s" % m.group(1))


if __name__ == "__main__":
    {"launch": case_launch, "includes": case_includes,
     "counts": case_counts, "origin": case_origin}[sys.argv[1]]()
