#!/usr/bin/env python3
"""Renders a timeline of an am trace (AM_TRACE=path) to PNG with matplotlib.

    scripts/trace_timeline.py TRACE --out PNG [--epoch N | --window FROM,TO] [--list]

One row per rank and thread (the trace's tracks). Handler runs, waits (coloured by cause),
epochs and their detector rounds, RMA operations are bars; sends are ticks. --epoch N shows
epoch N (from its earliest begin to its latest end over the ranks); --window FROM,TO a span in
milliseconds from the trace's zero; neither: the whole trace. --list prints the epochs.

Needs matplotlib: on Debian `apt-get install python3-matplotlib` and run it with
/usr/bin/python3 when the python3 on PATH has no matplotlib.
"""
import argparse
import json
import sys
from collections import defaultdict

WAIT_COLOURS = {
    "credits": "#d62728",
    "barrier": "#9467bd",
    "quiesce": "#8c564b",
    "epoch end": "#ff7f0e",
    "reply": "#e377c2",
}


def load(path):
    with open(path) as f:
        return json.load(f)["traceEvents"]


def epochs_of(events):
    spans = defaultdict(list)
    for e in events:
        if e.get("cat") == "epoch" and e["name"] != "detector round":
            spans[e["args"]["epoch"]].append((e["ts"], e["ts"] + e["dur"]))
    return {n: (min(s for s, _ in v), max(t for _, t in v)) for n, v in sorted(spans.items())}


def lanes(e):
    """Sub-row of an event inside its track: epochs above, waits, then handlers and RMA."""
    cat = e.get("cat")
    if cat == "epoch":
        return 0 if e["name"] != "detector round" else 1
    if cat == "wait":
        return 2
    return 3


def colour(e):
    cat = e.get("cat")
    if cat == "wait":
        return WAIT_COLOURS.get(e["args"].get("cause"), "#7f7f7f")
    if cat == "epoch":
        return "#2ca02c" if e["name"] != "detector round" else "#98df8a"
    if cat == "rma":
        return "#17becf"
    return "#1f77b4"  # handler runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--out", help="PNG to write")
    ap.add_argument("--epoch", type=int)
    ap.add_argument("--window", help="FROM,TO in milliseconds")
    ap.add_argument("--list", action="store_true", help="print the epochs and exit")
    ap.add_argument("--title", default=None)
    a = ap.parse_args()
    events = load(a.trace)
    epochs = epochs_of(events)
    if a.list:
        for n, (s, t) in epochs.items():
            print(f"epoch {n}: {s / 1000:.3f} ms .. {t / 1000:.3f} ms ({(t - s) / 1000:.3f} ms)")
        return 0
    if not a.out:
        ap.error("--out is required (or --list)")
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.patches import Patch

    lo, hi = None, None
    if a.epoch is not None:
        if a.epoch not in epochs:
            sys.exit(f"trace_timeline: no epoch {a.epoch} (epochs: {list(epochs)})")
        lo, hi = epochs[a.epoch]
    elif a.window:
        f, t = (float(x) * 1000 for x in a.window.split(","))
        lo, hi = f, t
    timed = [e for e in events if e.get("ph") in ("X", "i")]
    if lo is None:
        lo = min(e["ts"] for e in timed)
        hi = max(e["ts"] + e.get("dur", 0) for e in timed)
    names = {}
    for e in events:
        if e.get("ph") == "M" and e["name"] == "thread_name":
            names[(e["pid"], e["tid"])] = e["args"]["name"]
    inside = [e for e in timed if e["ts"] <= hi and e["ts"] + e.get("dur", 0) >= lo]
    tracks = sorted({(e["pid"], e["tid"]) for e in inside})
    row = {t: i for i, t in enumerate(tracks)}
    fig, ax = plt.subplots(figsize=(12, 1.2 + 1.0 * len(tracks)))
    bars = defaultdict(list)  # (y, height, colour) -> [(start, width)]
    sends = defaultdict(list)
    counts = defaultdict(int)
    for e in inside:
        y0 = row[(e["pid"], e["tid"])]
        counts[e.get("cat")] += 1
        if e["ph"] == "i":
            sends[y0].append((e["ts"] - lo) / 1000)
            continue
        sub = lanes(e)
        start = max(e["ts"], lo)
        end = min(e["ts"] + e["dur"], hi)
        key = (y0 + 0.05 + sub * 0.2, 0.18, colour(e))
        bars[key].append(((start - lo) / 1000, max((end - start) / 1000, 1e-4)))
    for (y, h, c), spans in bars.items():
        ax.broken_barh(spans, (y, h), facecolors=c, edgecolor="none")
    for y0, xs in sends.items():
        ax.vlines(xs, y0 + 0.85, y0 + 0.97, colors="#000000", linewidth=0.3)
    ax.set_yticks([i + 0.5 for i in range(len(tracks))])
    ax.set_yticklabels([names.get(t, f"pid {t[0]} tid {t[1]}") for t in tracks])
    ax.set_ylim(len(tracks), 0)
    ax.set_xlim(0, (hi - lo) / 1000)
    ax.set_xlabel(f"ms from {lo / 1000:.3f} ms")
    title = a.title or (f"epoch {a.epoch}" if a.epoch is not None else a.trace)
    ax.set_title(
        f"{title}: {counts['handler']} handler runs, {counts['send']} sends, "
        f"{counts['wait']} waits, {counts['epoch']} epoch events"
    )
    legend = [
        Patch(color="#2ca02c", label="epoch"),
        Patch(color="#98df8a", label="detector round"),
        Patch(color="#1f77b4", label="handler run"),
        Patch(color="#17becf", label="RMA"),
    ] + [Patch(color=c, label=f"wait: {k}") for k, c in WAIT_COLOURS.items()]
    legend.append(Patch(color="#000000", label="send (tick)"))
    ax.legend(handles=legend, loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=5, fontsize=8)
    fig.tight_layout()
    fig.savefig(a.out, dpi=110)
    print(f"trace_timeline: wrote {a.out} ({len(inside)} events, {len(tracks)} tracks)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
