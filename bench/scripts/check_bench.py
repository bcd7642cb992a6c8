#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The smoke tests of bench/ that read a program's JSON lines (benchjson.py): each runs the
program on small arguments, checks that it exits 0 and that every stdout line is a JSON object
with the keys of every bench/ program and the program's own, checks the figures against each
other, and then, when matplotlib can be imported, that the program's plot script draws every
figure as a PNG from those lines (with AM_REQUIRE_ALL_TESTS=1 a missing matplotlib fails).

    check_bench.py rpc RPC_BENCH PLOT_SCRIPT [rpc_bench options...]          am.bench.rpc.quick
    check_bench.py window WINDOW_BENCH PLOT_SCRIPT [window_bench options...] am.bench.window.quick
    check_bench.py tam TAM_TABLE PLOT_SCRIPT [--valgrind PATH] [--programs a,b] [--arg N]
                   [--reps N (1 or 2)]                                        am.bench.tam.quick
    check_bench.py KIND --lines FILE [options]   only the checks of the lines, on a saved stdout

rpc: rpc_bench --quick fails by itself when a result is wrong (an RPC or TRPC value, a dht find
or entry count, a uts node count against the sequential count, an optimistic handler that did
not block where it had to); here every op has its systems, dht runs on 2 and 4 ranks, and every
time_ratio line is the quotient of the lines it divides.

window: window_bench --quick has lines for every figure (the am lines with their extra keys, the
reference round trips of Fig. 3a/3c, the MPI baselines unless --no-baseline, with the
shared-memory window baseline of Fig. 7).

