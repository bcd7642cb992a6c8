#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""am-graph500's BFS and SSSP beside the shared-memory reference figures of issue 18.

    plot_graph_goals.py RUNS.jsonl --out DIR

RUNS.jsonl: am-graph500 --json lines (alternating runs, any number per kernel and SCALE).
Writes DIR/graph_goals.png (median over runs of the harmonic-mean TEPS, the runs as ticks,
the reference as a line) and prints a Markdown table. The reference figures are the best
shared-memory code on the same 2-core machine, 2 threads (the issue's table); they are not
re-measured here. Needs matplotlib (scripts/requirements.txt; Debian: /usr/bin/python3).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchjson  # noqa: E402

# Issue 18: the best shared-memory code, 2 threads, Kronecker edgefactor 16 (MTEPS).
REFERENCE = {("bfs", 18): 1010, ("bfs", 20): 946, ("sssp", 18): 133, ("sssp", 20): 104}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = benchjson.pick(benchjson.load([args.runs], bench="graph500"), system="am")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.6))
    print("| kernel | SCALE | runs | median MTEPS (harmonic mean per run) | min–max | "
          "shared-memory reference | ratio |")
    print("|---|---|---|---|---|---|---|")
    for ax, op in zip(axes, ("bfs", "sssp")):
        scales = sorted({r["scale"] for r in rows if r["op"] == op})
        medians = []
        for i, s in enumerate(scales):
            runs = [r["harmonic_mean"] / 1e6 for r in benchjson.pick(rows, op=op, scale=s)]
            m = statistics.median(runs)
            medians.append(m)
            ax.plot([i] * len(runs), runs, "_", color="black", markersize=14)
            ref = REFERENCE.get((op, s))
            if ref:
                ax.hlines(ref, i - 0.4, i + 0.4, colors="tab:red", linestyles="--")
            print(f"| {op} | {s} | {len(runs)} | {m:.0f} | {min(runs):.0f}–{max(runs):.0f} | "
                  f"{ref if ref else '—'} | {m / ref:.2f} |" if ref else
                  f"| {op} | {s} | {len(runs)} | {m:.0f} | {min(runs):.0f}–{max(runs):.0f} | — | — |")
        ax.bar(range(len(scales)), medians, color="tab:blue", alpha=0.7, label="am, 2 shm ranks")
        ax.set_xticks(range(len(scales)), [f"SCALE {s}" for s in scales])
        ax.set_title(op.upper())
        ax.set_ylabel("MTEPS (harmonic mean)")
        ax.plot([], [], "--", color="tab:red", label="shared-memory code, 2 threads")
        ax.legend(fontsize=7, loc="upper right")
    fig.suptitle("am-graph500, Kronecker edgefactor 16, 2 shm ranks on 2 cores", fontsize=10)
    fig.tight_layout()
    os.makedirs(args.out, exist_ok=True)
    fig.savefig(os.path.join(args.out, "graph_goals.png"), dpi=110)


if __name__ == "__main__":
    main()
