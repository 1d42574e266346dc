# The one-copy-per-domain examples of docs/bridge.md run (issue 32).
# Copyright (C) 2026 gst-pinnedflow developers
# SPDX-License-Identifier: LGPL-2.1-or-later
"""Usage: test_domain_examples.py c|python

bridge/examples/domains-node.c (pf-domains-node) or domains_node.py, as the
docs run them, on the driver emulator's virtual memory (PFEMU_VMM=1, the
environment of meson's emu_vmm_env), every process its own:
  - a host producer with domains enabled, two consumers that name device 0,
    one CPU consumer: every consumer reads its 12 frames byte-exact (the
    example compares each frame with the pattern; device frames read back
    with cuMemcpyDtoH) in its domain; the producer's stats say 12 uploads,
    and the emulator's own counters (PFEMU_STATS, one file per process)
    count 12 host-to-device copies in the producer and none in the
    consumers, whose only copies are their 12 read-backs each;
  - a device producer on device 0 with domains enabled, one consumer of
    device 0, two CPU consumers: 12 downloads in the producer's stats and
    12 device-to-host copies counted in its process (its 12 host-to-device
    ones are its own writes of the frames), the device consumer's only
    copies its read-backs, the CPU consumers without CUDA at all.
PFEMU_LEAK_ABORT=1 in each process: a device allocation, mapping or VMM
handle left at exit aborts it, and the test fails on its exit status.
"""
import os
import sys

import bridgetest as bt

N, W, H = 12, 64, 48


def argv(kind, *args):
    if kind == "c":
        return [bt.tool("pf-domains-node")] + [str(a) for a in args]
    return [sys.executable, os.path.join(bt.SOURCE, "bridge", "examples",
                                         "domains_node.py")] + \
        [str(a) for a in args]


def emu_stats(path):
    """The PFEMU_STATS line of a process as a dict, {} if it used no CUDA."""
    if not os.path.exists(path):
        return {}
    lines = open(path).read().split("\n")
    bt.check(len([x for x in lines if x]) == 1, "one process: %r" % lines)
    return dict(kv.split("=", 1) for kv in lines[0].split()[1:])


def run(kind, env_, device_stream):
    """Producer and three consumers; their outputs and emulator stats."""
    sock = env_.path("domains.sock")
    gpu = 1 if device_stream else 2
    cpu = 3 - gpu
    procs = []

    def spawn(name, args):
        e = dict(os.environ, PFEMU_STATS=env_.path(name + ".stats"),
                 PFEMU_LEAK_ABORT="1", PYTHONPATH=os.pathsep.join(
                     [os.path.join(bt.SOURCE, "bridge", "python"),
                      os.environ.get("PYTHONPATH", "")]))
        procs.append((name, env_.spawn(argv(kind, *args), env=e)))

    spawn("producer", ["produce", sock, N, W, H, cpu, gpu] +
          ([0] if device_stream else []))
    for i in range(gpu):
        spawn("gpu%d" % i, ["consume", sock, N, 0])
    for i in range(cpu):
        spawn("cpu%d" % i, ["consume", sock, N])
    out = {}
    for name, p in procs:
        o, _ = env_.finish(p, 90, name)
        out[name] = (o.strip(), emu_stats(env_.path(name + ".stats")))
    return out, gpu, cpu


def check_run(kind, device_stream):
    with bt.Env() as env_:
        out, gpu, cpu = run(kind, env_, device_stream)
        print(out)
        if device_stream:
            bt.check(out["producer"][0] ==
                     "frames %d uploads 0 downloads %d" % (N, N), out)
        else:
            bt.check(out["producer"][0] ==
                     "frames %d uploads %d downloads 0" % (N, N), out)
        st = out["producer"][1]
        # host stream: the uploads; device stream: its own writes
        bt.check(int(st["copies.htod"]) == N, st)
        bt.check(int(st["copies.dtoh"]) == (N if device_stream else 0), st)
        bt.check(int(st["copies.dtod"]) == 0, st)
        for i in range(gpu):
            o, s = out["gpu%d" % i]
            bt.check(o == "frames %d bad 0 domain device" % N, o)
            # no upload nor copy of its own: only the test's read-backs
            bt.check(int(s["copies.htod"]) == 0 and
                     int(s["copies.dtoh"]) == N and
                     int(s["copies.dtod"]) == 0, s)
        for i in range(cpu):
            o, s = out["cpu%d" % i]
            bt.check(o == "frames %d bad 0 domain host" % N, o)
            bt.check(s == {} or (int(s["copies.htod"]) == 0 and
                                 int(s["copies.dtoh"]) == 0), s)


def case(kind):
    def run_both():
        check_run(kind, False)
        check_run(kind, True)
    return run_both


if __name__ == "__main__":
    sys.exit(bt.run_cases({"c": case("c"), "python": case("python")}))
