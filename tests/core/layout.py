#!/usr/bin/python3
# The layout check (tools/check-layout.py) can fail, and the tree passes it.
# Rule checked: a call circle of any length between source files is found
# from the objects' symbols, however its definitions are spelled. In a
# scratch folder this builds tiny objects and expects the checker to
#  - refuse a three-file circle a -> b -> c -> a (GNU layout), naming it;
#  - refuse a two-file circle whose definitions sit on one line,
#    `void b_fn(void) { ... }`;
#  - pass the same three files without the closing call (a chain), and
#    files that share a static function name or only data (no calls);
# then runs the checker over the whole tree (all three rules) and expects
# it to pass.
#
#   layout.py --cc "CC..." CHECK_LAYOUT SOURCE_ROOT BUILD_ROOT
# SPDX-License-Identifier: LGPL-2.1-or-later
import os
import shlex
import subprocess
import sys
import tempfile

THREE = {
    "a.c": "void b_fn (void);\n\nvoid\na_fn (void)\n{\n  b_fn ();\n}\n",
    "b.c": "void c_fn (void);\n\nvoid\nb_fn (void)\n{\n  c_fn ();\n}\n",
    "c.c": "void a_fn (void);\n\nvoid\nc_fn (void)\n{\n  a_fn ();\n}\n",
}
CHAIN = dict(THREE, **{"c.c": "void\nc_fn (void)\n{\n}\n"})
TWO = {
    "x.c": "void b_fn(void);\nvoid a_fn(void) { b_fn(); }\n",
    "y.c": "void a_fn(void);\nvoid b_fn(void) { a_fn(); }\n",
}
# no edge back: each defines its own static helper of one name; q reads
# p's data only (data makes no call edge), p calls q
NO_CALLS = {
    "p.c": "int p_data = 1;\nvoid q_fn (void);\n"
           "static void helper (void) { q_fn (); }\n"
           "void p_fn (void) { helper (); }\n",
    "q.c": "extern int p_data;\nint q_seen;\n"
           "static void helper (void) { q_seen = p_data; }\n"
           "void q_fn (void) { helper (); }\n",
}

failures = []


def build(cc, folder, sources):
    objects = []
    for name, text in sorted(sources.items()):
        src = os.path.join(folder, name)
        with open(src, "w") as f:
            f.write(text)
        obj = src[:-2] + ".o"
        subprocess.run(cc + ["-O2", "-c", src, "-o", obj], check=True)
        objects.append(obj)
    return objects


def check(checker, objects, want_rc, want_text, what):
    res = subprocess.run([sys.executable, checker, "--objects"] + objects,
                         capture_output=True, text=True)
    out = res.stdout + res.stderr
    print("%s: rc %d: %s" % (what, res.returncode, out.strip()))
    if res.returncode != want_rc:
        failures.append("%s: exit %d, want %d" % (what, res.returncode,
                                                  want_rc))
    for t in want_text:
        if t not in out:
            failures.append("%s: %r not in the output" % (what, t))


def main():
    args = sys.argv[1:]
    if len(args) != 5 or args[0] != "--cc":
        print("usage: layout.py --cc CC CHECK_LAYOUT SOURCE_ROOT BUILD_ROOT",
              file=sys.stderr)
        return 2
    cc = shlex.split(args[1])
    checker, source_root, build_root = args[2:]
    with tempfile.TemporaryDirectory(prefix="pf-layout-") as tmp:
        for name, sources in (("three", THREE), ("chain", CHAIN),
                              ("two", TWO), ("nocalls", NO_CALLS)):
            os.mkdir(os.path.join(tmp, name))
        three = build(cc, os.path.join(tmp, "three"), THREE)
        chain = build(cc, os.path.join(tmp, "chain"), CHAIN)
        two = build(cc, os.path.join(tmp, "two"), TWO)
        nocalls = build(cc, os.path.join(tmp, "nocalls"), NO_CALLS)
        a, b, c = three
        check(checker, three, 1,
              ["call circle (3 files): %s -> %s -> %s -> %s" % (a, b, c, a)],
              "three-file circle")
        check(checker, two, 1,
              ["call circle (2 files): %s -> %s -> %s" % (two[0], two[1],
                                                          two[0])],
              "two-file circle on one line")
        check(checker, chain, 0, ["no call circle among 3 objects"],
              "chain a -> b -> c")
        check(checker, nocalls, 0, ["no call circle among 2 objects"],
              "static names and data only")
    res = subprocess.run([sys.executable, checker, source_root, build_root],
                         capture_output=True, text=True)
    print("tree: rc %d: %s" % (res.returncode,
                               (res.stdout + res.stderr).strip()))
    if res.returncode != 0:
        failures.append("the tree fails the layout check")
    for f in failures:
        print("FAIL: " + f)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
