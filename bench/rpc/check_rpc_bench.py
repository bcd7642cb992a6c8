#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The am.bench.rpc.quick test: runs `rpc_bench --quick` and checks that it exits 0 (it fails
when any result is wrong: an RPC or TRPC value, a dht find or entry count, a uts node count
against the sequential count, or an optimistic handler that did not block where it had to),
that it prints well-formed JSON lines with the keys of every bench/ program, and that every
op has its systems; then, when matplotlib can be imported, that bench/scripts/plot_rpc.py
draws every figure from those lines.

    check_rpc_bench.py RPC_BENCH PLOT_SCRIPT [rpc_bench options...]
"""
import json
import os
import subprocess
import sys
import tempfile

KEYS = {"bench": str, "system": str, "transport": str, "ranks": int, "op": str, "bytes": int,
        "metric": str, "median": (int, float), "min": (int, float), "max": (int, float),
        "reps": int}
OPS = ["null_rtt", "arg8_rtt", "async_rate", "optimistic_noblock", "promotion", "dht", "uts"]
SYSTEMS = ["am_rpc", "am_handcoded", "trpc", "plain_handler", "oam-plain", "rpc/am", "trpc/rpc"]
METRICS = ["latency_us", "rate_Mops", "ns", "seconds", "uncontended_ns", "blocked_ns",
           "time_ratio"]
# (op, metric): the systems that must be there.
NEED = {("null_rtt", "latency_us"): ["am_rpc", "am_handcoded", "trpc"],
        ("arg8_rtt", "latency_us"): ["am_rpc", "am_handcoded", "trpc"],
        ("async_rate", "rate_Mops"): ["am_rpc", "am_handcoded", "trpc"],
        ("optimistic_noblock", "ns"): ["am_rpc", "plain_handler", "oam-plain"],
        ("promotion", "ns"): ["am_rpc"],
        ("promotion", "blocked_ns"): ["am_rpc"],
        ("promotion", "uncontended_ns"): ["am_rpc"],
        ("dht", "seconds"): ["am_rpc", "am_handcoded", "trpc"],
        ("dht", "rate_Mops"): ["am_rpc", "am_handcoded", "trpc"],
        ("uts", "seconds"): ["am_rpc", "am_handcoded", "trpc"]}
FIGURES = ["rtt", "async_rate", "optimistic", "dht", "uts"]


def fail(msg):
    print(f"check_rpc_bench: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check_line(r, line):
    for k, t in KEYS.items():
        if k not in r or not isinstance(r[k], t) or isinstance(r[k], bool):
            fail(f"key {k!r} missing or not {t}: {line}")
    if set(r) != set(KEYS):
        fail(f"keys other than {sorted(KEYS)}: {line}")
    if r["bench"] != "rpc" or r["op"] not in OPS or r["system"] not in SYSTEMS:
        fail(f"bad bench/op/system: {line}")
    if r["metric"] not in METRICS or r["reps"] < 1 or r["ranks"] < 2:
        fail(f"bad metric/reps/ranks: {line}")
    # Differences (oam-plain, promotion's ns) may be negative on a noisy machine; ratios are
    # checked against the lines they divide (check_ratios); every measured figure is positive
    # and ordered.
    measured = r["metric"] not in ("time_ratio",) and r["system"] != "oam-plain" and not (
        r["op"] == "promotion" and r["metric"] == "ns")
    if measured and not (0 < r["min"] <= r["median"] <= r["max"]):
        fail(f"bad statistics: {line}")


def close(x, y):
    """Equal up to the JSON lines' 6 significant digits."""
    return abs(x - y) <= 1e-4 * max(abs(x), abs(y))


