#!/usr/bin/python3
# The source tree's shape (issue 24), checked: no .c or .h file outside
# tests/ and bench/ over 900 lines; no two .c files of one folder calling
# each other's (non-static) functions; and in lib/pinnedflow/ no #include
# reaching up the layers (memory < wire < transport < node < cuda < export,
# lib/pinnedflow/meson.build). Prints what it finds; exit 1 on any.
#
#   tools/check-layout.py [SOURCE_ROOT]
# SPDX-License-Identifier: LGPL-2.1-or-later
import glob
import itertools
import os
import re
import sys

ROOT = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else
                       os.path.join(os.path.dirname(__file__), ".."))
CODE = ["lib", "gst-libs", "gst", "ext", "bridge"]
LAYERS = [".", "memory", "wire", "transport", "node", "cuda", "export"]
MAX_LINES = 900


def strip(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r'"(\\.|[^"\\])*"', '""', text)


def too_long():
    bad = []
    for top in CODE:
        for path in glob.glob(os.path.join(ROOT, top, "**", "*.[ch]"),
                              recursive=True):
            n = sum(1 for _ in open(path))
            if n > MAX_LINES:
                bad.append("%s: %d lines (> %d)" %
                           (os.path.relpath(path, ROOT), n, MAX_LINES))
    return bad


def circles():
    bad = []
    folders = {os.path.dirname(p) for top in CODE for p in
               glob.glob(os.path.join(ROOT, top, "**", "*.c"), recursive=True)}
    for folder in sorted(folders):
        files = sorted(glob.glob(os.path.join(folder, "*.c")))
        texts = {f: strip(open(f).read()) for f in files}
        defs = {}
        for f in files:
            for m in re.finditer(r"^(?!static)[A-Za-z_][\w \*]*?\n"
                                 r"([a-z_][a-z0-9_]*) \(", texts[f], re.M):
                defs.setdefault(m.group(1), f)
        calls = {f: set() for f in files}
        for f in files:
            for name, g in defs.items():
                if g != f and re.search(r"\b%s\b" % name, texts[f]):
                    calls[f].add(g)
        for a, b in itertools.combinations(files, 2):
            if b in calls[a] and a in calls[b]:
                bad.append("%s <-> %s call each other" %
                           (os.path.relpath(a, ROOT), os.path.relpath(b, ROOT)))
    return bad


def layers():
    bad = []
    lib = os.path.join(ROOT, "lib", "pinnedflow")
    where = {}
    for layer in LAYERS:
        for path in glob.glob(os.path.join(lib, layer, "pf-*.h")):
            where[os.path.basename(path)] = layer
    for layer in LAYERS:
        for path in glob.glob(os.path.join(lib, layer, "pf-*.[ch]")):
            text = open(path).read()
            for inc in re.findall(r'#include [<"](?:pinnedflow/)?(pf-[^>"]+)[>"]',
                                  text):
                up = where.get(inc)
                if up is not None and LAYERS.index(up) > LAYERS.index(layer):
                    bad.append("%s includes %s/%s (a layer above)" %
                               (os.path.relpath(path, ROOT), up, inc))
    return bad


def main():
    bad = too_long() + circles() + layers()
    for line in bad:
        print(line)
    if not bad:
        print("layout: no file over %d lines, no circle, no include up "
              "the layers" % MAX_LINES)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