tam: tam_table under valgrind's callgrind fails when a result differs from the sequential
reference; here every program has every metric for md, am, md/am and the reference, the figures
agree (TPQ = threads / quanta, IPT x threads = instructions, cycles = instructions + misses x
cost, the ratios are quotients of the cycles), callgrind counted only am::tam::run (fewer
instructions than a run of the whole worker), tam_table exits 2 naming valgrind when it is
missing, and `--check --enabled` (the layer's enabled variant, no valgrind) gives correct
results, MD the same TPQ as without it and AM a larger TPQ on wavefront 40.
"""
import argparse
import math
import os
import subprocess
import sys
import tempfile

import benchjson
from benchjson import KEYS, Bad, typed

PNG = b"\x89PNG\r\n\x1a\n"


def say(kind, msg):
    print(f"check_bench.py {kind}: {msg}")


def run(cmd, timeout, name=None):
    """Runs a program of the check (name: what to call it, default its file name), passes on
    its stderr; Bad when it does not exit 0."""
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    sys.stderr.write(p.stderr)
    if p.returncode != 0:
        raise Bad(f"{name or os.path.basename(cmd[0])} exited with {p.returncode}")
    return p


def is_png(path):
    if not os.path.exists(path):
        return False
    with open(path, "rb") as f:
        return f.read(8) == PNG


def plots(kind, plot, text, expect, png, timeout):
    """`plot` draws the figures `expect` from the lines `text`: each a PNG, png(figure) its
    file name. Returns False (said) when matplotlib is missing and that is allowed."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        if os.environ.get("AM_REQUIRE_ALL_TESTS") == "1":  # CI: a skip is a failure
            raise Bad("matplotlib is not installed (python3-matplotlib): plots not checked")
        say(kind, "matplotlib not installed: plots not checked")
        return False
    with tempfile.TemporaryDirectory() as d:
        data, out = os.path.join(d, f"{kind}.json"), os.path.join(d, "png")
        with open(data, "w") as f:
            f.write(text)
        run([sys.executable, plot, data, "--out", out, "--expect", ",".join(expect)], timeout,
            os.path.basename(plot))
        for fig in expect:
            if not is_png(os.path.join(out, png(fig))):
                raise Bad(f"{png(fig)} is not a PNG")
    return True


# ---------------------------------------------------------------------------------- rpc

RPC_OPS = ["null_rtt", "arg8_rtt", "async_rate", "optimistic_noblock", "promotion", "dht", "uts"]
RPC_SYSTEMS = ["am_rpc", "am_handcoded", "trpc", "plain_handler", "oam-plain", "rpc/am",
               "trpc/rpc"]
RPC_METRICS = ["latency_us", "rate_Mops", "ns", "seconds", "uncontended_ns", "blocked_ns",
               "time_ratio"]
THREE = ["am_rpc", "am_handcoded", "trpc"]
# (op, metric): the systems that must be there.
RPC_NEED = {("null_rtt", "latency_us"): THREE, ("arg8_rtt", "latency_us"): THREE,
            ("async_rate", "rate_Mops"): THREE,
            ("optimistic_noblock", "ns"): ["am_rpc", "plain_handler", "oam-plain"],
            ("promotion", "ns"): ["am_rpc"], ("promotion", "blocked_ns"): ["am_rpc"],
            ("promotion", "uncontended_ns"): ["am_rpc"], ("dht", "seconds"): THREE,
            ("dht", "rate_Mops"): THREE, ("uts", "seconds"): THREE}
RPC_FIGURES = ["rtt", "async_rate", "optimistic", "dht", "uts"]


def rpc_line(r, line):
    typed(r, KEYS, line)
    if set(r) != set(KEYS):
        raise Bad(f"keys other than {sorted(KEYS)}: {line}")
    if r["bench"] != "rpc" or r["op"] not in RPC_OPS or r["system"] not in RPC_SYSTEMS:
        raise Bad(f"bad bench/op/system: {line}")
    if r["metric"] not in RPC_METRICS or r["reps"] < 1 or r["ranks"] < 2:
        raise Bad(f"bad metric/reps/ranks: {line}")
    # Differences (oam-plain, promotion's ns) may be negative on a noisy machine; ratios are
    # checked against the lines they divide (rpc_ratios); every measured figure is positive
    # and ordered.
    measured = r["metric"] != "time_ratio" and r["system"] != "oam-plain" and not (
        r["op"] == "promotion" and r["metric"] == "ns")
    if measured and not (0 < r["min"] <= r["median"] <= r["max"]):
        raise Bad(f"bad statistics: {line}")


def close6(x, y):
    """Equal up to the JSON lines' 6 significant digits."""
    return abs(x - y) <= 1e-4 * max(abs(x), abs(y))


def rpc_ratio(rows, r):
    """One time_ratio line (how many times longer num takes than den) against the lines it
    divides: median = ratio of the medians, min and max the ratio's range (report.hpp's
    ratio_of: num's min over den's max, num's max over den's min; for a rate, time = 1/rate).
    The old figures (ratio of the minima, ratio of the maxima) fail here."""
    num_sys, den_sys = {"rpc/am": ("am_rpc", "am_handcoded"),
                        "trpc/rpc": ("trpc", "am_rpc")}[r["system"]]
    metric = {"async_rate": "rate_Mops", "dht": "seconds", "uts": "seconds"}.get(
        r["op"], "latency_us")

    def find(system):
        q = benchjson.one(rows, system=system, op=r["op"], metric=metric, ranks=r["ranks"])
        if q is None:
            raise Bad(f"no {system} {metric} line for the ratio {r}")
        return q

    num, den = find(num_sys), find(den_sys)
    if metric == "rate_Mops":  # times are 1/rate: swap, and the lines' min/max with them
        num, den = den, num
    want = (num["median"] / den["median"], num["min"] / den["max"], num["max"] / den["min"])
    got = (r["median"], r["min"], r["max"])
    if not all(close6(g, w) for g, w in zip(got, want)):
        raise Bad(f"ratio {r['system']} {r['op']} (ranks {r['ranks']}): median/min/max {got}, "
                  f"want {want}")
    if not r["min"] <= r["median"] <= r["max"]:
        raise Bad(f"ratio outside its own range: {r}")


def rpc_lines(text, opts):
    rows = benchjson.strict(text, rpc_line)
    for (op, metric), systems in RPC_NEED.items():
        for s in systems:
            if not benchjson.pick(rows, op=op, metric=metric, system=s):
                raise Bad(f"no {s} line for {op} {metric}")
    if {r["ranks"] for r in rows if r["op"] == "dht"} != {2, 4}:
        raise Bad("--quick runs dht on 2 and 4 ranks")
    for op in ("null_rtt", "arg8_rtt", "async_rate", "dht", "uts"):
        for s in ("rpc/am", "trpc/rpc"):
            if not benchjson.pick(rows, op=op, system=s):
                raise Bad(f"no {s} ratio for {op}")
    ratios = benchjson.pick(rows, metric="time_ratio")
    if not ratios:
        raise Bad("no time_ratio lines")
    for r in ratios:
        rpc_ratio(rows, r)
    say("rpc", f"{len(rows)} well-formed lines, every op and system present, every ratio's "
        "min-max its range")
    return rows


# ------------------------------------------------------------------------------- window

WINDOW_FIGURES = ["3a", "3b", "3c", "3d", "4", "5", "6", "7"]
WITH_BASELINE = ["3a", "3b", "3c", "3d", "5", "6", "7"]
WINDOW_EXTRA = ["pipeline_unit", "internal_buffer", "ordering", "concurrent"]
ROUNDTRIPS = ["msg_roundtrip", "am_medium_roundtrip", "am_long_roundtrip"]
STRICT = "sameop,diffop,sameam"


def window_am_line(r, line):
    """The keys of an am line of a window AM (search, abssum)."""
    if not isinstance(r["pipeline_unit"], int) or not isinstance(r["internal_buffer"], int):
        raise Bad(f"am line without pipeline_unit/internal_buffer: {line}")
    if r["ordering"] not in (STRICT, "none") or r["concurrent"] not in (0, 1):
        raise Bad(f"am line with bad ordering/concurrent: {line}")
    if r["metric"] == "latency_us":
        for k in ("function_us", "roundtrip_us", "am_roundtrip_us", "epoch"):
            if k not in r:
                raise Bad(f"latency line without {k}: {line}")
        if not (r["function_us"] > 0 and r["roundtrip_us"] > 0 and r["am_roundtrip_us"] > 0):
            raise Bad(f"latency line with bad reference times: {line}")
        return
    for k in ("segments_internal", "segments_user", "units_at_origin"):
        if not isinstance(r.get(k), int):
            raise Bad(f"throughput line without {k}: {line}")


def window_line(r, line):
    typed(r, dict(KEYS, figure=str), line)
    for k in WINDOW_EXTRA:
        if k not in r:
            raise Bad(f"key {k!r} missing: {line}")
    if r["bench"] != "window" or r["figure"] not in WINDOW_FIGURES:
        raise Bad(f"bad bench/figure: {line}")
    if r["system"] not in ("am", "mpi_rma", "mpi_twosided", "mpi_shm"):
        raise Bad(f"bad system: {line}")
    roundtrip = r["op"] in ROUNDTRIPS
    if roundtrip and (r["system"] != "am" or r["figure"] not in ("3a", "3c")
                      or r["metric"] != "latency_us"
                      or r.get("sizes_of") not in ("search", "abssum")
                      or not r.get("out_bytes", 0) > 0):
        raise Bad(f"bad round-trip line: {line}")
    if not roundtrip and r["op"] not in ("search", "abssum"):
        raise Bad(f"bad op: {line}")
    if not roundtrip and r["metric"] not in ("latency_us", "throughput_amps"):
        raise Bad(f"bad metric: {line}")
    if not (0 < r["min"] <= r["median"] <= r["max"]) or r["reps"] < 1:
        raise Bad(f"bad statistics: {line}")
    if not roundtrip and r["system"] == "am":
        window_am_line(r, line)


def window_references(rows, fig):
    """Fig. 3a/3c: the round-trip lines are there and every am latency line cites them."""
    rt = {r["op"]: r for r in rows if r["figure"] == fig and r["op"] in ROUNDTRIPS}
    if sorted(rt) != sorted(ROUNDTRIPS):
        raise Bad(f"figure {fig}: round-trip lines {sorted(rt)}, want {ROUNDTRIPS}")
    raw = min(rt["am_medium_roundtrip"]["median"], rt["am_long_roundtrip"]["median"])
    for r in benchjson.pick(rows, figure=fig, system="am"):
        if r["op"] not in ROUNDTRIPS and (r["am_roundtrip_us"] != raw or
                                          r["roundtrip_us"] != rt["msg_roundtrip"]["median"]):
            raise Bad(f"figure {fig}: a latency line's reference is not its round-trip lines'")


def window_lines(text, opts):
    rows = benchjson.strict(text, window_line)
    baseline = "--no-baseline" not in opts
    for fig in ("3a", "3c"):
        window_references(rows, fig)
    for fig in WINDOW_FIGURES:
        if not benchjson.pick(rows, figure=fig, system="am"):
            raise Bad(f"no am line for figure {fig}")
        for s in ("mpi_rma", "mpi_twosided") if baseline and fig in WITH_BASELINE else ():
            if not benchjson.pick(rows, figure=fig, system=s):
                raise Bad(f"no {s} line for figure {fig}")
    if {r["ordering"] for r in benchjson.pick(rows, figure="6", system="am")} != {STRICT, "none"}:
        raise Bad("figure 6 needs strict and relaxed lines")
    if baseline and not benchjson.pick(rows, figure="7", system="mpi_shm"):
        raise Bad("no mpi_shm line for figure 7")
    fig7 = benchjson.pick(rows, figure="7", system="am")
    if {r["concurrent"] for r in fig7} != {0, 1}:
        raise Bad("figure 7 needs concurrency off and on")
    if any(r.get("mapped") == 1 and r["units_at_origin"] == 0
           for r in benchjson.pick(fig7, concurrent=1)):
        raise Bad("figure 7: concurrent epoch on a mapped window ran no unit at the origin")
    say("window", f"{len(rows)} well-formed lines, every figure present")
    return rows


# ---------------------------------------------------------------------------------- tam

TAM_KEYS = dict(KEYS, arg=int, cache=str)
TAM_SYSTEMS = {"md", "am", "md/am", "seq", "paper_md", "paper_am", "paper_md/am"}
TAM_PROGRAMS = {"mmt", "qs", "dtw", "paraffins", "wavefront", "ss"}
COSTS = (12, 24, 48)
PER_POLICY = ["correct", "tpq", "ipt", "ipq", "threads", "quanta", "inlets", "messages",
              "instructions", "overhead_vs_seq", "i1_misses", "d1_misses", "i1_misses_dm",
              "d1_misses_dm"] + [f"cycles_miss{c}{s}" for c in COSTS for s in ("", "_dm")]
RATIOS = ["instruction_ratio"] + [f"cycle_ratio_miss{c}{s}" for c in COSTS for s in ("", "_dm")]


def tam_options(opts):
    ap = argparse.ArgumentParser(prog="check_bench.py tam TAM_TABLE PLOT_SCRIPT")
    ap.add_argument("--valgrind", default="valgrind")
    ap.add_argument("--programs", default="mmt,qs")
    ap.add_argument("--arg", default="4")
    ap.add_argument("--reps", default="2")
    return ap.parse_args(opts)


def tam_line(r, line):
    typed(r, TAM_KEYS, line)
    if set(r) - set(TAM_KEYS) - {"correct"}:
        raise Bad(f"unexpected keys: {line}")
    if r["bench"] != "tam" or r["op"] not in TAM_PROGRAMS or r["system"] not in TAM_SYSTEMS:
        raise Bad(f"bad bench/op/system: {line}")
    if r["cache"] not in ("4way", "direct", "none") or r["reps"] < 1:
        raise Bad(f"bad cache/reps: {line}")
    if not (0 <= r["min"] <= r["median"] <= r["max"]):
        raise Bad(f"bad value: {line}")
    if r["metric"] == "correct" and r.get("correct") is not (r["median"] == 1):
        raise Bad(f"'correct' key and value disagree: {line}")


def close(a, b, what):
    if not math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9):
        raise Bad(f"{what}: {a} != {b}")


