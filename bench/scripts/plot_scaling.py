#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tables, fits and the figure of docs/scaling.md from the JSON lines of bench/scaling.

    scaling --json --transport threads --ranks 64,128,256,512,1024 > threads.jsonl
    scaling --json --transport mpi --ranks 8,16,32,64 > mpi.jsonl
    plot_scaling.py threads.jsonl mpi.jsonl --out docs/scaling_figures

Prints Markdown: the measured table per transport, and for the empty-epoch times the least-
squares fits t = a + b*log2(P) , t = a + b*P and t = a + b*P^2 with their residuals, so the two models can be
compared on the same points. Writes scaling.png (time per empty epoch and memory per rank
against P) unless --no-plot. Exit status 2 when matplotlib is missing and a plot was asked for.
"""
import argparse
import math
import os
import sys
from collections import defaultdict

import benchjson  # bench/scripts/benchjson.py: the shared JSON-lines loader
import benchplot  # bench/scripts/benchplot.py: what the plot scripts draw alike


def load(paths):
    return [r for r in benchjson.load(paths, "scaling") if r.get("system") == "am"]


def index(rows):
    d = {}
    for r in rows:
        d[(r["transport"], r["ranks"], r["op"], r["metric"])] = r
    return d


def lstsq(xs, ys):
    """Least squares y = a + b x; returns a, b, residuals, R^2."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    a = my - b * mx
    res = [y - (a + b * x) for x, y in zip(xs, ys)]
    ss_tot = sum((y - my) ** 2 for y in ys)
    r2 = 1 - sum(e * e for e in res) / ss_tot if ss_tot else 1.0
    return a, b, res, r2


def fmt(v):
    if v is None:
        return "–"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    if abs(v) >= 10:
        return f"{v:.1f}"
    return f"{v:.2f}"


# The columns of the two tables of a transport, "op metric: label" each.
EPOCH_COLUMNS = [
    "epoch_general latency_us: empty epoch, general (µs)",
    "epoch_depth0 latency_us: empty epoch, depth 0 (µs)",
    "am_barrier latency_us: ctx.barrier (µs)",
    "epoch_general core_us_per_rank: general × cores/P (µs)",
    "epoch_depth0 core_us_per_rank: depth 0 × cores/P (µs)",
    "epoch_general rounds: rounds, general",
    "epoch_depth0 rounds: rounds, depth 0",
    "epoch_general msgs_per_rank: AMs / rank / epoch",
    "epoch_general bytes_per_rank: AM bytes / rank / epoch",
]
ALLTOALL_COLUMNS = [
    "alltoall latency_us: direct: epoch (µs)",
    "alltoall batches_per_rank: direct: batches / rank",
    "alltoall bytes_per_rank: direct: bytes / rank",
    "memory coalesce_kib: direct: buffers (KiB / rank)",
    "memory rss_alltoall_kib: direct: RSS growth (KiB / rank)",
    "memory_routed buffers: routed: buffers",
    "alltoall_routed latency_us: routed: epoch (µs)",
    "alltoall_routed msgs_per_rank: routed: messages / rank",
    "alltoall_routed batches_per_rank: routed: batches / rank",
    "alltoall_routed bytes_per_rank: routed: bytes / rank",
    "memory_routed coalesce_kib: routed: buffers (KiB / rank)",
    "memory_routed rss_alltoall_kib: routed: RSS growth (KiB / rank)",
    "memory typed_kib: typed bookkeeping (KiB / rank)",
    "memory rss_setup_kib: RSS at set-up (KiB / rank)",
    "memory hwm_kib: VmHWM (KiB / rank)",
]


def row_table(d, tp, ranks, specs, title):
    cols = [tuple(op_metric.split()) + (label,)
            for op_metric, _, label in (c.partition(": ") for c in specs)]
    if not any((tp, p, op, metric) in d for p in ranks for op, metric, _ in cols):
        return
    print(f"\n#### {tp}: {title}\n")
    print("| P | " + " | ".join(c[2] for c in cols) + " |")
    print("|---" * (len(cols) + 1) + "|")
    for p in ranks:
        vals = []
        for op, metric, _ in cols:
            r = d.get((tp, p, op, metric))
            vals.append(fmt(r["median"]) if r else "–")
        print(f"| {p} | " + " | ".join(vals) + " |")


