#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Tables and figure of BFS and SSSP with several threads per rank, from graph_threads.sh.

    graph_threads.sh build --out runs.jsonl
    /usr/bin/python3 plot_graph_threads.py runs.jsonl --out docs/graph_figures

Per kernel and ranks × threads configuration: the median over runs of each run's median TEPS
(and the smallest and largest run median), the median harmonic-mean TEPS, and the ratio to
1x1; below each table the 1x2 / 2x1 ratio, over the medians and round by round (the runs of
one round are minutes apart), and the cache-line hops measured at the start of the rounds.
Prints Markdown (also written to graph_threads.md) and writes graph_threads.png, a panel per
kernel (Debian's matplotlib: run it with /usr/bin/python3). Exit status 2 when matplotlib is
missing (the tables are written first).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchjson  # noqa: E402
import benchplot  # noqa: E402


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


def round_ratios(rows):
    """1x2 / 2x1 of each round's run medians, in input order (a round: its file and number)."""
    by = {}
    for r in rows:
        by.setdefault((r["_file"], r.get("round")), {})[(r["ranks"], r.get("threads", 1))] = r[
            "median"
        ]
    return [v[(1, 2)] / v[(2, 1)] for v in by.values() if (1, 2) in v and (2, 1) in v]


def table(figs, ratios):
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
            + (f"; round by round: {', '.join(f'{x:.3f}' for x in ratios)}" if ratios else "")
        )
    return "\n".join(lines) + "\n"


def plot(plt, by_kernel, path):
    fig, axes = plt.subplots(1, len(by_kernel), figsize=(5.2 * len(by_kernel), 3.6), squeeze=False)
    for ax, (kernel, figs) in zip(axes[0], by_kernel.items()):
        keys = sorted(figs, key=lambda k: (k[0] * k[1], k))
        labels = [f"{r}×{t}" for r, t in keys]
        med = [figs[k]["median"] / 1e6 for k in keys]
        lo = [m - figs[k]["min"] / 1e6 for m, k in zip(med, keys)]
        hi = [figs[k]["max"] / 1e6 - m for m, k in zip(med, keys)]
        colours = ["tab:blue" if r * t <= 2 else "tab:grey" for r, t in keys]
        ax.bar(labels, med, yerr=[lo, hi], capsize=4, color=colours)
        any_fig = next(iter(figs.values()))
        ax.set_xlabel("ranks × threads per rank (shm; grey: > cores)")
        ax.set_ylabel("median TEPS (millions)")
        ax.set_title(
            f"{kernel.upper()}, Kronecker SCALE {any_fig['scale']}, {any_fig['roots']} roots"
        )
    benchplot.save(plt, fig, path, dpi=120)


def hops(rows):
    """The shm cache-line hop (µs) measured at the start of each round."""
    return [r["median"] for r in rows if r.get("op") == "hop" and r.get("transport") == "shm"]


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--out", default=".", help="directory for graph_threads.{md,png}")
    ap.add_argument("--no-plot", action="store_true")
    a = ap.parse_args()
    everything = []  # each file once (a "-" is stdin), its rows tagged with it
    for i, path in enumerate(a.files):
        for r in benchjson.load([path]):
            r["_file"] = i
            everything.append(r)
    rows = [r for r in everything if r.get("bench") == "graph500"]
    by_kernel = {}
    text = ""
    for kernel in ("bfs", "sssp"):
        runs = benchjson.pick(rows, op=kernel)
        if not runs:
            continue
        by_kernel[kernel] = summarize(runs)
        text += f"**{kernel.upper()}**\n\n" + table(by_kernel[kernel], round_ratios(runs)) + "\n"
    if not by_kernel:
        sys.exit("plot_graph_threads.py: no am-graph500 BFS or SSSP lines in the input")
    hop = hops([r for r in everything if r.get("bench") == "am_pingpong"])
    if hop:
        text += (
            "Cache-line hop between the cores at the start of each round (µs): "
            + ", ".join(f"{h:.3f}" for h in hop)
            + "\n"
        )
    sys.stdout.write(text)
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "graph_threads.md"), "w") as f:
        f.write(text)
    if a.no_plot:
        return
    plt = benchplot.pyplot("plot_graph_threads.py")
    if plt is None:
        sys.exit(2)
    plot(plt, by_kernel, os.path.join(a.out, "graph_threads.png"))


if __name__ == "__main__":
    main()