def within(v, r, what):
    """v lies in the line r's range [min, max] (up to rounding)."""
    if not r["min"] * (1 - 1e-9) <= v <= r["max"] * (1 + 1e-9):
        raise Bad(f"{what}: {v} outside [{r['min']}, {r['max']}]")


class Table:
    """tam_table's lines by (system, op, metric); a missing one is a failure."""

    def __init__(self, rows):
        self.rows = rows

    def line(self, system, op, metric):
        r = benchjson.one(self.rows, system=system, op=op, metric=metric)
        if r is None:
            raise Bad(f"no {system} {metric} line for {op}")
        return r

    def get(self, system, op, metric):
        return self.line(system, op, metric)["median"]


def tam_policy(t, op, s):
    """Program op under policy s: every metric there, a correct result, counts that agree."""
    for m in PER_POLICY:
        t.get(s, op, m)
    if t.get(s, op, "correct") != 1:
        raise Bad(f"{op} {s}: wrong result")
    thr, qua, ins = t.get(s, op, "threads"), t.get(s, op, "quanta"), t.get(s, op, "instructions")
    if thr <= 0 or qua <= 0 or ins <= 0:
        raise Bad(f"{op} {s}: no threads, quanta or instructions")
    close(t.get(s, op, "tpq"), thr / qua, f"{op} {s} tpq")
    close(t.get(s, op, "ipt") * thr, ins, f"{op} {s} ipt x threads")
    close(t.get(s, op, "ipq") * qua, ins, f"{op} {s} ipq x quanta")
    within(ins / t.get("seq", op, "instructions"), t.line(s, op, "overhead_vs_seq"),
           f"{op} {s} overhead")
    for suf in ("", "_dm"):
        miss = t.get(s, op, "i1_misses" + suf) + t.get(s, op, "d1_misses" + suf)
        for c in COSTS:
            close(t.get(s, op, f"cycles_miss{c}{suf}"), ins + miss * c,
                  f"{op} {s} cycles_miss{c}{suf}")


