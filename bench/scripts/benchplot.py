# SPDX-License-Identifier: MIT
"""What the plot scripts of bench/ (plot_*.py) draw alike with matplotlib: loading pyplot,
medians with min-max whiskers, the axes' labels and scales, saving a figure, and the exit
status of --expect. Rows are the JSON objects of benchjson.py.
"""
import os
import sys

from benchjson import err


def pyplot(script):
    """matplotlib.pyplot on the Agg backend; None, said on stderr, when matplotlib is missing
    (the script then exits 2)."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"{script}: matplotlib is not installed (Debian: python3-matplotlib)",
              file=sys.stderr)
        return None
    return plt


def errorbar(ax, xs, rs, **kw):
    """The medians of rows rs at xs, whiskers from min to max."""
    kw.setdefault("capsize", 3)
    ax.errorbar(xs, [r["median"] for r in rs], yerr=err(rs), **kw)


def label_medians(ax, xs, rs):
    """Each median written above its bar."""
    for x, r in zip(xs, rs):
        ax.annotate(f"{r['median']:.3g}", (x, r["median"]), ha="center", va="bottom", fontsize=8,
                    xytext=(0, 2), textcoords="offset points")


def axes(ax, xlabel, ylabel, xlog=None, ylog=False, zero=False, which="major"):
    """Axis labels, a log x axis of base xlog, a log y axis, y from 0, a light grid."""
    if xlog:
        ax.set_xscale("log", base=xlog)
    if ylog:
        ax.set_yscale("log")
    ax.set_xlabel(xlabel)
    ax.set_ylabel(ylabel)
    if zero:
        ax.set_ylim(bottom=0)
    ax.grid(alpha=0.3, which=which)


def save(plt, f, path, dpi=110):
    f.tight_layout()
    f.savefig(path, dpi=dpi)
    plt.close(f)


def expected(script, expect, drawn, path):
    """Says what it wrote (drawn: figure -> drawn, path(figure) its PNG); 1, said on stderr,
    when a figure of the comma list `expect` was not drawn or written, else 0."""
    for name, ok in drawn.items():
        if ok:
            print(f"{script}: wrote {path(name)}")
    missing = [f for f in expect.split(",") if f and not (drawn.get(f) and
                                                          os.path.exists(path(f)))]
    if missing:
        print(f"{script}: no figure for {', '.join(missing)}", file=sys.stderr)
        return 1
    return 0
