#!/usr/bin/python3
# The source tree's shape (issues 24 and 31), checked. Three rules:
#
# 1. No .c or .h file outside tests/ and bench/ over 900 lines.
#
# 2. No call circle, of any length, between source files. The graph is
#    read from the built objects, not from the text: `nm` lists what each
#    object defines and what it leaves undefined, so every spelling of a
#    definition counts (GNU layout or `void f(void)` on one line, macros
#    that expand to functions) and a static function never does.
#    - A node is a source file (every object compiled from it is merged:
#      lib/pinnedflow/wire/pf-protocol.c is built into libpinnedflow and
#      into the static libpinnedflow-protocol.a, one node).
#    - An edge a -> b: a's object references (U) a global function symbol
#      (T, W, i) that b's object defines. It is resolved inside a's own
#      link target first (its folder .p in the build: a library, a plugin,
#      a static helper library, an executable); a symbol the target does
#      not define is resolved in the tree's libraries (shared and static
#      targets), the only targets another can link against. Data symbols
#      (D, B, R: a debug category, a parent class pointer) are not calls
#      and make no edge.
#    - Whole tree: every object of compile_commands.json is read, tests/
#      and bench/ included (their helpers must not circle either; a test
#      calling into the library is a plain edge down). Sources in the
#      build directory (generated) are left out.
#    - A strongly connected component of more than one file is a circle;
#      one cycle through it is printed.
#    The build must exist: BUILD_ROOT (default SOURCE_ROOT/build) holds
#    compile_commands.json and the objects it names (meson builds them
#    before its tests run).
#
# 3. In lib/pinnedflow/, no #include reaching up the layers (memory < wire
#    < transport < node < cuda < export, lib/pinnedflow/meson.build).
#
# Prints what it finds; exit 1 on any, 2 when it cannot read the build.
#
#   tools/check-layout.py [SOURCE_ROOT [BUILD_ROOT]]
#   tools/check-layout.py --objects FILE.o...   (rule 2 alone, over these
#       objects as one link target, each object its own node: the test in
#       tests/core/layout.py plants circles with it)
# SPDX-License-Identifier: LGPL-2.1-or-later
import glob
import json
import os
import re
import subprocess
import sys

CODE = ["lib", "gst-libs", "gst", "ext", "bridge"]
LAYERS = [".", "memory", "wire", "transport", "node", "cuda", "export"]
MAX_LINES = 900
FUNC_TYPES = {"T", "W", "i"}
NM = os.environ.get("NM", "nm")


def too_long(root):
    bad = []
    for top in CODE:
        for path in glob.glob(os.path.join(root, top, "**", "*.[ch]"),
                              recursive=True):
            with open(path, errors="replace") as f:
                n = sum(1 for _ in f)
            if n > MAX_LINES:
                bad.append("%s: %d lines (> %d)" %
                           (os.path.relpath(path, root), n, MAX_LINES))
    return bad


def read_symbols(objects):
    """{object: (defined function names, undefined names)} from nm."""
    out = {o: (set(), set()) for o in objects}
    objects = list(objects)
    for i in range(0, len(objects), 200):
        chunk = objects[i:i + 200]
        res = subprocess.run([NM, "-A", "-P"] + chunk, capture_output=True,
                             text=True)
        if res.returncode != 0:
            raise RuntimeError("%s failed: %s" % (NM, res.stderr.strip()))
        for line in res.stdout.splitlines():
            # "OBJECT: NAME TYPE [VALUE [SIZE]]"
            head, sep, rest = line.partition(": ")
            fields = rest.split()
            if not sep or len(fields) < 2 or head not in out:
                continue
            name, kind = fields[0], fields[1]
            if kind == "U":
                out[head][1].add(name)
            elif kind in FUNC_TYPES:
                out[head][0].add(name)
    return out


def is_library(target):
    # meson's private folder of a target: libfoo.so.1.2.p, libfoo.a.p
    return re.match(r"lib.*\.(so(\.[0-9]+)*|a)\.p$", target) is not None