def tam_program(t, op):
    for s in ("md", "am"):
        tam_policy(t, op, s)
    for m in RATIOS:
        t.get("md/am", op, m)
    # Medians over the repetitions: with 1 or 2 of them the median of the cycles is their
    # mean, and the quotient of the means lies within the range of the quotients.
    for c in COSTS:
        for suf in ("", "_dm"):
            m = f"cycles_miss{c}{suf}"
            within(t.get("md", op, m) / t.get("am", op, m),
                   t.line("md/am", op, f"cycle_ratio_miss{c}{suf}"), f"{op} ratio {c}{suf}")
        t.get("paper_md/am", op, f"cycle_ratio_miss{c}")
    for m in ("tpq", "ipt", "ipq"):
        t.get("paper_md", op, m)
        t.get("paper_am", op, m)
    t.get("seq", op, "instructions")


def tam_lines(text, opts):
    a = tam_options(opts)
    rows = benchjson.strict(text, tam_line)
    for r in rows:
        if r["system"] in ("md", "am", "md/am", "seq") and r["reps"] not in (1, int(a.reps)):
            raise Bad(f"reps {r['reps']}, not 1 or {a.reps}: {r}")
    t = Table(rows)
    for op in a.programs.split(","):
        tam_program(t, op)
    return t


