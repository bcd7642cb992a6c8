#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws the rpc_bench figures as PNGs from its JSON lines, and prints the medians against
the goals of issue 16 as a Markdown table.

    rpc_bench ... > rpc.json
    plot_rpc.py rpc.json --out docs/rpc_figures [--summary] [--expect rtt,async_rate,...]

Figures (one PNG each, when the input has their data):
  rtt.png         null_rtt and arg8_rtt round-trip latency per system
  async_rate.png  calls per µs with 64 in flight per system
  optimistic.png  ns per message: plain vs non-blocking optimistic handler, and the
                  promotion (turn-into-thread + resumption) with its two measurements
  dht.png         dht seconds and rate against the rank count per system
  uts.png         uts seconds against the rank count per system
Lines that are not JSON objects with "bench": "rpc" are ignored. Exit status 1 when a figure
named by --expect has no data or its PNG was not written; 2 when matplotlib is missing.
"""
import argparse
import os
import sys

import benchjson  # bench/scripts/benchjson.py: the shared JSON-lines loader
import benchplot  # bench/scripts/benchplot.py: what the plot scripts draw alike
from benchjson import err, one, pick

FIGURES = ["rtt", "async_rate", "optimistic", "dht", "uts"]
SYSTEMS = ["am_handcoded", "am_rpc", "trpc", "plain_handler"]
COLOR = {"am_handcoded": "tab:blue", "am_rpc": "tab:orange", "trpc": "tab:red",
         "plain_handler": "tab:green"}
LABEL = {"am_handcoded": "hand-coded AM", "am_rpc": "am::rpc / optimistic", "trpc": "TRPC",
         "plain_handler": "plain handler"}


def load(paths):
    return benchjson.load(paths, "rpc")


def transport(rows):
    ts = sorted({r["transport"] for r in rows})
    return ", ".join(ts)


def bars(ax, rows, ops, metric, systems):
    """Grouped bars: one group per op, one bar per system, min-max whiskers."""
    width = 0.8 / max(1, len(systems))
    drawn = False
    for k, s in enumerate(systems):
        xs, rs = [], []
        for i, op in enumerate(ops):
            r = one(rows, system=s, op=op, metric=metric)
            if r is not None:
                xs.append(i + (k - (len(systems) - 1) / 2) * width)
                rs.append(r)
        if not rs:
            continue
        drawn = True
        ax.bar(xs, [r["median"] for r in rs], width, yerr=err(rs), capsize=3,
               color=COLOR.get(s), label=LABEL.get(s, s))
        benchplot.label_medians(ax, xs, rs)
    ax.set_xticks(range(len(ops)))
    ax.set_xticklabels(ops)
    return drawn


# Bar figures: ops, metric, width, y label, title.
BARS = {"rtt": (["null_rtt", "arg8_rtt"], "latency_us", 7, "round trip, µs (median, min-max)",
                "RPC round trip"),
        "async_rate": (["async_rate"], "rate_Mops", 6, "calls per µs (Mops), 64 in flight",
                       "Asynchronous call rate")}


def plot_bars(plt, rows, path, name):
    ops, metric, width, ylabel, what = BARS[name]
    f, ax = plt.subplots(figsize=(width, 4.5))
    if not bars(ax, rows, ops, metric, SYSTEMS[:3]):
        plt.close(f)
        return False
    ax.set_ylabel(ylabel)
    ax.set_title(f"{what}, 2 ranks ({transport(rows)})")
    ax.legend()
    benchplot.save(plt, f, path)
    return True


def plot_optimistic(plt, rows, path):
    items = [("plain handler", one(rows, system="plain_handler", op="optimistic_noblock",
                                   metric="ns"), "tab:green"),
             ("optimistic,\nnot blocking", one(rows, system="am_rpc", op="optimistic_noblock",
                                               metric="ns"), "tab:orange"),
             ("lock+unlock,\nmutex free", one(rows, op="promotion", metric="uncontended_ns"),
              "tab:olive"),
             ("lock+unlock,\nblocks", one(rows, op="promotion", metric="blocked_ns"), "tab:brown"),
             ("promotion\n(difference)", one(rows, op="promotion", metric="ns"), "tab:red")]
    items = [i for i in items if i[1] is not None]
    if not items:
        return False
    f, ax = plt.subplots(figsize=(8, 4.5))
    rs = [i[1] for i in items]
    xs = range(len(items))
    ax.bar(xs, [r["median"] for r in rs], 0.6, yerr=err(rs), capsize=3,
           color=[i[2] for i in items])
    benchplot.label_medians(ax, xs, rs)
    ax.set_xticks(list(xs))
    ax.set_xticklabels([i[0] for i in items], fontsize=8)
    ax.set_ylabel("ns per message (receiver's polls)")
    ax.set_title(f"Optimistic handlers: cost per message, 2 ranks ({transport(rows)})")
    benchplot.save(plt, f, path)
    return True


def plot_scaling(plt, rows, op, path, what):
    rs_all = pick(rows, op=op)
    if not rs_all:
        return False
    metrics = ["seconds", "rate_Mops"]
    f, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, metric in zip(axes, metrics):
        for s in SYSTEMS[:3]:
            rs = sorted(pick(rs_all, system=s, metric=metric), key=lambda r: r["ranks"])
            if not rs:
                continue
            benchplot.errorbar(ax, [r["ranks"] for r in rs], rs, marker="o", color=COLOR[s],
                               label=LABEL[s])
        # A log time axis: TRPC is several times slower than the other two.
        benchplot.axes(ax, "ranks", {"seconds": "seconds (median, min-max)",
                                     "rate_Mops": "operations per µs (Mops)" if op == "dht"
                                     else "tree nodes per µs"}[metric],
                       xlog=2, ylog=metric == "seconds")
        ax.legend()
    f.suptitle(f"{what} ({transport(rs_all)})")
    benchplot.save(plt, f, path)
    return True


def summary(rows):
    """Markdown table of the goals of issue 16 against the medians."""
    out = ["| goal | measured (median) | met |", "|---|---|---|"]

    def ratio(system, op, ranks=2):
        r = one(rows, system=system, op=op, metric="time_ratio", ranks=ranks)
        return r["median"] if r else None

    def line(goal, value, ok):
        out.append(f"| {goal} | {value} | {'yes' if ok else 'no'} |")

    for op in ("null_rtt", "arg8_rtt"):
        v = ratio("rpc/am", op)
        if v is not None:
            line(f"{op}: RPC ≤ 1.2× hand-coded AM", f"{v:.2f}×", v <= 1.2)
        v = ratio("trpc/rpc", op)
        if v is not None:
            line(f"{op}: RPC ≥ 3× faster than TRPC", f"{v:.2f}×", v >= 3)
    d = one(rows, system="oam-plain", op="optimistic_noblock", metric="ns")
    if d:
        line("optimistic non-blocking ≤ 10 ns more than plain", f"{d['median']:.1f} ns",
             d["median"] <= 10)
    p = one(rows, op="promotion", metric="ns")
    if p:
        line("promotion ≤ 1 µs", f"{p['median']:.0f} ns", p["median"] <= 1000)
    for r in sorted(pick(rows, system="rpc/am", op="dht", metric="time_ratio"),
                    key=lambda r: r["ranks"]):
        line(f"dht {r['ranks']} ranks: RPC within 1.1× of AM", f"{r['median']:.2f}×",
             r["median"] <= 1.1)
    for r in sorted(pick(rows, system="trpc/rpc", op="dht", metric="time_ratio"),
                    key=lambda r: r["ranks"]):
        line(f"dht {r['ranks']} ranks: RPC ≥ 2× faster than TRPC", f"{r['median']:.2f}×",
             r["median"] >= 2)
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("inputs", nargs="+", help="JSON-lines files of rpc_bench ('-': stdin)")
    ap.add_argument("--out", default="docs/rpc_figures", help="directory of the PNGs")
    ap.add_argument("--summary", action="store_true", help="print the goals table")
    ap.add_argument("--expect", default="", help="figures that must be drawn (comma list)")
    a = ap.parse_args()
    rows = load(a.inputs)
    if a.summary:
        print(summary(rows))
    plt = benchplot.pyplot("plot_rpc")
    if plt is None:
        return 2
    os.makedirs(a.out, exist_ok=True)
    drawn = {}
    path = lambda name: os.path.join(a.out, f"{name}.png")  # noqa: E731
    for name in BARS:
        drawn[name] = plot_bars(plt, rows, path(name), name)
    drawn["optimistic"] = plot_optimistic(plt, rows, path("optimistic"))
    drawn["dht"] = plot_scaling(plt, rows, "dht", path("dht"),
                                "Distributed hash table: insert + find of 8 B keys")
    drawn["uts"] = plot_scaling(plt, rows, "uts", path("uts"),
                                "Unbalanced tree search (geometric tree)")
    return benchplot.expected("plot_rpc", a.expect, drawn, path)


if __name__ == "__main__":
    sys.exit(main())
