#!/usr/bin/python3
# Prints the rows of two or more shm-bench tables side by side (issue 23):
# per size and transport, frames/s, p50, p99 and CPU per frame of each run.
# Usage: bench-side-by-side.py LABEL=FILE LABEL=FILE...
# A transport one run lacks (unixfd on GStreamer 1.22) shows "-".
import re
import sys

ROW = re.compile(r"^(\d+x\d+)\s+(.+?)\s{2,}([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                 r"(?:\s+[\d.]+){4}\s+([\d.]+)")
CPU = re.compile(r"^(.+?)\s{2,}([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)"
                 r"\s+[\d.]+\s+[\d.]+$")


def parse(path):
    rows, cpu, section = {}, {}, "size"
    for line in open(path):
        line = line.rstrip("\n")
        if line.startswith("CPU per frame"):
            section = "cpu"
        elif line.startswith("Delivery"):
            section = "delivery"
        elif section == "size":
            m = ROW.match(line)
            if m:
                rows[(m.group(1), m.group(2))] = (m.group(3), m.group(4),
                                                  m.group(5), m.group(6))
        elif section == "cpu":
            m = CPU.match(line)
            if m:
                cpu[m.group(1)] = (m.group(2), m.group(5))
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
    print("shm-bench side by side: frames/s (unpaced), p50/p99 us (paced), "
          "cpu us/frame (paced, both processes)")
    head = "%-10s %-22s" % ("size", "transport")
    for label, _, _ in runs:
        head += " | %-33s" % label
    print(head)
    print("%-33s" % "" + " | %8s %7s %7s %8s" % ("frames/s", "p50", "p99",
                                                  "cpu") * len(runs))
    for k in keys:
        line = "%-10s %-22s" % k
        for _, rows, _ in runs:
            v = rows.get(k)
            line += " | %8s %7s %7s %8s" % (v if v else ("-",) * 4)
        print(line)
    names = []
    for _, _, cpu in runs:
        names += [n for n in cpu if n not in names]
    print("\nCPU per frame at 1080p30 (p50 us, total us/frame)")
    for n in names:
        line = "%-33s" % n
        for _, _, cpu in runs:
            v = cpu.get(n)
            line += " | %8s %8s" % (v if v else ("-", "-"))
        print(line)
    if not keys:
        sys.exit("no bench rows parsed")


main()
