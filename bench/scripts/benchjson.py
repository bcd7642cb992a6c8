# SPDX-License-Identifier: MIT
"""The JSON lines of the programs in bench/, for the plot scripts and the benchmark report.

Every program prints one JSON object per line with the keys bench, system, transport, ranks,
op, bytes, metric, median, min, max, reps (bench/common/report.hpp); other lines (tables,
notes, mpirun's chatter) are skipped. Shared by plot_*.py and bench_report.py.
"""
import json
import sys


def load(paths, bench=None):
    """Every JSON object (a dict) of the files `paths` ("-": stdin), in order; only those whose
    "bench" is `bench` (a name or a collection of names) when it is given."""
    if isinstance(bench, str):
        bench = {bench}
    rows = []
    for path in paths:
        with (sys.stdin if path == "-" else open(path)) as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue
                try:
                    r = json.loads(line)
                except json.JSONDecodeError:
                    continue
                if isinstance(r, dict) and (bench is None or r.get("bench") in bench):
                    rows.append(r)
    return rows


def pick(rows, **kw):
    """The rows whose keys equal every given value (pick(rows, system="am", op="short"))."""
    return [r for r in rows if all(r.get(k) == v for k, v in kw.items())]


def one(rows, **kw):
    """The first row that pick() would return, or None."""
    rs = pick(rows, **kw)
    return rs[0] if rs else None


def err(rs):
    """matplotlib's yerr for rows: the distance from each median down to min and up to max."""
    return [[r["median"] - r["min"] for r in rs], [r["max"] - r["median"] for r in rs]]
