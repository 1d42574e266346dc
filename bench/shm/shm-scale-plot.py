#!/usr/bin/python3
"""docs/img/scale.png from runs of `shm-scale --csv-file FILE` (issue 35).

Three panels against the hops per second of each cell (P producers x C
consumers each x the rate), one line per C and per rate (one FILE per
run, each its own rate; solid, dashed, dotted, ... in the order given),
the points labelled by P:
  - CPU per hop (all the cell's processes) as a ratio to the 1x1 cell of
    the same run, with the issue's bound (1.5x) dashed;
  - p50 and p99 latency (publish -> consumer), and the share of late frames;
  - the CPU the cell's processes used and how busy the whole machine was
    (/proc/stat: the neighbours included), as a share of all CPUs.

  /usr/bin/python3 bench/shm/shm-scale-plot.py FILE... [--out docs/img/scale.png]
      [--note TEXT]

Needs Debian's python3-matplotlib. It draws what the bench printed and
judges nothing.
SPDX-License-Identifier: LGPL-2.1-or-later
"""
import argparse
import csv

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", nargs="+")
    ap.add_argument("--out", default="docs/img/scale.png")
    ap.add_argument("--note", default="")
    a = ap.parse_args()

    runs = []
    for path in a.csv:
        with open(path) as f:
            rows = [r for r in csv.DictReader(f) if r["ok"] == "1"]
        if not rows:
            raise SystemExit("shm-scale-plot: no cell in %s" % path)
        runs.append(rows)
    r0 = runs[0][0]
    fig, ax = plt.subplots(1, 3, figsize=(15, 5.2))
    styles = ["-", "--", ":", "-."]
    cs_all = sorted({int(r["consumers"]) for rows in runs for r in rows})
    for ri, rows in enumerate(runs):
        ls = styles[ri % len(styles)]
        rate = rows[0]["rate"]
        by_c = {}
        for r in rows:
            by_c.setdefault(int(r["consumers"]), []).append(r)
        for c, rs in sorted(by_c.items()):
            rs.sort(key=lambda r: int(r["producers"]))
            x = [int(r["producers"]) * c * int(r["rate"]) for r in rs]
            col = "C%d" % cs_all.index(c)
            lab = "%s/s, %d consumer%s per producer" % (
                rate, c, "" if c == 1 else "s")
            ax[0].plot(x, [float(r["ratio"]) for r in rs], "o" + ls,
                       color=col, label=lab)
            for xi, r in zip(x, rs):
                ax[0].annotate("%sP" % r["producers"],
                               (xi, float(r["ratio"])),
                               textcoords="offset points", xytext=(3, 4),
                               fontsize=6, color=col)
            ax[1].plot(x, [float(r["p50_us"]) for r in rs], "o" + ls,
                       color=col)
            ax[1].plot(x, [float(r["p99_us"]) for r in rs], "^" + ls,
                       color=col, alpha=0.4)
            ax[2].plot(x, [float(r["cpu_pct"]) for r in rs], "o" + ls,
                       color=col)
            ax[2].plot(x, [float(r["busy_pct"]) for r in rs], "x" + ls,
                       color=col, alpha=0.3)
    ax[0].axhline(1.5, color="red", ls="--", lw=1, label="bound: 1.5x")
    ax[0].axhline(1.0, color="grey", lw=0.8)
    ax[0].set_ylabel("CPU per hop / the 1x1 cell's of the same run")
    ax[0].set_title("CPU per hop (every process of the cell)")
    ax[1].set_yscale("log")
    ax[1].set_ylabel("latency, µs (publish → consumer)")
    ax[1].set_title("p50 and p99")
    ax[2].set_ylabel("% of all CPUs")
    ax[2].set_ylim(0, 105)
    ax[2].set_title("CPU used: the cell, and the machine")
    for x in ax:
        x.set_xscale("log")
        x.set_xlabel("hops/s (producers x consumers x frames/s)")
        x.grid(True, which="both", alpha=0.3)
    ax[0].legend(fontsize=6)
    ax[1].legend(handles=[
        plt.Line2D([], [], color="k", marker="o", label="p50"),
        plt.Line2D([], [], color="k", marker="^", alpha=0.4, label="p99")],
        fontsize=7, loc="upper right")
    ax[2].legend(handles=[
        plt.Line2D([], [], color="k", marker="o",
                   label="the cell's processes (colours, lines: as left)"),
        plt.Line2D([], [], color="k", marker="x", alpha=0.3,
                   label="whole machine, /proc/stat (neighbours included)")],
        fontsize=7, loc="upper left")
    fig.suptitle("shm-scale: node API hop, %sx%s RGBA, 1-%d producers x "
                 "1-%d consumers each, paced at %s frames/s per producer"
                 % (r0["width"], r0["height"],
                    max(int(r["producers"]) for rows in runs for r in rows),
                    max(cs_all), ", ".join(rows[0]["rate"] for rows in runs)))
    if a.note:
        fig.text(0.01, 0.01, a.note, fontsize=7)
    fig.tight_layout(rect=(0, 0.04 if a.note else 0, 1, 0.95))
    fig.savefig(a.out, dpi=110)
    print("wrote %s" % a.out)


if __name__ == "__main__":
    main()
