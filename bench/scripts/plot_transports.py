#!/usr/bin/env python3
"""Plots of the ucx transport figures (docs/transports_figures/README.md): 8 B latency and
message rate on one host and between 2 emulated hosts (am over ucx, am over mpi, raw MPI,
ucx_perftest), and Graph500 BFS TEPS on 2 emulated hosts (ucx vs mpi). Bars are medians,
error bars min to max.

    /usr/bin/python3 bench/scripts/plot_transports.py docs/transports_figures
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def load(path):
    if not os.path.exists(path):
        return []
    with open(path) as f:
        return [json.loads(line) for line in f if line.startswith("{")]


# (label, system, transport, op) of the bars, per metric.
BARS = {
    "latency_us": [("am ucx (short)", "am", "ucx", "short"),
                   ("am mpi (short)", "am", "mpi", "short"),
                   ("MPI send/recv", "mpi", "mpi", "send_recv"),
                   ("ucp_am_lat sm", "ucx", "ucx-sm", "ucp_am_lat"),
                   ("ucp_am_lat tcp", "ucx", "ucx-tcp", "ucp_am_lat")],
    "rate_Mmsgps": [("am ucx (short)", "am", "ucx", "short"),
                    ("am mpi (short)", "am", "mpi", "short"),
                    ("MPI isend window", "mpi", "mpi", "isend_window"),
                    ("ucp_am_bw sm", "ucx", "ucx-sm", "ucp_am_bw"),
                    ("ucp_am_bw tcp", "ucx", "ucx-tcp", "ucp_am_bw")],
}


def bars(ax, rows, metric, title):
    labels, med, lo, hi = [], [], [], []
    for label, system, transport, op in BARS[metric]:
        for r in rows:
            if (r["system"], r["transport"], r["op"], r["metric"]) == (system, transport, op,
                                                                      metric):
                labels.append(label)
                med.append(r["median"])
                lo.append(r["median"] - r["min"])
                hi.append(r["max"] - r["median"])
                break
    ax.bar(range(len(med)), med, yerr=[lo, hi], capsize=3, color="tab:blue")
    ax.set_xticks(range(len(med)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_yscale("log")
    ax.set_ylabel(metric)
    ax.set_title(title, fontsize=9)
    for i, m in enumerate(med):
        ax.annotate(f"{m:.3g}", (i, m), ha="center", va="bottom", fontsize=7)


def main(d):
    one = [r for r in load(os.path.join(d, "onehost_am_pingpong.jsonl")) +
           load(os.path.join(d, "onehost_am_flood.jsonl")) if r.get("bytes") == 8]
    two = [r for r in load(os.path.join(d, "multihost_ucx.jsonl"))
           if r["bench"].endswith("_2hosts")]
    fig, axes = plt.subplots(2, 2, figsize=(10, 8))
    bars(axes[0][0], one, "latency_us", "8 B one-way latency, one host, node size 1 (am ucx: sm) (µs)")
    bars(axes[0][1], one, "rate_Mmsgps", "8 B message rate, one host (Mmsg/s)")
    bars(axes[1][0], two, "latency_us", "8 B latency, 2 emulated hosts, TCP (µs)")
    bars(axes[1][1], two, "rate_Mmsgps", "8 B message rate, 2 emulated hosts, TCP (Mmsg/s)")
    fig.tight_layout()
    fig.savefig(os.path.join(d, "latency_rate.png"), dpi=110)

    g = [r for r in load(os.path.join(d, "multihost_graph500.jsonl"))
         if r.get("metric") == "teps_median_of_rounds" and r.get("median")]
    if g:
        fig, ax = plt.subplots(figsize=(6, 4))
        med = [r["median"] / 1e6 for r in g]
        lo = [(r["median"] - r["min"]) / 1e6 for r in g]
        hi = [(r["max"] - r["median"]) / 1e6 for r in g]
        ax.bar(range(len(g)), med, yerr=[lo, hi], capsize=3)
        ax.set_xticks(range(len(g)))
        ax.set_xticklabels([r["config"] for r in g], rotation=20, ha="right", fontsize=8)
        ax.set_ylabel("MTEPS (harmonic mean, median of rounds)")
        ax.set_title(f"Graph500 BFS, SCALE {g[0]['scale']}, 2 emulated hosts", fontsize=9)
        for i, m in enumerate(med):
            ax.annotate(f"{m:.0f}", (i, m), ha="center", va="bottom", fontsize=8)
        fig.tight_layout()
        fig.savefig(os.path.join(d, "graph500.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "docs/transports_figures")
