#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""am-graph500's BFS and SSSP beside constants quoted from issue 18 (not a same-sitting reference).

    plot_graph_goals.py RUNS.jsonl --out DIR

RUNS.jsonl: am-graph500 --json lines (alternating runs, any number per kernel and SCALE).
Writes DIR/graph_goals.png (median over runs of the harmonic-mean TEPS, the runs as ticks,
the quoted figure as a dashed line) and prints a Markdown table, with how many runs were
validated. The quoted figures are constants copied from issue 18's table (the best
shared-memory code, 2 threads, on the same 2-core machine at another time and vCPU state); they
are never re-measured here, so the ratio to them is not a like-for-like comparison (issue 37
measured one side by side: BFS 0.90-0.93x, SSSP 0.45-0.81x). Needs matplotlib
(scripts/requirements.txt; Debian: /usr/bin/python3).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchjson  # noqa: E402
import benchplot  # noqa: E402

# Quoted from issue 18, never re-measured: the best shared-memory code, 2 threads, Kronecker
# edgefactor 16 (MTEPS).
REFERENCE = {("bfs", 18): 1010, ("bfs", 20): 946, ("sssp", 18): 133, ("sssp", 20): 104}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = benchjson.pick(benchjson.load([args.runs], bench="graph500"), system="am")
    plt = benchplot.pyplot("plot_graph_goals.py")
    if plt is None:
        return 2
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    print("| kernel | SCALE | runs (validated) | median MTEPS (harmonic mean per run) | min–max | "
          "quoted constant (issue 18, not re-measured) | ratio to it (not like-for-like) |")
    print("|---|---|---|---|---|---|---|")
    for ax, op in zip(axes, ("bfs", "sssp")):
        scales = sorted({r["scale"] for r in rows if r["op"] == op})
        medians = []
        for i, s in enumerate(scales):
            picked = benchjson.pick(rows, op=op, scale=s)
            runs = [r["harmonic_mean"] / 1e6 for r in picked]
            n = f"{len(runs)} ({sum(1 for r in picked if r.get('validated'))})"
            m = statistics.median(runs)
            medians.append(m)
            ax.plot([i] * len(runs), runs, "_", color="black", markersize=14)
            ref = REFERENCE.get((op, s))
            if ref:
                ax.hlines(ref, i - 0.4, i + 0.4, colors="tab:red", linestyles="--")
            print(f"| {op} | {s} | {n} | {m:.0f} | {min(runs):.0f}–{max(runs):.0f} | "
                  f"{ref if ref else '—'} | {m / ref:.2f} |" if ref else
                  f"| {op} | {s} | {n} | {m:.0f} | {min(runs):.0f}–{max(runs):.0f} | — | — |")
        mine = benchjson.pick(rows, op=op)
        valid = sum(1 for r in mine if r.get("validated"))
        ax.bar(range(len(scales)), medians, color="tab:blue", alpha=0.7,
               label=f"am, 2 shm ranks ({valid} of {len(mine)} runs validated)")
        ax.set_xticks(range(len(scales)), [f"SCALE {s}" for s in scales])
        ax.set_title(op.upper())
        ax.set_ylabel("MTEPS (harmonic mean)")
        ax.plot([], [], "--", color="tab:red",
                label="quoted (issue 18), not re-measured:\nshared-memory code, 2 threads")
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("am-graph500, Kronecker edgefactor 16, 2 shm ranks on 2 cores", fontsize=10)
    os.makedirs(args.out, exist_ok=True)
    benchplot.save(plt, fig, os.path.join(args.out, "graph_goals.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
