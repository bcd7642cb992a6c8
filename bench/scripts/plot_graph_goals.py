#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""am-graph500's BFS and SSSP beside the OpenMP shared-memory reference, measured side by side.

    plot_graph_goals.py RUNS.jsonl [RUNS.jsonl ...] --out DIR

RUNS: the JSON lines of graph500_bench (any SCALEs, any rounds): per round a cache-line hop line
(system "cacheline"), each system's Graph500 line (am in its shapes, "omp", "omp" with
"light_heavy" for omp-refined) and at the end the ratio lines ("am/omp", "am/omp-refined").
Writes DIR/graph_goals.png (per kernel and SCALE the median over the rounds of each system's
harmonic-mean TEPS, each round as a tick) and prints a Markdown table of the ratio lines (every
hop state the rounds saw), with how many of the runs were validated. Needs matplotlib
(scripts/requirements.txt; Debian: /usr/bin/python3).
"""
import argparse
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchjson  # noqa: E402
import benchplot  # noqa: E402

# (label, predicate on a Graph500 line, colour)
SYSTEMS = [
    ("am 2 ranks", lambda r: r["system"] == "am" and r["ranks"] == 2 and r.get("threads") == 1,
     "tab:blue"),
    ("am 1 rank x 2 threads",
     lambda r: r["system"] == "am" and r["ranks"] == 1 and r.get("threads") == 2, "tab:cyan"),
    ("OpenMP reference (GAP)", lambda r: r["system"] == "omp" and not r.get("light_heavy"),
     "tab:red"),
    ("OpenMP reference, refined SSSP", lambda r: r["system"] == "omp" and r.get("light_heavy"),
     "tab:orange"),
]


def rounds(paths):
    """Per file, per round (a hop line starts one): (hop µs or None, the round's Graph500 lines)."""
    out = []
    for path in paths:
        hop, runs = None, []
        for r in benchjson.load([path], bench="graph500"):
            if r.get("system") == "cacheline":
                if runs or hop is not None:
                    out.append((hop, runs))
                hop, runs = r["median"], []
            elif r.get("metric") == "teps":
                runs.append(r)
        if runs:
            out.append((hop, runs))
    return out


def state(hop):
    if hop is None:
        return "unmeasured"
    return "near" if hop < NEAR_HOP_US else "middle" if hop < FAR_HOP_US else "far"


NEAR_HOP_US, FAR_HOP_US = 0.1, 0.15  # graph500_bench's thresholds

# am shapes and baselines of the table: (label, predicate)
SHAPES = [("2x1", SYSTEMS[0][1]), ("1x2", SYSTEMS[1][1])]
BASELINES = [("omp", SYSTEMS[2][1]), ("omp-refined", SYSTEMS[3][1])]


def table(all_rounds):
    """Per kernel, SCALE, am shape, baseline and hop state (all rounds, then each state seen):
    the medians over the rounds of each side's harmonic mean and their ratio, its range as
    graph500_bench's (am's min over the baseline's max, am's max over its min)."""
    print("| kernel | SCALE | am | baseline | hop state | rounds | median hop (µs) | am MTEPS | "
          "baseline MTEPS | am / baseline (range) |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    keys = sorted({(r["op"], r["scale"]) for _, runs in all_rounds for r in runs})
    for op, scale in keys:
        for shape, am_pick in SHAPES:
            for base, base_pick in BASELINES:
                for st in ("all", "near", "middle", "far"):
                    a, b, hops = [], [], []
                    for hop, runs in all_rounds:
                        if st != "all" and state(hop) != st:
                            continue
                        mine = [r for r in runs if r["op"] == op and r["scale"] == scale]
                        x = [r["harmonic_mean"] for r in mine if am_pick(r)]
                        y = [r["harmonic_mean"] for r in mine if base_pick(r)]
                        if x and y:
                            a += x
                            b += y
                            hops += [hop] if hop is not None else []
                    if not a:
                        continue
                    ma, mb = statistics.median(a), statistics.median(b)
                    hop = f"{statistics.median(hops):.3g}" if hops else "—"
                    print(f"| {op} | {scale} | {shape} | {base} | {st} | {len(a)} | {hop} | "
                          f"{ma / 1e6:.0f} | {mb / 1e6:.0f} | {ma / mb:.2f} "
                          f"({min(a) / max(b):.2f}–{max(a) / min(b):.2f}) |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("runs", nargs="+")
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    rows = benchjson.load(args.runs, bench="graph500")
    runs = [r for r in rows if r.get("metric") == "teps"]
    table(rounds(args.runs))
    valid = sum(1 for r in runs if r.get("validated"))
    print(f"\n{valid} of {len(runs)} runs validated; hops per round (µs): " + ", ".join(
        f"{r['median']:.3g}" for r in rows if r.get("system") == "cacheline"))
    plt = benchplot.pyplot("plot_graph_goals.py")
    if plt is None:
        return 2
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
    width = 0.8 / len(SYSTEMS)
    for ax, op in zip(axes, ("bfs", "sssp")):
        scales = sorted({r["scale"] for r in runs if r["op"] == op})
        for k, (label, pick, colour) in enumerate(SYSTEMS):
            xs, medians = [], []
            for i, s in enumerate(scales):
                values = [r["harmonic_mean"] / 1e6 for r in runs
                          if r["op"] == op and r["scale"] == s and pick(r)]
                if not values:
                    continue
                x = i - 0.4 + width * (k + 0.5)
                xs.append(x)
                medians.append(statistics.median(values))
                ax.plot([x] * len(values), values, "_", color="black", markersize=8)
            if xs:
                ax.bar(xs, medians, width, color=colour, alpha=0.8, label=label)
        ax.set_xticks(range(len(scales)), [f"SCALE {s}" for s in scales])
        ax.set_title(op.upper())
        ax.set_ylabel("MTEPS (harmonic mean per run)")
        top = max((r["harmonic_mean"] / 1e6 for r in runs if r["op"] == op), default=1)
        ax.set_ylim(0, top * 1.35)  # room for the legend above the bars
        ax.legend(fontsize=7, loc="upper center", ncol=2)
    fig.suptitle("Kronecker, edgefactor 16, 2 cores, same sitting (graph500_bench); "
                 "bars: median of rounds, ticks: rounds", fontsize=9)
    os.makedirs(args.out, exist_ok=True)
    benchplot.save(plt, fig, os.path.join(args.out, "graph_goals.png"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
