#!/usr/bin/python3
"""Figures for docs/results.md from the benchmarks' own output.

Runs, from a build directory:
  - bench/shm/shm-bench --csv    (once: its 5 rounds are interleaved):
    hop latency p50/p99 against frame size for pinnedshmsink ->
    pinnedshmsrc (zero copy and copy path), shmsink -> shmsrc, and one
    in-process memcpy of the frame; hop-rounds.png from the same rows;
  - bench/pool/pool-bench --csv  at 640x480, 1920x1080, 3840x2160: the cost
    of acquire + write + release and of activation, pinned vs default pool;
  - bench/bridge/bench-bridge    (RUNS times; its Markdown table is parsed):
    p50/p99 and frames/s of the library and element paths.
The raw rows go to OUT/*.csv next to the PNGs, so that a figure can be
redrawn from them (--from-csv) without measuring again.

--rounds-csv FILE draws OUT/hop-rounds.png alone from one run of
`shm-bench --csv-file FILE` (issue 35): p50 and p99 of every transport at
every size, paced at 100/s and at 30/s, each bar the median of the run's
interleaved rounds, its whisker the rounds' p50 min-max; --note says
when and where it ran (the footnote).

  /usr/bin/python3 bench/plot.py --build build [--runs 3] [--out docs/img]
  /usr/bin/python3 bench/plot.py --from-csv docs/img       (redraw only)
  /usr/bin/python3 bench/plot.py --rounds-csv FILE --note TEXT [--out DIR]
  ninja -C build bench-plot                                (the run target)

Needs Debian's python3-matplotlib. Timings are never asserted: this
script only draws what the benchmarks printed.
SPDX-License-Identifier: LGPL-2.1-or-later
"""
import argparse
import csv
import datetime
import io
import os
import platform
import statistics
import subprocess
import sys
import tempfile

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

SHM_LABELS = {
    "pinned": "pinnedshmsink → pinnedshmsrc (zero copy)",
    "pinned-copy": "pinnedshmsink → pinnedshmsrc (copy path)",
    "shm": "shmsink → shmsrc",
    "memcpy": "one memcpy of the frame (in process)",
}
SHM_STYLE = {"pinned": ("C0", "o"), "pinned-copy": ("C1", "s"),
             "shm": ("C2", "^"), "memcpy": ("C7", "D")}
POOL_SIZES = [(640, 480), (1920, 1080), (3840, 2160)]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "?"


def run(cmd, env):
    print("+", " ".join(cmd), file=sys.stderr, flush=True)
    res = subprocess.run(cmd, env=env, stdout=subprocess.PIPE, text=True)
    if res.returncode != 0:
        # bench-bridge exits 1 when a run lost frames; its table still
        # holds what was measured, and the caller keeps the frame counts
        print(f"  exit status {res.returncode}", file=sys.stderr)
    return res.stdout


def bench_env(build, tmp):
    env = dict(os.environ)
    dirs = [os.path.join(build, "gst", "shm"), os.path.join(build, "ext",
                                                             "cuda")]
    env["GST_PLUGIN_PATH_1_0"] = ":".join(d for d in dirs if os.path.isdir(d))
    env["GST_REGISTRY_1_0"] = os.path.join(tmp, "registry.bin")
    return env


def parse_csv(text):
    return list(csv.DictReader(io.StringIO(text)))


def parse_bridge(text, run_no):
    """The Markdown table of bench-bridge: | mode | path | frames | fps |
    MB/s | p50 us | p99 us | mean us |"""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) != 8 or cells[0] in ("mode", "") or \
                cells[0].startswith("-"):
            continue
        rows.append({"run": str(run_no), "mode": cells[0], "path": cells[1],
                     "frames": cells[2], "fps": cells[3], "mb_s": cells[4],
                     "p50_us": cells[5], "p99_us": cells[6],
                     "mean_us": cells[7]})
    return rows


