#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Table and figure of BFS with several threads per rank, from bench/scripts/graph_threads.sh.

    graph_threads.sh build --out runs.jsonl
    /usr/bin/python3 plot_graph_threads.py runs.jsonl --out docs/graph_figures

Per ranks × threads configuration: the median over runs of each run's median TEPS (and the
smallest and largest run median), the median harmonic-mean TEPS, and the ratio to 1x1.
Prints a Markdown table (also written to graph_threads.md) with the 1x2 / 2x1 ratio below it,
and writes graph_threads.png (Debian's matplotlib: run it with /usr/bin/python3). Exit status 2
when matplotlib is missing (the table is written first).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchjson  # noqa: E402


def summarize(rows):
    """(ranks, threads) -> figures, in the order the configurations first appear."""
    by = {}
    for r in rows:
        by.setdefault((r["ranks"], r.get("threads", 1)), []).append(r)
    out = {}
    for key, runs in by.items():
        medians = [r["median"] for r in runs]
        out[key] = {
            "runs": len(runs),
            "median": statistics.median(medians),
            "min": min(medians),
            "max": max(medians),
            "hmean": statistics.median(r["harmonic_mean"] for r in runs),
            "scale": runs[0]["scale"],
            "roots": runs[0]["reps"],
        }
    return out


def table(figs):
    base = figs.get((1, 1), {}).get("median")
    lines = [
        "| ranks × threads | runs | median TEPS | min–max of runs | harmonic mean TEPS | vs 1×1 |",
        "|---|---|---|---|---|---|",
    ]
    for (ranks, threads), f in sorted(figs.items(), key=lambda kv: (kv[0][0] * kv[0][1], kv[0])):
        ratio = f"{f['median'] / base:.2f}" if base else "–"
        lines.append(
            f"| {ranks}×{threads} | {f['runs']} | {f['median']:.3e} | "
            f"{f['min']:.3e}–{f['max']:.3e} | {f['hmean']:.3e} | {ratio} |"
        )
    if (1, 2) in figs and (2, 1) in figs:
        lines.append("")
        lines.append(
            f"1×2 / 2×1 (median TEPS): {figs[(1, 2)]['median'] / figs[(2, 1)]['median']:.3f}"
        )
    return "\n".join(lines) + "\n"


def plot(figs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(figs, key=lambda k: (k[0] * k[1], k))
    labels = [f"{r}×{t}" for r, t in keys]
    med = [figs[k]["median"] / 1e6 for k in keys]
    lo = [m - figs[k]["min"] / 1e6 for m, k in zip(med, keys)]
    hi = [figs[k]["max"] / 1e6 - m for m, k in zip(med, keys)]
    colours = ["tab:blue" if r * t <= 2 else "tab:grey" for r, t in keys]
    fig, ax = plt.subplots(figsize=(6, 3.6))
    ax.bar(labels, med, yerr=[lo, hi], capsize=4, color=colours)
    any_fig = next(iter(figs.values()))
    ax.set_xlabel("ranks × handler threads per rank (shm; grey: more threads than cores)")
    ax.set_ylabel("median TEPS (millions)")
    ax.set_title(
        f"BFS, Kronecker SCALE {any_fig['scale']}, {any_fig['roots']} roots: "
        "threads vs ranks"
    )
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default=".", help="directory for graph_threads.{md,png}")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args()
    figs = summarize(benchjson.pick(benchjson.load(a.files, bench="graph500"), op="bfs"))
    if not figs:
        sys.exit("plot_graph_threads.py: no am-graph500 BFS lines in the input")
    text = table(figs)
    sys.stdout.write(text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "graph_threads.md"), "w") as f:
        f.write(text)
    if a.no_plot:
        return
    try:
        plot(figs, os.path.join(a.out, "graph_threads.png"))
    except ImportError:
        sys.exit(2)


if __name__ == "__main__":
    main()