def tam_restricted(bench, a, t, d):
    """The toggle restricts counting: the whole worker under callgrind counts more."""
    op = a.programs.split(",")[0]
    full = os.path.join(d, "full.out")
    v = subprocess.run([a.valgrind, "--tool=callgrind", f"--callgrind-out-file={full}", bench,
                        "--worker", op, "--policy", "am", "--arg", a.arg, "--stats-out",
                        os.path.join(d, "full.stats")], capture_output=True, text=True,
                       timeout=60)
    if v.returncode != 0:
        raise Bad(f"the full callgrind run failed: {v.stderr[-2000:]}")
    with open(full) as f:
        whole = int([ln for ln in f if ln.startswith("totals:")][0].split()[1])
    counted = t.get("am", op, "instructions")
    if not counted < whole:
        raise Bad(f"--toggle-collect did not restrict counting: {counted} vs {whole} for the "
                  "whole worker")
    say("tam", f"{len(t.rows)} well-formed, consistent lines; am::tam::run counted "
        f"{counted:.0f} of the worker's {whole} instructions")


def tam_tpq(bench, extra):
    """tam_table --check on wavefront 40 (one rank, threads): system -> TPQ; fails on a wrong
    result."""
    p = subprocess.run([bench, "--check", "--programs", "wavefront", "--arg", "40"] + extra,
                       capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        raise Bad(f"tam_table --check {' '.join(extra)} exited with {p.returncode}: "
                  f"{p.stderr[-2000:]}")
    def correct(r, line):
        if r["metric"] == "correct" and r["median"] != 1:
            raise Bad(f"wrong result: {line}")

    return {r["system"]: r["median"] for r in benchjson.strict(p.stdout, correct)
            if r["metric"] == "tpq"}


def tam_enabled(bench):
    """The enabled variant (docs/tam.md: wavefront's AM TPQ grows; MD is the same either way)."""
    off, on = tam_tpq(bench, []), tam_tpq(bench, ["--enabled"])
    if set(off) != {"md", "am"} or set(on) != {"md_enabled", "am_enabled"}:
        raise Bad(f"--check systems: {sorted(off)} and with --enabled {sorted(on)}")
    if on["md_enabled"] != off["md"]:
        raise Bad(f"MD's TPQ changed with --enabled: {off['md']} -> {on['md_enabled']}")
    if not on["am_enabled"] > off["am"]:
        raise Bad(f"AM's TPQ on wavefront did not grow with --enabled: {off['am']} -> "
                  f"{on['am_enabled']}")
    say("tam", f"wavefront 40 TPQ, AM {off['am']:.2f} -> {on['am_enabled']:.2f} enabled; MD "
        f"{off['md']:.2f} either way")


def tam_run(bench, plot, opts):
    a = tam_options(opts)
    q = subprocess.run([bench, "--valgrind", "/nonexistent/valgrind"], capture_output=True,
                       text=True, timeout=30)
    if q.returncode != 2 or "valgrind" not in q.stderr:
        raise Bad(f"without valgrind: status {q.returncode} (want 2), stderr {q.stderr!r}")
    with tempfile.TemporaryDirectory() as d:
        p = run([bench, "--programs", a.programs, "--arg", a.arg, "--valgrind", a.valgrind,
                 "--keep", os.path.join(d, "callgrind"), "--reps", a.reps], 110)
        tam_restricted(bench, a, tam_lines(p.stdout, opts), d)
    tam_enabled(bench)
    if plots("tam", plot, p.stdout, ["4way", "direct"], lambda c: f"ratio_vs_tpq_{c}.png", 60):
        say("tam", "both figures drawn")


# ---------------------------------------------------------------------------------------

LINES = {"rpc": rpc_lines, "window": window_lines, "tam": tam_lines}
# The `PROGRAM --quick` checks: the program's timeout, the figures of its plot script, their
# PNG names and the plot script's timeout.
QUICK = {"rpc": (170, RPC_FIGURES, "{}.png", 120),
         "window": (300, WINDOW_FIGURES, "fig{}.png", 300)}


def quick(kind, bench, plot, opts):
    run_timeout, figures, png, plot_timeout = QUICK[kind]
    p = run([bench, "--quick"] + opts, run_timeout)
    LINES[kind](p.stdout, opts)
    if plots(kind, plot, p.stdout, figures, png.format, plot_timeout):
        say(kind, "every figure drawn")


def main(argv):
    kind = argv[1] if len(argv) > 1 else ""
    try:
        if kind not in LINES or len(argv) < 4:
            raise Bad("usage: check_bench.py rpc|window|tam PROGRAM PLOT_SCRIPT [options] | "
                      "check_bench.py rpc|window|tam --lines FILE [options]")
        if argv[2] == "--lines":
            with open(argv[3]) as f:
                LINES[kind](f.read(), argv[4:])
        elif kind == "tam":
            tam_run(argv[2], argv[3], argv[4:])
        else:
            quick(kind, argv[2], argv[3], argv[4:])
    except Bad as e:
        print(f"check_bench.py {kind}: FAIL: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
