#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws tam_table's MD/AM cycle ratios against threads per quantum (TPQ) as PNGs from its
JSON lines: ours beside the paper's Table 2, one marker per program, one colour per miss cost.

    tam_table ... > table2.json
    plot_tam.py table2.json --out docs/tam_figures [--tpq am|md] [--expect 4way,direct]

Figures (one PNG each, when the input has their data):
  ratio_vs_tpq_4way.png    8 KiB 4-way I and D caches: ours (filled; median, bars min-max over
                           the repetitions) and the paper's Table 2 (hollow), miss costs 12,
                           24, 48
  ratio_vs_tpq_direct.png  8 KiB direct-mapped caches: ours only (the paper draws these
                           against cache size in its Fig. 5 and prints no table)
The x axis is the TPQ of the Active Messages policy (--tpq md: of the message-driven one), log
scale. Lines that are not JSON objects with "bench": "tam" are ignored. Exit status 1 when a
figure named by --expect has no data or its PNG was not written; 2 when matplotlib is missing.
"""
import argparse
import os
import sys

import benchjson  # bench/scripts/benchjson.py: the shared JSON-lines loader
import benchplot  # bench/scripts/benchplot.py: what the plot scripts draw alike

PROGRAMS = ["mmt", "qs", "dtw", "paraffins", "wavefront", "ss"]
MARKER = {"mmt": "o", "qs": "s", "dtw": "^", "paraffins": "D", "wavefront": "v", "ss": "P"}
COSTS = [12, 24, 48]
COLOR = {12: "tab:blue", 24: "tab:orange", 48: "tab:red"}
FIGURES = ["4way", "direct"]


def load(paths):
    return benchjson.load(paths, "tam")


def line(rows, **kw):
    for r in rows:
        if all(r.get(k) == v for k, v in kw.items()):
            return r
    return None


def value(rows, **kw):
    r = line(rows, **kw)
    return r["median"] if r else None


def points(rows, prefix, cache, tpq_of):
    """(program, tpq, {cost: ratio line}) for every program with a TPQ and all three ratios."""
    suffix = "_dm" if cache == "direct" else ""
    out = []
    for prog in PROGRAMS:
        tpq = value(rows, system=prefix + tpq_of, op=prog, metric="tpq")
        ratios = {c: line(rows, system=prefix + "md/am", op=prog,
                          metric=f"cycle_ratio_miss{c}{suffix}") for c in COSTS}
        if tpq and all(v is not None for v in ratios.values()):
            out.append((prog, tpq, ratios))
    return out


def plot(plt, rows, cache, tpq_of, path):
    ours = points(rows, "", cache, tpq_of)
    paper = points(rows, "paper_", cache, tpq_of) if cache == "4way" else []
    if not ours:
        return False
    f, ax = plt.subplots(figsize=(8, 5))
    for source, pts, filled in (("ours", ours, True), ("paper", paper, False)):
        for prog, tpq, ratios in pts:
            for c in COSTS:
                r = ratios[c]
                if r["max"] > r["min"]:  # min-max over the repetitions
                    benchplot.errorbar(ax, [tpq], [r], color=COLOR[c], linewidth=1)
                ax.scatter([tpq], [r["median"]], marker=MARKER[prog], s=55, color=COLOR[c],
                           facecolors=COLOR[c] if filled else "none", linewidths=1.4)
        # One line per miss cost through the programs in TPQ order, to show the trend.
        for c in COSTS:
            s = sorted(pts, key=lambda p: p[1])
            ax.plot([p[1] for p in s], [p[2][c]["median"] for p in s], color=COLOR[c], alpha=0.35,
                    linestyle="-" if filled else ":")
    ax.axhline(1.0, color="gray", linewidth=0.8)
    benchplot.axes(ax, f"threads per quantum ({tpq_of.upper()} policy, log scale)",
                   "cycles MD / cycles AM", xlog=10, which="both")
    what = "4-way set-associative" if cache == "4way" else "direct-mapped"
    ax.set_title(f"MD/AM cycle ratio against TPQ, one rank, 8 KiB {what} I and D caches, 64 B lines",
                 fontsize=9)
    # Legends: programs (marker), miss costs (colour), source (filled or hollow).
    from matplotlib.lines import Line2D
    handles = [Line2D([], [], marker=MARKER[p], linestyle="", color="black", label=p)
               for p in PROGRAMS if any(q[0] == p for q in ours + paper)]
    handles += [Line2D([], [], color=COLOR[c], label=f"miss {c} cycles") for c in COSTS]
    handles.append(Line2D([], [], marker="o", linestyle="-", color="gray", label="ours (filled)"))
    if paper:
        handles.append(Line2D([], [], marker="o", linestyle=":", color="gray",
                              markerfacecolor="none", label="paper, Table 2 (hollow)"))
    ax.legend(handles=handles, fontsize=8, ncol=2)
    benchplot.save(plt, f, path)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="JSON-lines files of tam_table ('-': stdin)")
    ap.add_argument("--out", default="docs/tam_figures", help="directory of the PNGs")
    ap.add_argument("--tpq", choices=["am", "md"], default="am", help="whose TPQ is the x axis")
    ap.add_argument("--expect", default="", help="figures that must be drawn (4way,direct)")
    a = ap.parse_args()
    rows = load(a.inputs)
    plt = benchplot.pyplot("plot_tam")
    if plt is None:
        return 2
    os.makedirs(a.out, exist_ok=True)
    path = lambda c: os.path.join(a.out, f"ratio_vs_tpq_{c}.png")  # noqa: E731
    drawn = {c: plot(plt, rows, c, a.tpq, path(c)) for c in FIGURES}
    return benchplot.expected("plot_tam", a.expect, drawn, path)


if __name__ == "__main__":
    sys.exit(main())