def table(d, tp, ranks):
    row_table(d, tp, ranks, EPOCH_COLUMNS, "empty epochs")
    row_table(d, tp, ranks, ALLTOALL_COLUMNS,
              "all-to-all epoch (one 16-byte record per pair) and memory per rank")
    buf = [d.get((tp, p, "memory", "coalesce_kib")) for p in ranks]
    if not any(buf):
        return
    print("\nBuffer B of the direct layer (default, capped by max_medium()): " +
          ", ".join(f"P = {p}: {r['bytes']} bytes" for p, r in zip(ranks, buf) if r) + ".")


def fits(d, tp, ranks):
    out = {}
    if not any((tp, p, "epoch_general", "latency_us") in d for p in ranks):
        return out
    print(f"\n#### {tp}: fits of the empty-epoch time (µs)\n")
    print("| op | model | a | b | R² | residuals at P = " + ", ".join(map(str, ranks)) + " |")
    print("|---|---|---|---|---|---|")
    for op in ("epoch_general", "epoch_depth0", "am_barrier"):
        pts = [(p, d[(tp, p, op, "latency_us")]["median"]) for p in ranks
               if (tp, p, op, "latency_us") in d]
        if len(pts) < 3:
            continue
        ps, ts = [p for p, _ in pts], [t for _, t in pts]
        for name, xs in (("a + b·log2 P", [math.log2(p) for p in ps]), ("a + b·P", ps),
                         ("a + b·P²", [p * p for p in ps])):
            a, b, res, r2 = lstsq(xs, ts)
            out[(op, name)] = (a, b)
            print(f"| {op} | {name} | {fmt(a)} | {b:.4g} | {r2:.3f} | "
                  + ", ".join(f"{e:+.3g}" for e in res) + " |")
        # The exponent k of t ~ P^k between the smallest and the largest P.
        k = math.log(ts[-1] / ts[0]) / math.log(ps[-1] / ps[0])
        print(f"| {op} | slope of log t vs log P | | {k:.2f} | | |")
    return out


COLORS = {"threads": "tab:blue", "mpi": "tab:red", "shm": "tab:green"}


def plot_epochs(ax, d, transports, fitted):
    """Time per empty epoch against P, with the log2 P fit of the general epoch."""
    marks = {"epoch_general": ("o", "-"), "epoch_depth0": ("s", "--")}
    for tp, ranks in transports.items():
        c = COLORS.get(tp, "tab:gray")
        for op, (m, ls) in marks.items():
            rs = [d[(tp, p, op, "latency_us")] for p in ranks if (tp, p, op, "latency_us") in d]
            if not rs:
                continue
            x = [r["ranks"] for r in rs]
            benchplot.errorbar(ax, x, rs, marker=m, ls=ls, color=c, label=f"{tp}: {op}")
            fit = fitted.get(tp, {}).get((op, "a + b·log2 P"))
            if fit and op == "epoch_general":
                a, b = fit
                xs = [x[0] * 2 ** (i / 8) for i in range(int(8 * math.log2(x[-1] / x[0])) + 1)]
                xs = [v for v in xs if a + b * math.log2(v) > 0]  # a log axis
                ax.plot(xs, [a + b * math.log2(v) for v in xs], color=c, ls=":", alpha=0.7,
                        label=f"{tp}: least-squares a + b·log2 P (general)")
    benchplot.axes(ax, "ranks P", "µs per empty epoch (rank 0, median)", xlog=2, ylog=True,
                   which="both")
    ax.set_title("Empty epoch on 2 cores (P > 2 oversubscribes)", fontsize=10)
    ax.legend(fontsize=7)


