#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tables, goals, fits and figures of collectives_bench (bench/coll) from its JSON lines.

    collectives_bench --json --ranks 2,4,8 > coll.jsonl
    collectives_bench --json --ops epoch,barrier --transport threads \\
        --ranks 64,128,256,512,1024 --no-baseline > scaling.jsonl
    plot_collectives.py coll.jsonl scaling.jsonl --out docs/collectives_figures

Prints Markdown: per transport and rank count, am and MPI medians and the am/mpi ratios of
every (op, bytes); the issue's goals (8 B allreduce and barrier <= 1.0x MPI's time on shm and
threads, <= 1.2x on the mpi transport; 1 MiB allreduce >= 0.8x MPI's bandwidth) met or not;
and, for every op without data measured at 3 or more rank counts, the least-squares
fits of time (and of the core time per rank) against log2 P and against P with their R^2,
over the rank counts from --fit-from (64) up. Writes ratios.png (am/mpi per op
and size, one panel per transport) and, with scaling lines, scaling.png, unless --no-plot.
--expect ratios,scaling: exit 1 when one of those figures was not drawn.
"""
import argparse
import math
import os
import sys
from collections import defaultdict

import benchjson
import benchplot

GOALS = [  # (op, bytes, metric, transports, bound, "<=" or ">=")
    ("allreduce", 8, "latency_ratio", ("shm", "threads"), 1.0, "<="),
    ("barrier", 0, "latency_ratio", ("shm", "threads"), 1.0, "<="),
    ("allreduce", 8, "latency_ratio", ("mpi",), 1.2, "<="),
    ("barrier", 0, "latency_ratio", ("mpi",), 1.2, "<="),
    ("allreduce", 1 << 20, "bandwidth_ratio", ("shm", "threads", "mpi"), 0.8, ">="),
]


def size(b):
    if b == 0:
        return "-"
    if b >= 1 << 20:
        return f"{b >> 20} MiB"
    if b >= 1024:
        return f"{b >> 10} KiB"
    return f"{b} B"


def lstsq(xs, ys):
    """Least squares y = a + b x: a, b, R^2."""
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx if sxx else 0.0
    a = my - b * mx
    ss_tot = sum((y - my) ** 2 for y in ys)
    ss_res = sum((y - a - b * x) ** 2 for x, y in zip(xs, ys))
    return a, b, (1 - ss_res / ss_tot) if ss_tot else 1.0


def table(rows):
    """The comparison table: one row per (transport, ranks, op, bytes)."""
    idx = {(r["system"], r["transport"], r["ranks"], r["op"], r["bytes"], r["metric"]): r
           for r in rows}
    keys = sorted({(r["transport"], r["ranks"], r["op"], r["bytes"]) for r in rows
                   if r["system"] == "am/mpi"},
                  key=lambda k: (k[0], k[1], OPS.index(k[2]) if k[2] in OPS else 99, k[3]))
    print("| transport | ranks | op | bytes | am µs | MPI µs | am/MPI time | am GB/s | MPI GB/s"
          " | am/MPI bw |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    for tp, p, op, b in keys:
        am = idx.get(("am", tp, p, op, b, "latency_us"))
        den = "barrier" if op == "ctx_barrier" else op
        mpi = idx.get(("mpi", "mpi", p, den, b, "latency_us"))
        rt = idx.get(("am/mpi", tp, p, op, b, "latency_ratio"))
        abw = idx.get(("am", tp, p, op, b, "bandwidth_GBps"))
        mbw = idx.get(("mpi", "mpi", p, den, b, "bandwidth_GBps"))
        rb = idx.get(("am/mpi", tp, p, op, b, "bandwidth_ratio"))

        def f(r, d=3):
            return f"{r['median']:.{d}g}" if r else ""
        print(f"| {tp} | {p} | {op} | {size(b)} | {f(am)} | {f(mpi)} | {f(rt)} | {f(abw)} |"
              f" {f(mbw)} | {f(rb)} |")


def goals(rows):
    print("\n| goal | transport | ranks | am/MPI | met |")
    print("|---|---|---|---|---|")
    met_all = True
    for op, b, metric, tps, bound, rel in GOALS:
        for r in sorted(benchjson.pick(rows, system="am/mpi", op=op, bytes=b, metric=metric),
                        key=lambda r: (r["transport"], r["ranks"])):
            if r["transport"] not in tps:
                continue
            ok = r["median"] <= bound if rel == "<=" else r["median"] >= bound
            met_all = met_all and ok
            what = "time" if metric == "latency_ratio" else "bandwidth"
            print(f"| {op} {size(b)} {what} {rel} {bound}x | {r['transport']} | {r['ranks']} |"
                  f" {r['median']:.2f} | {'yes' if ok else 'NO'} |")
    return met_all


def scaling_series(rows, least):
    """(transport, op) -> [(P, µs)] over the am latency lines of the ops without data at P >=
    least, when there are 3 or more such rank counts."""
    s = defaultdict(dict)
    for r in benchjson.pick(rows, system="am", metric="latency_us"):
        if r["bytes"] == 0 and r["ranks"] >= least:
            s[(r["transport"], r["op"])][r["ranks"]] = r["median"]
    return {k: sorted(v.items()) for k, v in s.items() if len(v) >= 3}


def fit_row(tp, op, what, ps, ys):
    al, bl, rl = lstsq([math.log2(p) for p in ps], ys)
    ap, bp, rp = lstsq(ps, ys)
    print(f"| {tp} | {op} | {what} | {', '.join(f'{y:.4g}' for y in ys)} | {al:.4g} + {bl:.4g}"
          f" log2 P: **{rl:.3f}** | {ap:.4g} + {bp:.4g} P: **{rp:.3f}** |")


def fits(series, cores):
    """Time per operation, and the core time one rank's share takes (time x min(P, cores) / P:
    with P threads on `cores` cores, an algorithm of O(log P) rounds of O(1) work per rank takes
    O(P log P / cores) wall time, so the core time per rank is what grows as log P)."""
    print(f"\nFits over P = {', '.join(str(p) for p, _ in next(iter(series.values())))} "
          f"({cores} cores):\n")
    print("| transport | op | figure | values | fit a + b log2 P: R² | fit a + b P: R² |")
    print("|---|---|---|---|---|---|")
    for (tp, op), pts in sorted(series.items()):
        ps, ts = [p for p, _ in pts], [t for _, t in pts]
        fit_row(tp, op, "µs per op", ps, ts)
        fit_row(tp, op, "core µs per rank", ps, [t * min(p, cores) / p for p, t in pts])


OPS = ["barrier", "ctx_barrier", "epoch", "scan", "bcast", "allreduce", "alltoall"]


def plot_ratios(plt, rows, path):
    rs = benchjson.pick(rows, system="am/mpi")
    tps = [t for t in ("shm", "threads", "mpi") if benchjson.pick(rs, transport=t)]
    if not tps:
        return False
    f, axs = plt.subplots(1, len(tps), figsize=(5.2 * len(tps), 4.6), sharey=True, squeeze=False)
    for ax, tp in zip(axs[0], tps):
        pts = sorted({(r["op"], r["bytes"], r["metric"]) for r in benchjson.pick(rs, transport=tp)},
                     key=lambda k: (OPS.index(k[0]) if k[0] in OPS else 99,
                                    k[2] == "bandwidth_ratio", k[1]))
        ranks = sorted({r["ranks"] for r in benchjson.pick(rs, transport=tp)})
        w = 0.8 / len(ranks)
        for i, p in enumerate(ranks):
            xs, got = [], []
            for j, (op, b, m) in enumerate(pts):
                r = benchjson.one(rs, transport=tp, ranks=p, op=op, bytes=b, metric=m)
                if r:
                    xs.append(j + (i - (len(ranks) - 1) / 2) * w)
                    got.append(r)
            ax.bar(xs, [r["median"] for r in got], width=w, label=f"{p} ranks",
                   yerr=benchjson.err(got), capsize=2, error_kw={"alpha": 0.25})
        labels = [f"{op} {size(b)}" + (" bw" if m == "bandwidth_ratio" else "")
                  for op, b, m in pts]
        ax.set_xticks(range(len(pts)))
        ax.set_xticklabels(labels, rotation=70, fontsize=8)
        ax.axhline(1.0, color="black", lw=0.8)
        ax.set_yscale("log")
        ax.set_title(f"am on {tp} / MPI (whiskers: the ratio's min-max range)", fontsize=10)
        ax.set_ylabel("am/MPI: time (bw: bandwidth)")
        ax.grid(alpha=0.3, axis="y")
        ax.legend(fontsize=8)
    benchplot.save(plt, f, path)
    return True


def plot_scaling(plt, series, path):
    if not series:
        return False
    f, ax = plt.subplots(figsize=(6.4, 4.6))
    for (tp, op), pts in sorted(series.items()):
        ax.plot([p for p, _ in pts], [t for _, t in pts], "o-", label=f"{op} ({tp})")
    benchplot.axes(ax, "ranks P", "µs per operation (rank 0)", xlog=2, ylog=True)
    ax.legend(fontsize=8)
    ax.set_title("empty epoch and barriers vs P (oversubscribed: 2 cores)")
    benchplot.save(plt, f, path)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default=".")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--expect", default="")
    ap.add_argument("--fit-from", type=int, default=64,
                    help="fit the rank counts from this one up (default 64)")
    ap.add_argument("--cores", type=int, default=os.cpu_count(),
                    help="cores of the machine that ran the lines (default: this one's)")
    a = ap.parse_args()
    rows = benchjson.load(a.files, "coll")
    if not rows:
        print("plot_collectives.py: no coll lines", file=sys.stderr)
        return 1
    table(rows)
    goals(rows)
    series = scaling_series(rows, a.fit_from)
    if series:
        fits(series, a.cores)
    if a.no_plot:
        return 0
    plt = benchplot.pyplot("plot_collectives.py")
    if plt is None:
        return 2
    os.makedirs(a.out, exist_ok=True)
    path = lambda name: os.path.join(a.out, f"{name}.png")  # noqa: E731
    drawn = {"ratios": plot_ratios(plt, rows, path("ratios")),
             "scaling": plot_scaling(plt, series, path("scaling"))}
    return benchplot.expected("plot_collectives.py", a.expect, drawn, path)


if __name__ == "__main__":
    sys.exit(main())
