#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Draws the window_bench figures (the paper's Fig. 3-7) as PNGs from its JSON lines, and
prints the medians and the goal ratios as Markdown tables.

    window_bench ... > window.json
    plot_window.py window.json --out docs/window_figures [--summary] [--expect 3a,3b,...]
                   [--suffix -threads]

One PNG per figure present in the input: fig3a.png ... fig7.png (fig5-threads.png with
--suffix -threads). Lines that are not JSON
objects with "bench": "window" are ignored. Exit status 1 when a figure named by --expect has
no data or its PNG was not written; 2 when matplotlib is missing (and PNGs were asked for).
"""
import argparse
import os
import sys
from collections import defaultdict

import benchjson  # bench/scripts/benchjson.py: the shared JSON-lines loader
import benchplot  # bench/scripts/benchplot.py: what the plot scripts draw alike
from benchjson import err

FIGURES = ["3a", "3b", "3c", "3d", "4", "5", "6", "7"]
BASELINES = ["mpi_rma", "mpi_twosided", "mpi_shm"]
STYLE = {"mpi_rma": ("tab:red", "--"), "mpi_twosided": ("tab:purple", ":"),
         "mpi_shm": ("tab:brown", "-.")}
OPS = ("search", "abssum")  # the window AMs; Fig. 3a/3c also have reference round-trip lines


def roundtrip(rows, op):
    """Median of the round-trip line `op` (msg_roundtrip, am_medium_roundtrip, ...) or None."""
    for r in rows:
        if r["system"] == "am" and r["op"] == op:
            return r["median"]
    return None


def load(paths):
    return benchjson.load(paths, "window")


def by_fig(rows):
    d = defaultdict(list)
    for r in rows:
        d[r["figure"]].append(r)
    return d


def am_rows(rows, **kw):
    out = [r for r in rows if r["system"] == "am" and r["op"] in OPS
           and all(r.get(k) == v for k, v in kw.items())]
    return sorted(out, key=lambda r: (r.get("pipeline_unit") or 0, r.get("internal_buffer") or 0,
                                      r["ranks"]))


def base(rows, system, **kw):
    return [r for r in rows if r["system"] == system and all(r.get(k) == v for k, v in kw.items())]


def hlines(ax, rows, metric, note="median"):
    for s in BASELINES:
        for r in base(rows, s, metric=metric):
            c, ls = STYLE[s]
            ax.axhline(r["median"], color=c, ls=ls, label=f"{s} ({note})")
            break


def title(r, text):
    return f"Fig. {r['figure']}: {text} ({r['transport']}, {r['ranks']} ranks)"


def plot_latency(plt, rows, fig, path):
    f, ax = plt.subplots(figsize=(7, 4.5))
    for epoch, marker in (("lock", "o"), ("flush", "s")):
        rs = am_rows(rows, epoch=epoch)
        if not rs:
            continue
        x = [r["pipeline_unit"] for r in rs]
        benchplot.errorbar(ax, x, rs, marker=marker, label=f"am latency ({epoch} epoch)")
        if epoch == "lock":
            ax.plot(x, [r["function_us"] for r in rs], marker="^", color="tab:green",
                    label="function call time")
            ref = [r["function_us"] + r["roundtrip_us"] for r in rs]
            ax.plot(x, ref, color="tab:gray", ls="-.",
                    label="function + msg-layer round trip (send/recv)")
            if all(r.get("am_roundtrip_us") for r in rs):
                ref = [r["function_us"] + r["am_roundtrip_us"] for r in rs]
                ax.plot(x, ref, color="black", ls="--",
                        label="function + raw AM round trip (medium/long, faster)")
    hlines(ax, rows, "latency_us")
    op = am_rows(rows)[0]["op"] if am_rows(rows) else rows[0]["op"]
    benchplot.axes(ax, "pipeline unit (segments)", "µs per AM (100 segments)", xlog=10)
    ax.set_title(title(am_rows(rows)[0] if am_rows(rows) else rows[0], f"{op}, latency of one AM"))
    ax.legend(fontsize=8)
    benchplot.save(plt, f, path)


def plot_throughput_units(plt, rows, fig, path):
    f, ax = plt.subplots(figsize=(7, 4.5))
    rs = am_rows(rows)
    x = [r["pipeline_unit"] for r in rs]
    if rs:
        benchplot.errorbar(ax, x, rs, marker="o", label="am throughput")
    hlines(ax, rows, "throughput_amps")
    # A log y axis: the am points span three orders of magnitude.
    benchplot.axes(ax, "pipeline unit (segments)", "AMs per second (log)", xlog=10, ylog=True)
    if rs:
        ax2 = ax.twinx()
        share = [100.0 * r["segments_user"] / max(1, r["segments_user"] + r["segments_internal"])
                 for r in rs]
        ax2.plot(x, share, color="tab:orange", marker="x", ls="--",
                 label="segments in user (attached) buffer, %")
        ax2.plot(x, [100 - s for s in share], color="tab:olive", marker="+", ls="--",
                 label="segments in internal buffer, %")
        ax2.set_ylabel("share of segments (%)")
        ax2.set_ylim(0, 105)
        h1, l1 = ax.get_legend_handles_labels()
        h2, l2 = ax2.get_legend_handles_labels()
        ax.legend(h1 + h2, l1 + l2, fontsize=7, loc="center right")
    ref = rs[0] if rs else rows[0]
    ax.set_title(title(ref, f"{ref['op']}, {ref['ams']} AMs per epoch"), fontsize=10)
    benchplot.save(plt, f, path)


def plot_buffers(plt, rows, fig, path, extra):
    f, ax = plt.subplots(figsize=(7, 4.5))
    rs = am_rows(rows)
    if rs:
        benchplot.errorbar(ax, [r["internal_buffer"] / 1024 for r in rs], rs, marker="o",
                           label="am throughput")
    # The 2-rank search baselines of Fig. 3b: the same AMs, no internal buffer to vary.
    hlines(ax, extra, "throughput_amps", "median, from the Fig. 3b run")
    benchplot.axes(ax, "internal buffer per origin (KiB)", "AMs per second", xlog=2, zero=True)
    ax.legend(fontsize=8)
    ref = rs[0] if rs else rows[0]
    ax.set_title(title(ref, f"search, pipeline unit {ref.get('pipeline_unit')}"))
    benchplot.save(plt, f, path)


def plot_many_origins(plt, rows, fig, path):
    f, ax = plt.subplots(figsize=(7, 4.5))
    rs = am_rows(rows)
    for b in sorted({r["internal_buffer"] for r in rs}):
        s = sorted([r for r in rs if r["internal_buffer"] == b], key=lambda r: r["ranks"])
        benchplot.errorbar(ax, [r["ranks"] - 1 for r in s], s, marker="o",
                           label=f"am, internal buffer {b // 1024} KiB")
    for sys_ in BASELINES:
        s = sorted(base(rows, sys_), key=lambda r: r["ranks"])
        if s:
            c, ls = STYLE[sys_]
            ax.plot([r["ranks"] - 1 for r in s], [r["median"] for r in s], color=c, ls=ls,
                    marker=".", label=sys_)
    benchplot.axes(ax, "origins (one target)", "AMs per second (all origins)", xlog=2,
                   zero=True)
    ax.legend(fontsize=8)
    ref = rs[0] if rs else rows[0]
    ax.set_title(f"Fig. 5: search, many origins on one target ({ref['transport']})")
    benchplot.save(plt, f, path)


def plot_ordering(plt, rows, fig, path):
    f, ax = plt.subplots(figsize=(6, 4.5))
    bars = [(f"am, {r['ordering']}", r) for r in am_rows(rows)]
    bars += [(s, r) for s in BASELINES for r in base(rows, s)]
    labels, rs = [b[0] for b in bars], [b[1] for b in bars]
    vals = [r["median"] for r in rs]
    ax.bar(range(len(vals)), vals, yerr=err(rs), capsize=4,
           color=["tab:blue", "tab:cyan", "tab:red", "tab:purple", "tab:brown"][: len(vals)])
    ax.set_xticks(range(len(vals)))
    ax.set_xticklabels(labels, fontsize=8, rotation=10)
    ax.set_ylabel("AMs per second")
    cyc = rows[0].get("segments_cycle", "")
    ax.set_title(f"Fig. 6: ordering, alternating AMs of {cyc} segments ({rows[0]['transport']})")
    ax.grid(alpha=0.3, axis="y")
    benchplot.save(plt, f, path)


def plot_concurrency(plt, rows, fig, path):
    f, ax = plt.subplots(figsize=(7, 4.5))
    for op in sorted({r["op"] for r in rows}):
        for c, marker in ((0, "o"), (1, "s")):
            s = sorted(am_rows(rows, op=op, concurrent=c), key=lambda r: r["ranks"])
            if s:
                benchplot.errorbar(ax, [r["ranks"] for r in s], s, marker=marker,
                                   label=f"am {op}, concurrency {'on' if c else 'off'}")
        for sys_ in BASELINES:
            s = sorted(base(rows, sys_, op=op), key=lambda r: r["ranks"])
            if s:
                col, ls = STYLE[sys_]
                benchplot.errorbar(ax, [r["ranks"] for r in s], s, color=col, ls=ls, marker=".",
                                   capsize=2, label=f"{sys_} {op}")
    benchplot.axes(ax, "ranks (every rank issues AMs to rank 0)", "AMs per second (all ranks)",
                   xlog=2, zero=True)
    ax.legend(fontsize=8)
    t = am_rows(rows)[0]["transport"] if am_rows(rows) else rows[0]["transport"]
    ax.set_title(f"Fig. 7: concurrent AMs with origin-side execution ({t})")
    benchplot.save(plt, f, path)


# ---------------------------------------------------------------------------- summary


def fmt(v):
    if v is None:
        return "–"
    if isinstance(v, str):
        return v
    if v >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def best_baseline(rows, metric, **kw):
    b = [r for s in BASELINES for r in base(rows, s, metric=metric, **kw)]
    if not b:
        return None
    return (min if metric == "latency_us" else max)(b, key=lambda r: r["median"])


def summary(figs):
    out = []
    for fig in FIGURES:
        rows = figs.get(fig)
        if not rows:
            continue
        out.append(f"\n#### Fig. {fig}\n")
        out.append("| system | transport | ranks | op | unit | internal | ordering | concurrent "
                   "| metric | median | min | max | extra |")
        out.append("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in rows:
            extra = []
            for k in ("epoch", "function_us", "roundtrip_us", "am_roundtrip_us", "segments_internal",
                      "segments_user", "units_at_origin", "overtaken"):
                if r.get(k) is not None:
                    extra.append(f"{k}={fmt(r[k])}")
            out.append(
                f"| {r['system']} | {r['transport']} | {r['ranks']} | {r['op']} | "
                f"{r.get('pipeline_unit') if r.get('pipeline_unit') is not None else '–'} | "
                f"{r.get('internal_buffer') if r.get('internal_buffer') is not None else '–'} | "
                f"{r.get('ordering') or '–'} | "
                f"{r.get('concurrent') if r.get('concurrent') is not None else '–'} | "
                f"{r['metric']} | {fmt(r['median'])} | {fmt(r['min'])} | {fmt(r['max'])} | "
                f"{' '.join(extra)} |")
        out.extend(ratios(fig, rows))
    return "\n".join(out)


def ratios(fig, rows):
    out = []
    if fig in ("3a", "3c"):
        med, lng = roundtrip(rows, "am_medium_roundtrip"), roundtrip(rows, "am_long_roundtrip")
        msg = roundtrip(rows, "msg_roundtrip")
        if med and lng and msg:
            out.append(f"- round trips of the AM's bytes: msg layer {fmt(msg)} µs, raw medium AM "
                       f"{fmt(med)} µs, raw long AM {fmt(lng)} µs")
        for r in am_rows(rows, epoch="lock") + am_rows(rows, epoch="flush"):
            line = f"- unit {r['pipeline_unit']} ({r['epoch']}): am / (function + "
            if r.get("am_roundtrip_us"):
                raw = r["function_us"] + r["am_roundtrip_us"]
                line += f"raw AM round trip) = {r['median'] / raw:.2f} (goal ≤ 1.5); "
            msg_ref = r["function_us"] + r["roundtrip_us"]
            out.append(line + f"am / (function + msg round trip) = {r['median'] / msg_ref:.2f}")
        b = best_baseline(rows, "latency_us")
        if b:
            best = min(am_rows(rows), key=lambda r: r["median"])
            out.append(f"- best am latency {fmt(best['median'])} µs (unit "
                       f"{best['pipeline_unit']}, {best['epoch']}) vs best MPI "
                       f"{b['system']} {fmt(b['median'])} µs: am/MPI = "
                       f"{best['median'] / b['median']:.2f}")
    if fig in ("3b", "3d"):
        b = best_baseline(rows, "throughput_amps")
        rs = am_rows(rows)
        if b and rs:
            best = max(rs, key=lambda r: r["median"])
            out.append(f"- best am throughput {fmt(best['median'])} AMs/s (unit "
                       f"{best['pipeline_unit']}) / best MPI ({b['system']}) "
                       f"{fmt(b['median'])} = {best['median'] / b['median']:.2f} (goal ≥ 2)")
    if fig == "6":
        s = am_rows(rows, ordering="sameop,diffop,sameam")
        n = am_rows(rows, ordering="none")
        if s and n:
            out.append(f"- relaxed / strict = {n[0]['median'] / s[0]['median']:.2f} "
                       "(goal ≥ 1.25; paper ≈ 1.25)")
    if fig == "7":
        for op in sorted({r["op"] for r in rows}):
            for ranks in sorted({r["ranks"] for r in rows if r["system"] == "am"}):
                off = am_rows(rows, op=op, ranks=ranks, concurrent=0)
                on = am_rows(rows, op=op, ranks=ranks, concurrent=1)
                if off and on:
                    out.append(f"- {op}, {ranks} ranks: concurrency on / off = "
                               f"{on[0]['median'] / off[0]['median']:.2f} (goal ≥ 1.8 on 2 "
                               "cores; paper up to 9 at 16 ranks on 16 cores)")
                for sys_ in BASELINES:
                    b = base(rows, sys_, op=op, ranks=ranks)
                    if on and b:
                        out.append(f"  - am on / {sys_} = {on[0]['median'] / b[0]['median']:.2f}")
    if fig == "5":
        for ranks in sorted({r["ranks"] for r in rows if r["system"] == "am"}):
            rs = am_rows(rows, ranks=ranks)
            if len(rs) > 1:
                hi = max(rs, key=lambda r: r["median"])
                lo = min(rs, key=lambda r: r["median"])
                out.append(f"- {ranks} ranks: best/worst internal buffer = "
                           f"{hi['median'] / lo['median']:.2f} ({hi['internal_buffer']} vs "
                           f"{lo['internal_buffer']} B; paper up to 1.7)")
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("inputs", nargs="+", help="files of window_bench JSON lines ('-': stdin)")
    ap.add_argument("--out", help="directory for the PNGs (none: no plots)")
    ap.add_argument("--summary", action="store_true", help="print Markdown tables and ratios")
    ap.add_argument("--expect", default="", help="figures that must be drawn, e.g. 3a,3b,4")
    ap.add_argument("--suffix", default="", help="appended to the PNG names (fig5-threads.png)")
    a = ap.parse_args()
    figs = by_fig(load(a.inputs))
    status = 0
    if a.summary:
        print(summary(figs))
    if a.out:
        plt = benchplot.pyplot("plot_window.py")
        if plt is None:
            return 2
        os.makedirs(a.out, exist_ok=True)
        for fig, rows in figs.items():
            path = os.path.join(a.out, f"fig{fig}{a.suffix}.png")
            if fig in ("3a", "3c"):
                plot_latency(plt, rows, fig, path)
            elif fig in ("3b", "3d"):
                plot_throughput_units(plt, rows, fig, path)
            elif fig == "4":
                plot_buffers(plt, rows, fig, path, figs.get("3b", []))
            elif fig == "5":
                plot_many_origins(plt, rows, fig, path)
            elif fig == "6":
                plot_ordering(plt, rows, fig, path)
            elif fig == "7":
                plot_concurrency(plt, rows, fig, path)
    for fig in [f for f in a.expect.split(",") if f]:
        if fig not in figs:
            print(f"plot_window.py: no data for figure {fig}", file=sys.stderr)
            status = 1
        elif a.out:
            png = os.path.join(a.out, f"fig{fig}{a.suffix}.png")
            if not os.path.exists(png) or os.path.getsize(png) == 0:
                print(f"plot_window.py: {png} was not written", file=sys.stderr)
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(main())