def call_graph(units):
    """units: [(node, target, object)] -> {node: set(node)}"""
    syms = read_symbols(sorted({o for _, _, o in units}))
    in_target = {}   # (target, symbol) -> nodes
    in_libs = {}     # symbol -> nodes
    for node, target, obj in units:
        for name in syms[obj][0]:
            in_target.setdefault((target, name), set()).add(node)
            if is_library(target):
                in_libs.setdefault(name, set()).add(node)
    graph = {node: set() for node, _, _ in units}
    for node, target, obj in units:
        for name in syms[obj][1]:
            to = in_target.get((target, name)) or in_libs.get(name) or ()
            graph[node].update(t for t in to if t != node)
    return graph


def components(graph):
    """Tarjan's strongly connected components, iteratively."""
    index, low, on, stack, comps = {}, {}, set(), [], []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = len(index)
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                comps.append(sorted(comp))
    return comps


def one_cycle(graph, comp):
    """A cycle through comp's first node, staying inside comp (BFS)."""
    members = set(comp)
    start = comp[0]
    prev = {}
    queue = [start]
    while queue:
        v = queue.pop(0)
        for w in sorted(graph[v] & members):
            if w == start:
                path = [v]
                while path[-1] != start:
                    path.append(prev[path[-1]])
                return list(reversed(path)) + [start]
            if w not in prev:
                prev[w] = v
                queue.append(w)
    return comp + [start]


def circles(graph):
    bad = []
    for comp in components(graph):
        if len(comp) > 1:
            bad.append("call circle (%d files): %s" %
                       (len(comp), " -> ".join(one_cycle(graph, comp))))
    return bad


def tree_units(root, build):
    path = os.path.join(build, "compile_commands.json")
    with open(path) as f:
        commands = json.load(f)
    units = []
    for c in commands:
        src = os.path.realpath(os.path.join(c["directory"], c["file"]))
        obj = os.path.join(c["directory"], c["output"])
        rel = os.path.relpath(src, root)
        if rel.startswith("..") or src.startswith(os.path.realpath(build)):
            continue
        if not os.path.exists(obj):
            raise RuntimeError("%s is not built (run ninja -C %s)" %
                               (obj, build))
        units.append((rel, os.path.basename(os.path.dirname(obj)), obj))
    if not units:
        raise RuntimeError("%s names no object of the tree" % path)
    return units


def layers(root):
    bad = []
    lib = os.path.join(root, "lib", "pinnedflow")
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
                               (os.path.relpath(path, root), up, inc))
    return bad


def main(argv):
    if argv[:1] == ["--objects"]:
        if len(argv) < 2:
            print("usage: check-layout.py --objects FILE.o...",
                  file=sys.stderr)
            return 2
        try:
            graph = call_graph([(o, "objects", o) for o in argv[1:]])
        except (OSError, RuntimeError) as e:
            print("check-layout: %s" % e, file=sys.stderr)
            return 2
        bad = circles(graph)
        for line in bad:
            print(line)
        if not bad:
            print("layout: no call circle among %d objects" % len(graph))
        return 1 if bad else 0
    root = os.path.abspath(argv[0] if argv else
                           os.path.join(os.path.dirname(__file__), ".."))
    build = os.path.abspath(argv[1] if len(argv) > 1 else
                            os.path.join(root, "build"))
    try:
        graph = call_graph(tree_units(root, build))
    except (OSError, RuntimeError, ValueError) as e:
        print("check-layout: cannot read the build: %s" % e, file=sys.stderr)
        return 2
    bad = too_long(root) + circles(graph) + layers(root)
    for line in bad:
        print(line)
    if not bad:
        edges = sum(len(v) for v in graph.values())
        print("layout: no file over %d lines; no call circle among %d "
              "source files (%d file-to-file edges); no include up the "
              "layers" % (MAX_LINES, len(graph), edges))
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