def write_csv(path, rows):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
        w.writeheader()
        w.writerows(rows)


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def measure(args):
    build = os.path.abspath(args.build)
    meta = {"date": datetime.datetime.now(datetime.timezone.utc)
            .strftime("%Y-%m-%d %H:%M UTC"),
            "machine": f"{os.cpu_count()} cores, {cpu_model()}, "
                       f"kernel {platform.release()}",
            "load_before": loadavg()}
    with tempfile.TemporaryDirectory(prefix="pf-plot-") as tmp:
        env = bench_env(build, tmp)
        shm, pool, bridge = [], [], []
        # one run: its 5 interleaved rounds give the median and the spread
        # (issue 35; before, three runs of one round each)
        for row in parse_csv(run([os.path.join(build, "bench", "shm",
                                               "shm-bench"), "--csv"], env)):
            row["run"] = "0"
            shm.append(row)
        for w, h in POOL_SIZES:
            pool += parse_csv(run([os.path.join(build, "bench", "pool",
                                                "pool-bench"), "--csv",
                                   "--width", str(w), "--height", str(h),
                                   "--iterations", str(args.pool_iterations),
                                   "--rounds", "4"], env))
        for r in range(args.runs):
            bridge += parse_bridge(run([os.path.join(build, "bench", "bridge",
                                                     "bench-bridge")], env), r)
    meta["load_after"] = loadavg()
    if not shm or not pool or not bridge:
        sys.exit("a benchmark printed no rows (see above)")
    write_csv(os.path.join(args.out, "shm-bench.csv"), shm)
    write_csv(os.path.join(args.out, "pool-bench.csv"), pool)
    write_csv(os.path.join(args.out, "bench-bridge.csv"), bridge)
    write_csv(os.path.join(args.out, "bench-meta.csv"), [meta])
    return shm, pool, bridge, meta


def footnote(fig, meta):
    fig.text(0.01, 0.005, f"{meta['date']}; {meta['machine']}; load average "
             f"{meta['load_before']} before, {meta['load_after']} after",
             fontsize=7, color="0.35", ha="left", va="bottom")


ROUNDS_LABELS = [
    ("floor", "floor (SEQPACKET)"), ("pinned", "pinnedshm (zero copy)"),
    ("node", "node API (pf_node)"), ("iox", "iceoryx (C binding)"),
    ("pinned-socket", "pinnedshm (socket)"),
    ("pinned-busy", "pinnedshm (busy-poll)"), ("shm", "shmsink/shmsrc"),
    ("unixfd", "unixfdsink/unixfdsrc"),
    ("pinned-copy", "pinnedshm (copy path)"),
]


