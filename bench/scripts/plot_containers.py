#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tables, goals and figures of containers_bench (bench/dist) from its JSON lines.

    containers_bench --json --ranks 2,4,8 > dist.jsonl
    plot_containers.py dist.jsonl --out docs/containers_figures

Prints Markdown: per transport, rank count, op and key size, the ops/s of am, of the
MPI_Alltoallv batch and of the single-threaded std::unordered_map, am/MPI, and am per rank over
std; then the issue's goals (8 B uniform keys, 2 ranks: map_insert >= 20 M ops/s on shm;
map_insert and set_insert >= 2x the MPI_Alltoallv batch; counting_set per rank within 1.5x of
one thread's std::unordered_map, i.e. >= 1/1.5) met or not. Writes rates.png (ops/s per op, one
panel per transport and rank count) and ratios.png (am/MPI and am per rank/std), unless
--no-plot. --expect rates,ratios: exit 1 when one of those figures was not drawn.
"""
import argparse
import os
import sys

import benchjson
import benchplot

OPS = ["map_insert", "counting_set", "set_insert", "visit", "bag", "dsu"]
SYSTEMS = [("am", "am"), ("mpi_alltoallv", "MPI_Alltoallv batch"),
           ("std_umap", "std::unordered_map, 1 thread")]
MPI_RATIO = ("am/mpi", "ratio_am_over_mpi")
STD_RATIO = ("am/std", "ratio_am_rank_over_std")
GOALS = [  # (system, op, metric, transports, bound, what)
    ("am", "map_insert", "ops_per_s", ("shm",), 20e6, "map_insert ops/s"),
    (MPI_RATIO[0], "map_insert", MPI_RATIO[1], ("shm", "threads", "mpi"), 2.0,
     "map_insert am/MPI_Alltoallv"),
    (MPI_RATIO[0], "set_insert", MPI_RATIO[1], ("shm", "threads", "mpi"), 2.0,
     "set_insert am/MPI_Alltoallv"),
    (STD_RATIO[0], "counting_set", STD_RATIO[1], ("shm", "threads", "mpi"), 1 / 1.5,
     "counting_set am per rank/std"),
]


def order(op):
    base, _, dist = op.partition(".")
    return (dist, OPS.index(base) if base in OPS else 99)


def fmt(r, d=3):
    return f"{r['median']:.{d}g}" if r else ""


def table(rows):
    """One row per (transport, ranks, op, bytes) of the am lines."""
    keys = sorted({(r["transport"], r["ranks"], r["op"], r["bytes"])
                   for r in benchjson.pick(rows, system="am")},
                  key=lambda k: (k[0], k[1], order(k[2]), k[3]))
    print("| transport | ranks | op | key B | am ops/s | MPI_Alltoallv ops/s | std 1 thread ops/s"
          " | am/MPI | am per rank/std |")
    print("|---|---|---|---|---|---|---|---|---|")
    for tp, p, op, b in keys:
        am = benchjson.one(rows, system="am", transport=tp, ranks=p, op=op, bytes=b)
        mpi = benchjson.one(rows, system="mpi_alltoallv", ranks=p, op=op, bytes=b)
        std = benchjson.one(rows, system="std_umap", ranks=p, op=op, bytes=b)
        rm = benchjson.one(rows, system=MPI_RATIO[0], transport=tp, ranks=p, op=op, bytes=b)
        rs = benchjson.one(rows, system=STD_RATIO[0], transport=tp, ranks=p, op=op, bytes=b)
        print(f"| {tp} | {p} | {op} | {b} | {fmt(am)} | {fmt(mpi)} | {fmt(std)} | {fmt(rm)} |"
              f" {fmt(rs)} |")


def goals(rows):
    print("\n| goal (8 B uniform keys, 2 ranks) | transport | value | bound | met |")
    print("|---|---|---|---|---|")
    met_all = True
    for system, op, metric, tps, bound, what in GOALS:
        for r in sorted(benchjson.pick(rows, system=system, op=op, bytes=8, ranks=2,
                                       metric=metric), key=lambda r: r["transport"]):
            if r["transport"] not in tps:
                continue
            ok = r["median"] >= bound
            met_all = met_all and ok
            print(f"| {what} | {r['transport']} | {r['median']:.3g} | >= {bound:.3g} |"
                  f" {'yes' if ok else 'NO'} |")
    return met_all


def panels(plt, rows):
    """A figure of one panel per (transport, ranks) of the am lines."""
    cells = sorted({(r["transport"], r["ranks"]) for r in benchjson.pick(rows, system="am")})
    if not cells:
        return None, []
    f, axs = plt.subplots(1, len(cells), figsize=(5.6 * len(cells), 4.8), squeeze=False,
                          sharey=True)
    return f, list(zip(axs[0], cells))


def bars(ax, groups, series, ylabel, title):
    """Grouped bars: groups (x labels), series [(label, [row or None per group])]."""
    w = 0.8 / max(1, len(series))
    for i, (label, rs) in enumerate(series):
        xs = [j + (i - (len(series) - 1) / 2) * w for j, r in enumerate(rs) if r]
        got = [r for r in rs if r]
        if got:
            ax.bar(xs, [r["median"] for r in got], width=w, label=label,
                   yerr=benchjson.err(got), capsize=2, error_kw={"alpha": 0.3})
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups, rotation=70, fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3, axis="y")
    ax.legend(fontsize=8)


def points_of(rows, tp, p):
    return sorted({(r["op"], r["bytes"]) for r in benchjson.pick(rows, system="am", transport=tp,
                                                                 ranks=p)},
                  key=lambda k: (order(k[0]), k[1]))


def plot(plt, rows, path, series_of, ylabel, title, lines=()):
    """One panel per (transport, ranks): grouped bars of series_of(tp, p, points) over the am
    points (op, key bytes), horizontal lines at `lines`."""
    f, cells = panels(plt, rows)
    if f is None:
        return False
    for ax, (tp, p) in cells:
        pts = points_of(rows, tp, p)
        bars(ax, [f"{op} {b} B" for op, b in pts], series_of(tp, p, pts), ylabel,
             title.format(tp=tp, p=p))
        for y, color in lines:
            ax.axhline(y, color=color, lw=0.8, ls="-" if y == 1.0 else "--")
    benchplot.save(plt, f, path)
    return True


def rate_series(rows):
    """ops/s of am (on the panel's transport), of the MPI batch and of std, per point."""
    def of(tp, p, pts):
        return [(label, [benchjson.one(rows, system=system, ranks=p, op=op, bytes=b,
                                       metric="ops_per_s",
                                       **({"transport": tp} if system == "am" else {}))
                         for op, b in pts]) for system, label in SYSTEMS]
    return of


def ratio_series(rows):
    """am/MPI and am per rank/std, per point."""
    def of(tp, p, pts):
        return [(label, [benchjson.one(rows, system=system, transport=tp, ranks=p, op=op,
                                       bytes=b, metric=metric) for op, b in pts])
                for (system, metric), label in ((MPI_RATIO, "am / MPI_Alltoallv"),
                                                (STD_RATIO, "am per rank / std, 1 thread"))]
    return of


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default=".")
    ap.add_argument("--no-plot", action="store_true")
    ap.add_argument("--expect", default="")
    a = ap.parse_args()
    rows = benchjson.load(a.files, "dist")
    if not rows:
        print("plot_containers.py: no dist lines", file=sys.stderr)
        return 1
    table(rows)
    goals(rows)
    if a.no_plot:
        return 0
    plt = benchplot.pyplot("plot_containers.py")
    if plt is None:
        return 2
    os.makedirs(a.out, exist_ok=True)
    path = lambda name: os.path.join(a.out, f"{name}.png")  # noqa: E731
    drawn = {"rates": plot(plt, rows, path("rates"), rate_series(rows), "operations/s (all ranks)",
                           "am on {tp}, {p} ranks (whiskers: min-max)"),
             "ratios": plot(plt, rows, path("ratios"), ratio_series(rows),
                            "ratio (> 1: am faster)", "am on {tp}, {p} ranks",
                            ((1.0, "black"), (2.0, "tab:blue"), (1 / 1.5, "tab:orange")))}
    return benchplot.expected("plot_containers.py", a.expect, drawn, path)


if __name__ == "__main__":
    sys.exit(main())