def check_ratios(rows):
    """Every time_ratio line (how many times longer num takes than den) against the lines it
    divides: median = ratio of the medians, min and max the ratio's range (report.hpp's
    ratio_of: num's min over den's max, num's max over den's min; for a rate, time = 1/rate).
    The old figures (ratio of the minima, ratio of the maxima) fail here."""
    parts = {"rpc/am": ("am_rpc", "am_handcoded"), "trpc/rpc": ("trpc", "am_rpc")}
    checked = 0
    for r in rows:
        if r["metric"] != "time_ratio":
            continue
        num_sys, den_sys = parts[r["system"]]
        metric = {"async_rate": "rate_Mops", "dht": "seconds", "uts": "seconds"}.get(
            r["op"], "latency_us")

        def find(system):
            for q in rows:
                if (q["system"], q["op"], q["metric"], q["ranks"]) == (
                        system, r["op"], metric, r["ranks"]):
                    return q
            fail(f"no {system} {metric} line for the ratio {r}")

        num, den = find(num_sys), find(den_sys)
        if metric == "rate_Mops":  # times are 1/rate: swap, and the lines' min/max with them
            want = (den["median"] / num["median"], den["min"] / num["max"],
                    den["max"] / num["min"])
        else:
            want = (num["median"] / den["median"], num["min"] / den["max"],
                    num["max"] / den["min"])
        got = (r["median"], r["min"], r["max"])
        if not all(close(g, w) for g, w in zip(got, want)):
            fail(f"ratio {r['system']} {r['op']} (ranks {r['ranks']}): median/min/max {got}, "
                 f"want {want}")
        if not r["min"] <= r["median"] <= r["max"]:
            fail(f"ratio outside its own range: {r}")
        checked += 1
    if checked == 0:
        fail("no time_ratio lines")


def main():
    if len(sys.argv) < 3:
        fail("usage: check_rpc_bench.py RPC_BENCH PLOT_SCRIPT [options]")
    bench, plot, opts = sys.argv[1], sys.argv[2], sys.argv[3:]
    p = subprocess.run([bench, "--quick"] + opts, capture_output=True, text=True, timeout=170)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        fail(f"rpc_bench exited with {p.returncode}")
    rows = []
    for line in p.stdout.splitlines():
        try:
            r = json.loads(line)
        except json.JSONDecodeError:
            fail(f"not a JSON line: {line!r}")
        if not isinstance(r, dict):
            fail(f"not a JSON object: {line!r}")
        check_line(r, line)
        rows.append(r)
    for (op, metric), systems in NEED.items():
        for s in systems:
            if not any(r["op"] == op and r["metric"] == metric and r["system"] == s for r in rows):
                fail(f"no {s} line for {op} {metric}")
    if {r["ranks"] for r in rows if r["op"] == "dht"} != {2, 4}:
        fail("--quick runs dht on 2 and 4 ranks")
    for op in ("null_rtt", "arg8_rtt", "async_rate", "dht", "uts"):
        for s in ("rpc/am", "trpc/rpc"):
            if not any(r["op"] == op and r["system"] == s for r in rows):
                fail(f"no {s} ratio for {op}")
    check_ratios(rows)
    print(f"check_rpc_bench: {len(rows)} well-formed lines, every op and system present, "
          "every ratio's min-max its range")

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if os.environ.get("AM_REQUIRE_ALL_TESTS") == "1":  # CI: a skip is a failure
            fail("matplotlib is not installed (python3-matplotlib): plots not checked")
        print("check_rpc_bench: matplotlib not installed: plots not checked")
        return 0
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "rpc.json")
        with open(data, "w") as f:
            f.write(p.stdout)
        out = os.path.join(d, "png")
        q = subprocess.run([sys.executable, plot, data, "--out", out, "--expect",
                            ",".join(FIGURES)], capture_output=True, text=True, timeout=120)
        sys.stderr.write(q.stderr)
        if q.returncode != 0:
            fail(f"plot_rpc.py exited with {q.returncode}")
        for fig in FIGURES:
            with open(os.path.join(out, f"{fig}.png"), "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail(f"{fig}.png is not a PNG")
    print("check_rpc_bench: every figure drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