def plot_rounds(rows, note, out):
    """p50/p99 per transport and size from one shm-bench --csv-file run."""
    rates = sorted({int(r["rate"]) for r in rows if r.get("rate") and
                    int(r["rate"]) > 0}, reverse=True)
    sizes = sorted({(int(r["bytes"]), r["size"]) for r in rows})
    fig, axes = plt.subplots(len(rates), 2, figsize=(13, 4.4 * len(rates)),
                             squeeze=False)
    for i, rate in enumerate(rates):
        mine = [r for r in rows if r.get("rate") == str(rate)]
        present = [(t, n) for t, n in ROUNDS_LABELS
                   if any(r["transport"] == t for r in mine)]
        width = 0.8 / max(len(present), 1)
        for j, (key, title) in enumerate((("p50_us", "p50"),
                                          ("p99_us", "p99"))):
            ax = axes[i][j]
            for k, (t, name) in enumerate(present):
                xs, ys, lo, hi = [], [], [], []
                for s_i, (_, size) in enumerate(sizes):
                    row = next((r for r in mine if r["transport"] == t and
                                r["size"] == size), None)
                    if row is None or float(row[key]) <= 0:
                        continue
                    xs.append(s_i + (k - (len(present) - 1) / 2) * width)
                    ys.append(float(row[key]))
                    if key == "p50_us" and row.get("p50_min_us"):
                        lo.append(ys[-1] - float(row["p50_min_us"]))
                        hi.append(float(row["p50_max_us"]) - ys[-1])
                color = "C%d" % [t_ for t_, _ in ROUNDS_LABELS].index(t)
                bars = ax.bar(xs, ys, width, label=name, color=color,
                              alpha=0.85)
                if lo:
                    ax.errorbar(xs, ys, yerr=[lo, hi], fmt="none",
                                ecolor="0.2", capsize=2, lw=0.8)
                del bars
            ax.set_yscale("log")
            ax.set_xticks(range(len(sizes)))
            ax.set_xticklabels([f"{s}\n{b / 1e6:.1f} MB" for b, s in sizes])
            ax.set_ylabel("µs, producer push → consumer push (log)")
            ax.set_title(f"{title} at {rate} frames/s" +
                         (" (whisker: rounds' p50 min–max)"
                          if key == "p50_us" else " (all rounds' frames)"),
                         fontsize=10)
            ax.grid(True, axis="y", which="major", alpha=0.3)
    # one legend for all panels, the transports of the first rate
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, fontsize=8, loc="upper center", ncol=5,
               bbox_to_anchor=(0.5, 0.965))
    rounds = max(int(r["rounds"]) for r in rows if r.get("rounds"))
    fig.suptitle(f"Cross-process hop per transport and size (bench/shm, one "
                 f"run, {rounds} interleaved rounds; bar = the median "
                 f"round)", fontsize=11)
    fig.text(0.01, 0.005, note, fontsize=7, color="0.35", ha="left",
             va="bottom")
    fig.tight_layout(rect=(0, 0.025, 1, 0.91))
    path = os.path.join(out, "hop-rounds.png")
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def plot_hop(shm, meta, out):
    # the 100 frames/s table (shm-bench's rows at --cpu-rate are left out)
    shm = [r for r in shm if r.get("rate") in (None, "", "0", "100")]
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.6), sharey=True)
    for ax, key, title in ((axes[0], "p50_us", "median (p50)"),
                           (axes[1], "p99_us", "99th percentile (p99)")):
        for t in ("pinned", "pinned-copy", "shm", "memcpy"):
            by_size = {}
            for row in shm:
                if row["transport"] == t and float(row[key]) > 0:
                    by_size.setdefault(int(row["bytes"]), []).append(
                        float(row[key]))
            if not by_size:
                continue
            xs = sorted(by_size)
            mid = [statistics.median(by_size[x]) for x in xs]
            lo = [m - min(by_size[x]) for m, x in zip(mid, xs)]
            hi = [max(by_size[x]) - m for m, x in zip(mid, xs)]
            if key == "p50_us":
                # one run of interleaved rounds: the bars are its rounds'
                # p50 min-max
                for n, x in enumerate(xs):
                    row = next((r for r in shm if r["transport"] == t and
                                int(r["bytes"]) == x and
                                r.get("p50_min_us")), None)
                    if row is not None and len(by_size[x]) == 1:
                        lo[n] = mid[n] - float(row["p50_min_us"])
                        hi[n] = float(row["p50_max_us"]) - mid[n]
            color, marker = SHM_STYLE[t]
            ax.errorbar([x / 1e6 for x in xs], mid, yerr=[lo, hi],
                        color=color, marker=marker, capsize=3,
                        linestyle="--" if t == "memcpy" else "-",
                        label=SHM_LABELS[t])
        ax.set_xscale("log")
        ax.set_yscale("log")
        sizes = sorted({(int(r["bytes"]), r["size"]) for r in shm})
        ax.set_xticks([b / 1e6 for b, _ in sizes])
        ax.set_xticklabels([f"{s}\n{b / 1e6:.1f} MB" for b, s in sizes])
        ax.minorticks_off()
        ax.set_xlabel("frame size (RGBA)")
        ax.set_title(f"hop latency, {title}")
        ax.grid(True, which="major", alpha=0.3)
    axes[0].set_ylabel("µs, producer push → consumer push (log)")
    runs = len({r["run"] for r in shm})
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle(f"Cross-process hop against frame size (bench/shm, 100 "
                 f"frames/s; marker = median of {runs} run(s) (one run: its "
                 f"median round), bars = min–max)", fontsize=10)
    footnote(fig, meta)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(os.path.join(out, "hop-latency.png"), dpi=110)
    plt.close(fig)


def plot_pool(pool, meta, out):
    sizes = sorted({(int(r["bytes"]), f"{r['width']}x{r['height']}")
                    for r in pool})
    fig, axes = plt.subplots(1, 3, figsize=(12, 4.2))
    width = 0.38
    for ax, key, scale, title, ylabel in (
            (axes[0], "write_ns_median", 1e3,
             "acquire + write frame + release", "µs per frame"),
            (axes[1], "bare_ns", 1, "acquire + release only", "ns"),
            (axes[2], "activation_ms", 1, "activation (once)", "ms")):
        for k, (name, color) in enumerate((("pinned", "C0"),
                                           ("default", "C7"))):
            vals = []
            for b, _ in sizes:
                v = [float(r[key]) for r in pool
                     if r["pool"] == name and int(r["bytes"]) == b]
                vals.append(v[0] / scale if v else 0)
            xs = [i + (k - 0.5) * width for i in range(len(sizes))]
            bars = ax.bar(xs, vals, width, color=color,
                          label="GstPinnedBufferPool" if name == "pinned"
                          else "default GstVideoBufferPool")
            ax.bar_label(bars, fmt="%.3g", fontsize=7)
        ax.set_xticks(range(len(sizes)))
        ax.set_xticklabels([s for _, s in sizes])
        ax.set_title(title, fontsize=10)
        ax.set_ylabel(ylabel)
        if key == "write_ns_median":
            ax.set_yscale("log")
            ax.set_ylabel(ylabel + " (log)")
        ax.grid(True, axis="y", alpha=0.3)
    axes[0].legend(fontsize=8, loc="upper left")
    fig.suptitle("Pool cost, pinned vs default, RGBA (bench/pool: median "
                 "of 4 rounds)", fontsize=10)
    footnote(fig, meta)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(os.path.join(out, "pool-cost.png"), dpi=110)
    plt.close(fig)


