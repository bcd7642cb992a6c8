# SPDX-License-Identifier: MIT
"""The JSON lines of the programs in bench/, for the plot scripts and the benchmark report.

Every program prints one JSON object per line with the keys bench, system, transport, ranks,
op, bytes, metric, median, min, max, reps (bench/lib/report.hpp); other lines (tables,
notes, mpirun's chatter) are skipped by load(). Shared by plot_*.py, bench_report.py and
check_bench.py, whose smoke tests read the lines with strict(): there every line must be one.
"""
import json
import sys

# The keys of every program's lines and their types (report.hpp); a program may add its own.
KEYS = {"bench": str, "system": str, "transport": str, "ranks": int, "op": str, "bytes": int,
        "metric": str, "median": (int, float), "min": (int, float), "max": (int, float),
        "reps": int}


class Bad(Exception):
    """A check of the lines failed; the message names the line or figure and what is wrong."""


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


def strict(text, check=None):
    """The JSON objects of `text`, one every line (a program's whole stdout); a line that is
    not a JSON object raises Bad. check(row, line), when given, checks each one."""
    rows = []
    for line in text.splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            raise Bad(f"not a JSON line: {line!r}") from None
        if not isinstance(r, dict):
            raise Bad(f"not a JSON object: {line!r}")
        if check is not None:
            check(r, line)
        rows.append(r)
    return rows


def typed(r, keys, line):
    """Raises Bad unless row r has every key of `keys` (name: type or tuple of types) with its
    type; true and false are not ints here."""
    for k, t in keys.items():
        if k not in r or not isinstance(r[k], t) or isinstance(r[k], bool):
            raise Bad(f"key {k!r} missing or not {t}: {line}")
