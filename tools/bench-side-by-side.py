#!/usr/bin/python3
# Prints the rows of two or more shm-bench tables side by side (issues 23,
# 35): per size, rate and transport, frames/s, p50 (the median round) with
# the rounds' p50 min-max, p99 and CPU per frame of each run; then the
# 1080p CPU and wake-up table.
# Usage: bench-side-by-side.py LABEL=FILE LABEL=FILE...
# A transport one run lacks (unixfd on GStreamer 1.22, iceoryx where it is
# not installed) shows "-".
import re
import sys

# size transport frames/s p50 p50-min-max p99 p50/shm p50/flr p50/cpy
#   cpu-p cpu-c wake-p wake-c
ROW = re.compile(r"^(\d+x\d+)\s+(.+?)\s{2,}(\S+)\s+([\d.]+)\s+"
                 r"([\d.]+-[\d.]+)\s+([\d.]+)(?:\s+[\d.]+){3}\s+([\d.]+)"
                 r"\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)")
# transport p50 prod cons total cpu/shm cpu/flr wake-p wake-c csw
CPU = re.compile(r"^(.+?)\s{2,}([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                 r"\s+[\d.]+\s+[\d.]+\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)$")
RATE = re.compile(r"^Paced at (\d+)/s")


def parse(path):
    rows, cpu, section, rate = {}, {}, "size", "100"
    for line in open(path):
        line = line.rstrip("\n")
        m = re.match(r"^cross-process .* at (\d+)/s", line)
        if m:
            rate = m.group(1)
        m = RATE.match(line)
        if m:
            rate = m.group(1)
        if line.startswith("CPU and wake-ups"):
            section = "cpu"
        elif line.startswith("Thread by thread") or \
                line.startswith("Delivery"):
            section = "other"
        elif section == "size":
            m = ROW.match(line)
            if m:
                total = float(m.group(7)) + float(m.group(8))
                rows[(m.group(1), rate, m.group(2))] = (
                    m.group(3), m.group(4), m.group(5), m.group(6),
                    "%.1f" % total, "%s/%s" % (m.group(9), m.group(10)))
        elif section == "cpu":
            m = CPU.match(line)
            if m:
                cpu[m.group(1)] = (m.group(2), m.group(5),
                                   "%s/%s" % (m.group(6), m.group(7)))
    return rows, cpu


def main():
    runs = []
    for arg in sys.argv[1:]:
        label, path = arg.split("=", 1)
        runs.append((label,) + parse(path))
    keys = []
    for _, rows, _ in runs:
        for k in rows:
            if k not in keys:
                keys.append(k)
    print("shm-bench side by side: frames/s (unpaced), p50 (median round) "
          "and the rounds' p50 min-max, p99 (all rounds), cpu us/frame and "
          "wake-ups per frame (producer/consumer), paced")
    head = "%-10s %4s %-22s" % ("size", "rate", "transport")
    for label, _, _ in runs:
        head += " | %-56s" % label
    print(head)
    print("%-38s" % "" + (" | %8s %7s %15s %7s %7s %11s" % (
        "frames/s", "p50", "p50 min-max", "p99", "cpu", "wake p/c")) *
        len(runs))
    for k in keys:
        line = "%-10s %4s %-22s" % k
        for _, rows, _ in runs:
            v = rows.get(k)
            line += " | %8s %7s %15s %7s %7s %11s" % (v if v else ("-",) * 6)
        print(line)
    names = []
    for _, _, cpu in runs:
        names += [n for n in cpu if n not in names]
    print("\nCPU and wake-ups per frame at 1080p (p50 us, total cpu "
          "us/frame, wake-ups producer/consumer)")
    for n in names:
        line = "%-33s" % n
        for _, _, cpu in runs:
            v = cpu.get(n)
            line += " | %8s %8s %11s" % (v if v else ("-", "-", "-"))
        print(line)
    if not keys:
        sys.exit("no bench rows parsed")


main()