def plot_bridge(bridge, meta, out):
    keys = []
    for r in bridge:
        if (r["mode"], r["path"]) not in keys:
            keys.append((r["mode"], r["path"]))

    def med(mode, path, field):
        v = [float(r[field]) for r in bridge
             if r["mode"] == mode and r["path"] == path]
        return statistics.median(v), min(v), max(v)

    fig, axes = plt.subplots(1, 2, figsize=(12, 4.4),
                             gridspec_kw={"width_ratios": [3, 2]})
    labels = [f"{m}: {p}" for m, p in keys]
    ys = list(range(len(keys)))[::-1]
    h = 0.38
    for k, (field, color, name) in enumerate((("p50_us", "C0", "p50"),
                                              ("p99_us", "C3", "p99"))):
        mids, errs_lo, errs_hi = [], [], []
        for m, p in keys:
            mid, lo, hi = med(m, p, field)
            mids.append(mid)
            errs_lo.append(mid - lo)
            errs_hi.append(hi - mid)
        axes[0].barh([y + (0.5 - k) * h for y in ys], mids, h,
                     xerr=[errs_lo, errs_hi], color=color, label=name,
                     capsize=2)
    axes[0].set_yticks(ys)
    axes[0].set_yticklabels(labels, fontsize=8)
    axes[0].set_xscale("log")
    axes[0].set_xlabel("µs, producer → consumer (log)")
    axes[0].set_title("latency", fontsize=10)
    axes[0].legend(fontsize=8)
    axes[0].grid(True, axis="x", alpha=0.3)
    flat = [(m, p) for m, p in keys if m != "30 Hz"]
    fps = [med(m, p, "fps") for m, p in flat]
    fy = list(range(len(flat)))[::-1]
    axes[1].barh(fy, [f[0] for f in fps], 0.6, color="C2",
                 xerr=[[f[0] - f[1] for f in fps], [f[2] - f[0] for f in fps]],
                 capsize=2)
    axes[1].set_yticks(fy)
    axes[1].set_yticklabels([p for _, p in flat], fontsize=8)
    axes[1].set_xlabel("frames/s")
    axes[1].set_title("flat-out throughput", fontsize=10)
    axes[1].grid(True, axis="x", alpha=0.3)
    runs = len({r["run"] for r in bridge})
    fig.suptitle(f"Dataflow bridge, library vs elements, 1080p RGBA, 4 slots "
                 f"(bench/bridge; median of {runs} runs, bars = min–max)",
                 fontsize=10)
    footnote(fig, meta)
    fig.tight_layout(rect=(0, 0.03, 1, 1))
    fig.savefig(os.path.join(out, "bridge.png"), dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", default="build",
                    help="meson build directory with the benchmarks")
    ap.add_argument("--out", default=os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "docs", "img"),
        help="where the PNGs and CSVs go (docs/img)")
    ap.add_argument("--runs", type=int, default=3,
                    help="bench-bridge runs (default 3); shm-bench runs "
                    "once, its rounds interleaved")
    ap.add_argument("--pool-iterations", type=int, default=1000)
    ap.add_argument("--from-csv", metavar="DIR",
                    help="redraw from DIR/*.csv written by an earlier run")
    ap.add_argument("--rounds-csv", metavar="FILE",
                    help="only hop-rounds.png, from shm-bench --csv-file FILE")
    ap.add_argument("--note", default="",
                    help="with --rounds-csv: the footnote (when, where)")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    if args.rounds_csv:
        print(plot_rounds(read_csv(args.rounds_csv), args.note, args.out))
        return
    if args.from_csv:
        d = args.from_csv
        shm = read_csv(os.path.join(d, "shm-bench.csv"))
        pool = read_csv(os.path.join(d, "pool-bench.csv"))
        bridge = read_csv(os.path.join(d, "bench-bridge.csv"))
        meta = read_csv(os.path.join(d, "bench-meta.csv"))[0]
    else:
        shm, pool, bridge, meta = measure(args)
    plot_hop(shm, meta, args.out)
    if any(r.get("rounds") for r in shm):
        plot_rounds(shm, f"{meta['date']}; {meta['machine']}; load average "
                    f"{meta['load_before']} before, {meta['load_after']} "
                    f"after", args.out)
    plot_pool(pool, meta, args.out)
    plot_bridge(bridge, meta, args.out)
    print(f"{meta['date']}, {meta['machine']}, load average "
          f"{meta['load_before']} before, {meta['load_after']} after")
    for name in ("hop-latency.png", "pool-cost.png", "bridge.png"):
        print(os.path.join(args.out, name))


if __name__ == "__main__":
    main()
