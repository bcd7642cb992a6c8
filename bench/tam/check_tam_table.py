#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The am.bench.tam.quick test: runs tam_table (under valgrind's callgrind) on small arguments
of a few programs and checks that it exits 0 (it fails when a result differs from the
sequential reference or a valgrind run fails), that every line is a well-formed JSON line with
the keys of every bench/ program plus "arg" and "cache", that every program has every metric
for md, am, md/am and the reference, that the figures agree with each other (TPQ = threads /
quanta, IPT x threads = instructions, cycles = instructions + misses x cost, the ratios are
quotients of the cycles), that callgrind counted only am::tam::run (fewer instructions than a
run of the whole worker), and that tam_table exits 2 naming valgrind when it is missing; that
`--check --enabled` (the layer's enabled variant, no valgrind) gives correct results, MD the
same TPQ as without it and AM a larger TPQ on wavefront 40; then, when matplotlib can be
imported, that bench/scripts/plot_tam.py draws both PNGs.

    check_tam_table.py TAM_TABLE PLOT_SCRIPT [--valgrind PATH] [--programs a,b] [--arg N]
                       [--reps N (1 or 2)]
"""
import argparse
import json
import math
import os
import subprocess
import sys
import tempfile

KEYS = {"bench": str, "system": str, "transport": str, "ranks": int, "op": str, "bytes": int,
        "metric": str, "median": (int, float), "min": (int, float), "max": (int, float),
        "reps": int, "arg": int, "cache": str}
SYSTEMS = {"md", "am", "md/am", "seq", "paper_md", "paper_am", "paper_md/am"}
PROGRAMS = {"mmt", "qs", "dtw", "paraffins", "wavefront", "ss"}
PER_POLICY = ["correct", "tpq", "ipt", "ipq", "threads", "quanta", "inlets", "messages",
              "instructions", "overhead_vs_seq", "i1_misses", "d1_misses", "i1_misses_dm",
              "d1_misses_dm"] + [f"cycles_miss{c}{s}" for c in (12, 24, 48) for s in ("", "_dm")]
RATIOS = ["instruction_ratio"] + [f"cycle_ratio_miss{c}{s}" for c in (12, 24, 48)
                                  for s in ("", "_dm")]


def fail(msg):
    print(f"check_tam_table: FAIL: {msg}", file=sys.stderr)
    sys.exit(1)


def check_line(r, line):
    for k, t in KEYS.items():
        if k not in r or not isinstance(r[k], t) or isinstance(r[k], bool):
            fail(f"key {k!r} missing or not {t}: {line}")
    if set(r) - set(KEYS) - {"correct"}:
        fail(f"unexpected keys: {line}")
    if r["bench"] != "tam" or r["op"] not in PROGRAMS or r["system"] not in SYSTEMS:
        fail(f"bad bench/op/system: {line}")
    if r["cache"] not in ("4way", "direct", "none") or r["reps"] < 1:
        fail(f"bad cache/reps: {line}")
    if not (0 <= r["min"] <= r["median"] <= r["max"]):
        fail(f"bad value: {line}")
    if r["metric"] == "correct" and r.get("correct") is not (r["median"] == 1):
        fail(f"'correct' key and value disagree: {line}")


def close(a, b, what):
    if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9):
        fail(f"{what}: {a} != {b}")


def check_tpq(tam_table, extra):
    """tam_table --check on wavefront 40 (one rank, threads): system -> TPQ; fails on a wrong
    result."""
    p = subprocess.run([tam_table, "--check", "--programs", "wavefront", "--arg", "40"] + extra,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        fail(f"tam_table --check {' '.join(extra)} exited with {p.returncode}: {p.stderr[-2000:]}")
    tpq = {}
    for line in p.stdout.splitlines():
        r = json.loads(line)
        if r["metric"] == "correct" and r["median"] != 1:
            fail(f"wrong result: {line}")
        if r["metric"] == "tpq":
            tpq[r["system"]] = r["median"]
    return tpq


def check_enabled(tam_table):
    """The enabled variant (docs/tam.md: wavefront's AM TPQ grows; MD is the same either way)."""
    off, on = check_tpq(tam_table, []), check_tpq(tam_table, ["--enabled"])
    if set(off) != {"md", "am"} or set(on) != {"md_enabled", "am_enabled"}:
        fail(f"--check systems: {sorted(off)} and with --enabled {sorted(on)}")
    if on["md_enabled"] != off["md"]:
        fail(f"MD's TPQ changed with --enabled: {off['md']} -> {on['md_enabled']}")
    if not on["am_enabled"] > off["am"]:
        fail(f"AM's TPQ on wavefront did not grow with --enabled: {off['am']} -> "
             f"{on['am_enabled']}")
    print(f"check_tam_table: wavefront 40 TPQ, AM {off['am']:.2f} -> {on['am_enabled']:.2f} "
          f"enabled; MD {off['md']:.2f} either way")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tam_table")
    ap.add_argument("plot")
    ap.add_argument("--valgrind", default="valgrind")
    ap.add_argument("--programs", default="mmt,qs")
    ap.add_argument("--arg", default="4")
    ap.add_argument("--reps", default="2")
    a = ap.parse_args()
    progs = a.programs.split(",")

    q = subprocess.run([a.tam_table, "--valgrind", "/nonexistent/valgrind"], capture_output=True,
                       text=True, timeout=30)
    if q.returncode != 2 or "valgrind" not in q.stderr:
        fail(f"without valgrind: status {q.returncode} (want 2), stderr {q.stderr!r}")

    with tempfile.TemporaryDirectory() as d:
        keep = os.path.join(d, "callgrind")
        p = subprocess.run([a.tam_table, "--programs", a.programs, "--arg", a.arg, "--valgrind",
                            a.valgrind, "--keep", keep, "--reps", a.reps], capture_output=True, text=True,
                           timeout=110)
        sys.stderr.write(p.stderr)
        if p.returncode != 0:
            fail(f"tam_table exited with {p.returncode}")
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

        def line(system, op, metric):
            for r in rows:
                if r["system"] == system and r["op"] == op and r["metric"] == metric:
                    return r
            fail(f"no {system} {metric} line for {op}")

        def get(system, op, metric):
            return line(system, op, metric)["median"]

        for r in rows:
            if r["system"] in ("md", "am", "md/am", "seq") and r["reps"] not in (1, int(a.reps)):
                fail(f"reps {r['reps']}, not 1 or {a.reps}: {r}")

        for op in progs:
            for s in ("md", "am"):
                for m in PER_POLICY:
                    get(s, op, m)
                if get(s, op, "correct") != 1:
                    fail(f"{op} {s}: wrong result")
                thr, qua, ins = get(s, op, "threads"), get(s, op, "quanta"), get(s, op, "instructions")
                if thr <= 0 or qua <= 0 or ins <= 0:
                    fail(f"{op} {s}: no threads, quanta or instructions")
                close(get(s, op, "tpq"), thr / qua, f"{op} {s} tpq")
                close(get(s, op, "ipt") * thr, ins, f"{op} {s} ipt x threads")
                close(get(s, op, "ipq") * qua, ins, f"{op} {s} ipq x quanta")
                o, v = line(s, op, "overhead_vs_seq"), ins / get("seq", op, "instructions")
                if not o["min"] * (1 - 1e-9) <= v <= o["max"] * (1 + 1e-9):
                    fail(f"{op} {s} overhead: {v} outside [{o['min']}, {o['max']}]")
                for suf in ("", "_dm"):
                    miss = get(s, op, "i1_misses" + suf) + get(s, op, "d1_misses" + suf)
                    for c in (12, 24, 48):
                        close(get(s, op, f"cycles_miss{c}{suf}"), ins + miss * c,
                              f"{op} {s} cycles_miss{c}{suf}")
            for m in RATIOS:
                get("md/am", op, m)
            # Medians over the repetitions: with 1 or 2 of them the median of the cycles is
            # their mean, and the quotient of the means lies within the range of the quotients.
            for c in (12, 24, 48):
                for suf in ("", "_dm"):
                    q = line("md/am", op, f"cycle_ratio_miss{c}{suf}")
                    v = get("md", op, f"cycles_miss{c}{suf}") / get("am", op, f"cycles_miss{c}{suf}")
                    if not q["min"] * (1 - 1e-9) <= v <= q["max"] * (1 + 1e-9):
                        fail(f"{op} ratio {c}{suf}: {v} outside [{q['min']}, {q['max']}]")
                get("paper_md/am", op, f"cycle_ratio_miss{c}")
            for m in ("tpq", "ipt", "ipq"):
                get("paper_md", op, m)
                get("paper_am", op, m)
            get("seq", op, "instructions")

        # The toggle restricts counting: the whole worker under callgrind counts more.
        op = progs[0]
        full = os.path.join(d, "full.out")
        v = subprocess.run([a.valgrind, "--tool=callgrind", f"--callgrind-out-file={full}",
                            a.tam_table, "--worker", op, "--policy", "am", "--arg", a.arg,
                            "--stats-out", os.path.join(d, "full.stats")],
                           capture_output=True, text=True, timeout=60)
        if v.returncode != 0:
            fail(f"the full callgrind run failed: {v.stderr[-2000:]}")
        with open(full) as f:
            totals = [ln for ln in f if ln.startswith("totals:")]
        whole = int(totals[0].split()[1])
        counted = get("am", op, "instructions")
        if not counted < whole:
            fail(f"--toggle-collect did not restrict counting: {counted} vs {whole} for the "
                 f"whole worker")
        print(f"check_tam_table: {len(rows)} well-formed, consistent lines; am::tam::run counted "
              f"{counted:.0f} of the worker's {whole} instructions")

        check_enabled(a.tam_table)

        try:
            import matplotlib  # noqa: F401
        except ImportError:
            if os.environ.get("AM_REQUIRE_ALL_TESTS") == "1":  # CI: a skip is a failure
                fail("matplotlib is not installed (python3-matplotlib): plots not checked")
            print("check_tam_table: matplotlib not installed: plots not checked")
            return 0
        data = os.path.join(d, "table2.json")
        with open(data, "w") as f:
            f.write(p.stdout)
        out = os.path.join(d, "png")
        q = subprocess.run([sys.executable, a.plot, data, "--out", out, "--expect",
                            "4way,direct"], capture_output=True, text=True, timeout=60)
        sys.stderr.write(q.stderr)
        if q.returncode != 0:
            fail(f"plot_tam.py exited with {q.returncode}")
        for c in ("4way", "direct"):
            with open(os.path.join(out, f"ratio_vs_tpq_{c}.png"), "rb") as f:
                if f.read(8) != b"\x89PNG\r\n\x1a\n":
                    fail(f"ratio_vs_tpq_{c}.png is not a PNG")
        print("check_tam_table: both figures drawn")
    return 0


if __name__ == "__main__":
    sys.exit(main())