def plot_memory(bx, d, transports):
    """Memory per rank against P: the buffers allocated and the RSS growth."""
    for tp, ranks in transports.items():
        c = COLORS.get(tp, "tab:gray")
        for op, metric, m, ls, label in (
                ("memory", "coalesce_kib", "o", "-", "direct buffers (allocated)"),
                ("memory", "rss_alltoall_kib", "^", "--", "direct: RSS growth, all-to-all"),
                ("memory_routed", "coalesce_kib", "D", "-", "routed buffers (allocated)"),
                ("memory_routed", "rss_alltoall_kib", "v", "--", "routed: RSS growth, all-to-all")):
            rs = [d[(tp, p, op, metric)] for p in ranks if (tp, p, op, metric) in d]
            if not rs:
                continue
            bx.plot([r["ranks"] for r in rs], [r["median"] / 1024 for r in rs], marker=m, ls=ls,
                    color=c, alpha=1.0 if op == "memory" else 0.55, label=f"{tp}: {label}")
    bx.axhline(16, color="black", ls="-.", lw=1, label="goal: 16 MiB per rank")
    benchplot.axes(bx, "ranks P", "MiB per rank", xlog=2, ylog=True, which="both")
    bx.set_title("Memory per rank: one coalescing layer, default buffers", fontsize=10)
    bx.legend(fontsize=7)


def plot(d, transports, out_dir, fitted):
    plt = benchplot.pyplot("plot_scaling")
    if plt is None:
        return 2
    f, (ax, bx) = plt.subplots(1, 2, figsize=(12, 4.8))
    plot_epochs(ax, d, transports, fitted)
    plot_memory(bx, d, transports)
    os.makedirs(out_dir, exist_ok=True)
    path = os.path.join(out_dir, "scaling.png")
    benchplot.save(plt, f, path)
    print(f"\nwrote {path}", file=sys.stderr)
    return 0


def spread(paths):
    """Per input file (one run): the empty-epoch medians and the R² of each fit."""
    print("\n#### Run to run: median µs per empty epoch (general / depth 0 / ctx.barrier)\n")
    print("| run | transport | " + " | ".join(f"P = {p}" for p in (8, 16, 32, 64, 128, 256, 512, 1024))
          + " | R², general: log2 P / P / P² |")
    print("|---" * 11 + "|")
    for path in paths:
        d = index(load([path]))
        for tp in sorted({k[0] for k in d}):
            ranks = sorted({k[1] for k in d if k[0] == tp and k[2] == "epoch_general"})
            if not ranks:
                continue
            cells = []
            for p in (8, 16, 32, 64, 128, 256, 512, 1024):
                v = [d.get((tp, p, op, "latency_us")) for op in
                     ("epoch_general", "epoch_depth0", "am_barrier")]
                cells.append(" / ".join(fmt(r["median"]) for r in v) if all(v) else "")
            ts = [d[(tp, p, "epoch_general", "latency_us")]["median"] for p in ranks]
            r2 = [lstsq(xs, ts)[3] for xs in ([math.log2(p) for p in ranks], ranks,
                                               [p * p for p in ranks])]
            print(f"| {os.path.basename(path)} | {tp} | " + " | ".join(cells) + " | "
                  + " / ".join(f"{v:.3f}" for v in r2) + " |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("inputs", nargs="+")
    ap.add_argument("--out", default="docs/scaling_figures")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--spread", action="store_true",
                    help="only the per-file (per-run) table of empty-epoch medians and fits")
    args = ap.parse_args()
    if args.spread:
        spread(args.inputs)
        return 0
    rows = load(args.inputs)
    if not rows:
        print("plot_scaling: no scaling lines in the input", file=sys.stderr)
        return 1
    d = index(rows)
    transports = defaultdict(set)
    for r in rows:
        transports[r["transport"]].add(r["ranks"])
    transports = {tp: sorted(v) for tp, v in transports.items()}
    fitted = {}
    for tp, ranks in transports.items():
        table(d, tp, ranks)
    for tp, ranks in transports.items():
        fitted[tp] = fits(d, tp, ranks)
    return 0 if args.no_plot else plot(d, transports, args.out, fitted)


if __name__ == "__main__":
    sys.exit(main())
