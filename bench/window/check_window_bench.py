#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The am.bench.window.quick test: runs `window_bench --quick` and checks that it prints
well-formed JSON lines for every figure (the issue's keys and types, the am lines with their
extra keys, the reference round trips of Fig. 3a/3c, the MPI baselines unless --no-baseline,
with the shared-memory window baseline of Fig. 7), and, when matplotlib can be imported,
that bench/scripts/plot_window.py draws every figure's PNG from those lines.

    check_window_bench.py WINDOW_BENCH PLOT_SCRIPT [window_bench options...]
"""
import json
import os
import subprocess
import sys
import tempfile

FIGURES = ["3a", "3b", "3c", "3d", "4", "5", "6", "7"]
WITH_BASELINE = ["3a", "3b", "3c", "3d", "5", "6", "7"]
COMMON = {"bench": str, "figure": str, "system": str, "transport": str, "ranks": int, "op": str,
          "bytes": int, "metric": str, "median": (int, float), "min": (int, float),
          "max": (int, float), "reps": int}
EXTRA = ["pipeline_unit", "internal_buffer", "ordering", "concurrent"]
ROUNDTRIPS = ["msg_roundtrip", "am_medium_roundtrip", "am_long_roundtrip"]


def fail(msg):
    print(f"check_window_bench: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check_line(r, line):
    for k, t in COMMON.items():
        if k not in r or not isinstance(r[k], t) or isinstance(r[k], bool):
            fail(f"key {k!r} missing or not {t}: {line}")
    for k in EXTRA:
        if k not in r:
            fail(f"key {k!r} missing: {line}")
    if r["bench"] != "window" or r["figure"] not in FIGURES:
        fail(f"bad bench/figure: {line}")
    if r["system"] not in ("am", "mpi_rma", "mpi_twosided", "mpi_shm"):
        fail(f"bad system: {line}")
    if r["op"] in ROUNDTRIPS:
        if (r["system"] != "am" or r["figure"] not in ("3a", "3c") or r["metric"] != "latency_us"
                or r.get("sizes_of") not in ("search", "abssum")
                or not r.get("out_bytes", 0) > 0):
            fail(f"bad round-trip line: {line}")
        if not (0 < r["min"] <= r["median"] <= r["max"]) or r["reps"] < 1:
            fail(f"bad statistics: {line}")
        return
    if r["op"] not in ("search", "abssum"):
        fail(f"bad op: {line}")
    if r["metric"] not in ("latency_us", "throughput_amps"):
        fail(f"bad metric: {line}")
    if not (0 < r["min"] <= r["median"] <= r["max"]) or r["reps"] < 1:
        fail(f"bad statistics: {line}")
    if r["system"] == "am":
        if not isinstance(r["pipeline_unit"], int) or not isinstance(r["internal_buffer"], int):
            fail(f"am line without pipeline_unit/internal_buffer: {line}")
        if r["ordering"] not in ("sameop,diffop,sameam", "none") or r["concurrent"] not in (0, 1):
            fail(f"am line with bad ordering/concurrent: {line}")
        if r["metric"] == "latency_us":
            for k in ("function_us", "roundtrip_us", "am_roundtrip_us", "epoch"):
                if k not in r:
                    fail(f"latency line without {k}: {line}")
            if not (r["function_us"] > 0 and r["roundtrip_us"] > 0 and r["am_roundtrip_us"] > 0):
                fail(f"latency line with bad reference times: {line}")
        else:
            for k in ("segments_internal", "segments_user", "units_at_origin"):
                if not isinstance(r.get(k), int):
                    fail(f"throughput line without {k}: {line}")


def main():
    if len(sys.argv) < 3:
        fail("usage: check_window_bench.py WINDOW_BENCH PLOT_SCRIPT [options]")
    bench, plot, opts = sys.argv[1], sys.argv[2], sys.argv[3:]
    p = subprocess.run([bench, "--quick"] + opts, capture_output=True, text=True, timeout=300)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        fail(f"window_bench exited with {p.returncode}")
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
    baseline = "--no-baseline" not in opts
    for fig in ("3a", "3c"):
        rt = {r["op"]: r for r in rows if r["figure"] == fig and r["op"] in ROUNDTRIPS}
        if sorted(rt) != sorted(ROUNDTRIPS):
            fail(f"figure {fig}: round-trip lines {sorted(rt)}, want {ROUNDTRIPS}")
        raw = min(rt["am_medium_roundtrip"]["median"], rt["am_long_roundtrip"]["median"])
        for r in rows:
            if r["figure"] == fig and r["op"] not in ROUNDTRIPS and r["system"] == "am":
                if r["am_roundtrip_us"] != raw or r["roundtrip_us"] != rt["msg_roundtrip"]["median"]:
                    fail(f"figure {fig}: a latency line's reference is not its round-trip lines'")
    for fig in FIGURES:
        am = [r for r in rows if r["figure"] == fig and r["system"] == "am"]
        if not am:
            fail(f"no am line for figure {fig}")
        if baseline and fig in WITH_BASELINE:
            for s in ("mpi_rma", "mpi_twosided"):
                if not any(r["figure"] == fig and r["system"] == s for r in rows):
                    fail(f"no {s} line for figure {fig}")
    if {r["ordering"] for r in rows if r["figure"] == "6" and r["system"] == "am"} != {
            "sameop,diffop,sameam", "none"}:
        fail("figure 6 needs strict and relaxed lines")
    if baseline and not any(r["figure"] == "7" and r["system"] == "mpi_shm" for r in rows):
        fail("no mpi_shm line for figure 7")
    if {r["concurrent"] for r in rows if r["figure"] == "7" and r["system"] == "am"} != {0, 1}:
        fail("figure 7 needs concurrency off and on")
    on = [r for r in rows if r["figure"] == "7" and r["system"] == "am" and r["concurrent"] == 1]
    if any(r.get("mapped") == 1 and r["units_at_origin"] == 0 for r in on):
        fail("figure 7: concurrent epoch on a mapped window ran no unit at the origin")
    print(f"check_window_bench: {len(rows)} well-formed lines, every figure present")

    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if os.environ.get("AM_REQUIRE_ALL_TESTS") == "1":  # CI: a skip is a failure
            fail("matplotlib is not installed (python3-matplotlib): plots not checked")
        print("check_window_bench: matplotlib not installed: plots not checked")
        return 0
    with tempfile.TemporaryDirectory() as d:
        data = os.path.join(d, "window.json")
        with open(data, "w") as f:
            f.write(p.stdout)
        out = os.path.join(d, "png")
        q = subprocess.run([sys.executable, plot, data, "--out", out, "--expect",
                            ",".join(FIGURES)], capture_output=True, text=True, timeout=300)
        sys.stderr.write(q.stderr)
        if q.returncode != 0:
            fail(f"plot_window.py exited with {q.returncode}")
        for fig in FIGURES:
            with open(os.path.join(out, f"fig{fig}.png"), "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail(f"fig{fig}.png is not a PNG")
    print("check_window_bench: every figure drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
