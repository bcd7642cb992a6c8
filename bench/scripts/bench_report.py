#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""The benchmark report: report.md and its PNGs from the JSON lines of one bench_report.sh run.

    bench_report.py --data DIR/data --out DIR [--build BUILD] [--mode quick]

DIR/data holds GROUP.jsonl, the JSON lines of the steps of one benchmark (am_pingpong,
am_flood, typed_rate, epoch_overhead, graph500), and steps.tsv (label, exit status, seconds,
command; one step a line), written by scripts/bench_report.sh. Writes
DIR/report.md (machine, commit, date, the commands, per plot a table of medians) and the PNGs
it names: latency.png, bandwidth.png, message_rate.png, typed_rate.png, epoch_cost.png,
graph500.png. Exit status 1 when a plot has no am data (its benchmark failed or was not run),
2 when matplotlib is missing (scripts/requirements.txt).
"""
import argparse
import datetime
import os
import platform
import socket
import statistics
import subprocess
import sys
from collections import defaultdict

import benchjson

REQUIREMENTS = "scripts/requirements.txt"


# ---------------------------------------------------------------- where and what was measured

def run(cmd, cwd=None):
    """First line of a command's output, or "" when it cannot run."""
    try:
        out = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return ""
    text = (out.stdout or out.stderr).strip()
    return text.splitlines()[0].strip() if out.returncode == 0 and text else ""


def proc_field(path, key):
    try:
        with open(path) as f:
            for line in f:
                if line.startswith(key):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return ""


def cmake_cache(build, key):
    try:
        with open(os.path.join(build, "CMakeCache.txt")) as f:
            for line in f:
                if line.startswith(key + ":"):
                    return line.split("=", 1)[1].strip()
    except OSError:
        pass
    return ""


def machine(build):
    mem_kib = proc_field("/proc/meminfo", "MemTotal").split()
    mem = f"{int(mem_kib[0]) / 2**20:.1f} GiB" if mem_kib else "unknown"
    compiler = cmake_cache(build, "CMAKE_CXX_COMPILER")
    return [
        ("host", socket.gethostname()),
        ("CPU", proc_field("/proc/cpuinfo", "model name") or platform.processor() or "unknown"),
        ("cores", str(os.cpu_count())),
        ("memory", mem),
        ("kernel", f"{platform.system()} {platform.release()} ({platform.machine()})"),
        ("compiler", f"{compiler} ({run([compiler, '--version'])})" if compiler else "unknown"),
        ("build type", cmake_cache(build, "CMAKE_BUILD_TYPE") or "unknown"),
        ("MPI", run(["mpirun", "--version"]) or "not found"),
        ("UCX", run(["ucx_info", "-v"]).lstrip("# ") or "not installed (ucx-utils)"),
        ("Python / matplotlib", f"{platform.python_version()} / {matplotlib_version()}"),
    ]


def matplotlib_version():
    import matplotlib
    return matplotlib.__version__


def commit(repo):
    head = run(["git", "rev-parse", "HEAD"], cwd=repo)
    if not head:
        return "unknown (not a git checkout)"
    describe = run(["git", "describe", "--always", "--dirty", "--tags"], cwd=repo)
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=repo,
                           capture_output=True, text=True).stdout.strip()
    branch = run(["git", "rev-parse", "--abbrev-ref", "HEAD"], cwd=repo)
    state = "dirty: uncommitted changes to tracked files" if dirty else "clean"
    return f"`{head}` ({describe}, branch {branch}, {state})"


def read_steps(data):
    steps = []
    path = os.path.join(data, "steps.tsv")
    if os.path.exists(path):
        with open(path) as f:
            for line in f:
                parts = line.rstrip("\n").split("\t", 3)
                if len(parts) == 4:
                    steps.append({"name": parts[0], "status": int(parts[1]),
                                  "seconds": float(parts[2]), "command": parts[3]})
    return steps


# ---------------------------------------------------------------- series

def median_of(rows):
    """One value per point: the median of the medians when a point was measured more than once
    (rounds of graph500_bench); min of minima, max of maxima."""
    return {"median": statistics.median(r["median"] for r in rows),
            "min": min(r["min"] for r in rows), "max": max(r["max"] for r in rows)}


def series(rows, x, y="median", **kw):
    """{x value: aggregated point} of the rows that match kw."""
    pts = defaultdict(list)
    for r in benchjson.pick(rows, **kw):
        pts[r[x]].append({"median": r[y], "min": r.get("min", r[y]) if y == "median" else r[y],
                          "max": r.get("max", r[y]) if y == "median" else r[y]})
    return {k: median_of(v) for k, v in sorted(pts.items())}


class figure:
    """One plot: named series over one x axis, and the Markdown table of their medians."""

    def __init__(self, name, title, xlabel, ylabel, xkey, xlog=True, ylog=True, xfmt=None):
        self.name, self.title, self.xlabel, self.ylabel = name, title, xlabel, ylabel
        self.xkey, self.xlog, self.ylog = xkey, xlog, ylog
        self.xfmt = xfmt or str
        self.panels = defaultdict(list)  # panel title -> [(label, points, style)]
        self.notes = []

    def add(self, label, points, panel="", style=None):
        if points:
            self.panels[panel].append((label, points, style or {}))

    def has(self, prefix):
        return any(label.startswith(prefix) for p in self.panels.values() for label, _, _ in p)

    def draw(self, plt, out):
        n = max(1, len(self.panels))
        f, axes = plt.subplots(1, n, figsize=(6.4 * n, 4.6), squeeze=False)
        for ax, (panel, lines) in zip(axes[0], sorted(self.panels.items())):
            for label, pts, style in lines:
                xs = list(pts)
                ys = [pts[x]["median"] for x in xs]
                yerr = [[pts[x]["median"] - pts[x]["min"] for x in xs],
                        [pts[x]["max"] - pts[x]["median"] for x in xs]]
                ax.errorbar(xs, ys, yerr=yerr, capsize=3, marker=style.get("marker", "o"),
                            ls=style.get("ls", "-"), color=style.get("color"), label=label)
            if self.xlog:
                ax.set_xscale("log", base=2)
            xs = sorted({x for _, pts, _ in lines for x in pts})
            ax.set_xticks(xs)
            ax.set_xticklabels([self.xfmt(x) for x in xs])
            ax.minorticks_off() if not self.ylog else ax.xaxis.set_minor_locator(
                plt.NullLocator())
            if self.ylog:
                ax.set_yscale("log")
            ax.set_xlabel(self.xlabel)
            ax.set_ylabel(self.ylabel)
            ax.set_title(f"{self.title}{': ' + panel if panel else ''}", fontsize=10)
            ax.grid(alpha=0.3, which="both")
            ax.legend(fontsize=8)
        f.tight_layout()
        path = os.path.join(out, self.name + ".png")
        f.savefig(path, dpi=100)
        plt.close(f)
        return path

    def table(self):
        out = []
        for panel, lines in sorted(self.panels.items()):
            xs = sorted({x for _, pts, _ in lines for x in pts})
            if panel:
                out.append(f"\n*{panel}*\n")
            out.append(f"| {self.xlabel} | " + " | ".join(label for label, _, _ in lines) + " |")
            out.append("|---" * (len(lines) + 1) + "|")
            for x in xs:
                cells = [fmt(pts[x]["median"]) if x in pts else "–" for _, pts, _ in lines]
                out.append(f"| {self.xfmt(x)} | " + " | ".join(cells) + " |")
        return "\n".join(out)


def fmt(v):
    if v >= 1e6:
        return f"{v:.3g}"
    if v >= 100:
        return f"{v:,.0f}"
    if v >= 10:
        return f"{v:.1f}"
    return f"{v:.3g}"


def size(b):
    for unit, n in (("M", 2**20), ("K", 2**10)):
        if b >= n and b % n == 0:
            return f"{b // n}{unit}"
    return str(b)


AM = {"color": "tab:blue"}
MPI = {"color": "tab:red", "ls": "--", "marker": "s"}
UCX = {"color": "tab:green", "ls": ":", "marker": "^"}


def add_lines(f, rows, x, metric, lines):
    """One series per (label, the keys its rows match, style), all of one metric."""
    for label, keys, style in lines:
        f.add(label, series(rows, x, metric=metric, **keys), style=style)
    return f


def latency(rows):
    f = figure("latency", "One-way latency (half a round trip), 2 ranks", "bytes",
               "µs (median of repetitions)", "bytes", xfmt=size)
    return add_lines(f, rows, "bytes", "latency_us", [
        ("am short", {"system": "am", "op": "short"}, {"marker": "D", "color": "tab:cyan"}),
        ("am medium", {"system": "am", "op": "medium"}, {"color": "tab:blue"}),
        ("am long", {"system": "am", "op": "long"}, {"marker": "v", "color": "tab:purple"}),
        ("MPI send/recv", {"system": "mpi", "op": "send_recv"}, MPI),
        ("UCX ucp_am_lat", {"system": "ucx", "op": "ucp_am_lat"}, UCX)])


def bandwidth(rows):
    f = figure("bandwidth", "Streaming bandwidth, 2 ranks", "bytes", "GB/s", "bytes", xfmt=size)
    return add_lines(f, rows, "bytes", "bandwidth_GBps", [
        ("am long", {"system": "am", "op": "long"}, AM),
        ("MPI Isend window", {"system": "mpi", "op": "isend_window"}, MPI),
        ("UCX ucp_am_bw", {"system": "ucx", "op": "ucp_am_bw"}, UCX),
        ("memcpy (1 core)", {"system": "memcpy"}, {"color": "gray", "ls": "-.", "marker": "."})])


def message_rate(rows):
    f = figure("message_rate", "One-way message rate, rank 0 → rank 1", "bytes",
               "million messages / s", "bytes", xfmt=size)
    return add_lines(f, rows, "bytes", "rate_Mmsgps", [
        ("am short", {"system": "am", "op": "short"}, {"marker": "D", "color": "tab:cyan"}),
        ("am medium", {"system": "am", "op": "medium"}, AM),
        ("MPI Isend window", {"system": "mpi", "op": "isend_window"}, MPI),
        ("UCX ucp_am_bw", {"system": "ucx", "op": "ucp_am_bw"}, UCX)])


def typed_rate(rows):
    f = figure("typed_rate", "Typed messages (16 bytes) to random ranks, all ranks", "ranks",
               "million records / s (all ranks)", "ranks")
    return add_lines(f, rows, "ranks", "rate_Mmsgps", [
        ("am coalesced", {"system": "am", "op": "coalesced"}, AM),
        ("am uncoalesced", {"system": "am", "op": "uncoalesced"},
         {"color": "tab:cyan", "marker": "D"}),
        ("MPI Alltoallv", {"system": "mpi", "op": "alltoallv"}, MPI)])


def epoch_cost(rows):
    f = figure("epoch_cost", "Cost of an empty epoch", "ranks", "µs per operation (rank 0)",
               "ranks")
    transports = sorted({r["transport"] for r in benchjson.pick(rows, system="am")})
    for tp in transports:
        ls = "-" if tp == "shm" else "-."
        for op, label, color in (("epoch_general", "epoch", "tab:blue"),
                                 ("epoch_depth0", "epoch, depth 0", "tab:cyan"),
                                 ("am_barrier", "ctx.barrier", "tab:olive")):
            f.add(f"am {tp}: {label}", series(rows, "ranks", system="am", transport=tp, op=op,
                                              metric="latency_us"),
                  style={"color": color, "ls": ls})
    return add_lines(f, rows, "ranks", "latency_us", [
        ("MPI_Barrier", {"system": "mpi", "op": "mpi_barrier"}, MPI),
        ("MPI_Allreduce", {"system": "mpi", "op": "mpi_allreduce"},
         {"color": "tab:purple", "ls": ":", "marker": "s"})])


def graph500(rows):
    f = figure("graph500", "Graph500 (Kronecker, edgefactor 16, 2 ranks)", "SCALE",
               "TEPS (harmonic mean over roots)", "scale", xlog=False)
    for kernel in ("bfs", "sssp"):
        f.add("am (2 ranks)", series(rows, "scale", "harmonic_mean", system="am", ranks=2,
                                     op=kernel, metric="teps"), panel=kernel, style=AM)
        f.add("OpenMP reference (2 threads)",
              series(rows, "scale", "harmonic_mean", system="omp", op=kernel, metric="teps"),
              panel=kernel, style=UCX)
        f.add("Parallel BGL", series(rows, "scale", "harmonic_mean", system="pbgl", op=kernel,
                                     metric="teps"), panel=kernel, style=MPI)
    return f


# name in steps.tsv / data file, bench of its lines, the figure, what it shows
PLOTS = [
    ("am_pingpong", latency, "Latency against message size: am's short, medium and long "
     "messages against MPI_Send/MPI_Recv and UCX's active messages (shared memory)."),
    ("am_pingpong", bandwidth, "Bandwidth against message size: am long messages streamed "
     "against a window of MPI_Isend and UCX's ucp_am_bw; single-core memcpy for scale."),
    ("am_flood", message_rate, "Message rate against size: messages sent back to back from "
     "rank 0 to rank 1, against a windowed MPI_Isend flood and UCX."),
    ("typed_rate", typed_rate, "Typed rate against ranks: 16-byte records to uniformly random "
     "ranks, coalesced and not, against MPI_Alltoallv exchanging the same records."),
    ("epoch_overhead", epoch_cost, "Epoch cost against ranks: an empty epoch (termination "
     "detection with nothing sent) and ctx.barrier against MPI_Barrier and MPI_Allreduce. On "
     "a machine with fewer cores than ranks the runs oversubscribe."),
    ("graph500", graph500, "Graph500 TEPS against SCALE: am-graph500 (2 shm ranks), the OpenMP "
     "shared-memory reference and the Parallel BGL on the same graphs and roots "
     "(graph500_bench), BFS and SSSP."),
]


def write_report(args, plt):
    steps = read_steps(args.data)
    by_step = {}
    for group in {p[0] for p in PLOTS}:
        path = os.path.join(args.data, group + ".jsonl")
        by_step[group] = benchjson.load([path]) if os.path.exists(path) else []
    repo = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    date = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    md = [f"# am benchmark report ({args.mode} mode)", "",
          f"Written by `scripts/bench_report.sh` on {date}.", "",
          "| | |", "|---|---|",
          f"| date | {date} |", f"| commit | {commit(repo)} |"]
    md += [f"| {k} | {v.replace('|', '/')} |" for k, v in machine(args.build)]
    md += ["", "Figures are medians over repetitions; error bars span min to max. The "
           "benchmarks ran one after another on this machine; what else ran on it is not "
           "controlled.", "", "## Commands", ""]
    if args.invocation:
        md += [f"`{args.invocation}` ran these, one after another, in the build directory "
               f"(`{os.path.basename(os.path.abspath(args.build))}`, {cmake_cache(args.build, 'CMAKE_BUILD_TYPE') or 'build type unknown'}).", ""]
    md += ["The JSON lines of each benchmark are in `data/<benchmark>.jsonl` beside this "
           "report, its stderr in `data/<benchmark>.log`.", "",
           "| step | seconds | exit | command |", "|---|---|---|---|"]
    for s in steps:
        md.append(f"| {s['name']} | {s['seconds']:.1f} | {s['status']} | `{s['command']}` |")
    missing = []
    for step, make, text in PLOTS:
        fig = make(by_step.get(step, []))
        md += ["", f"## {fig.title}", "", text, ""]
        if not fig.has("am"):
            missing.append(f"{fig.name}: no am data from {step}")
            md.append(f"**No am data: the step `{step}` failed or was not run.**")
            continue
        fig.draw(plt, args.out)
        md += [f"![{fig.title}]({fig.name}.png)", "", fig.table()]
        if step in ("am_pingpong", "am_flood") and not fig.has("UCX"):
            md += ["", "UCX: no figures (ucx_perftest not installed, Debian ucx-utils)."]
        if not fig.has("MPI") and not fig.has("Parallel BGL"):
            md += ["", "No baseline figures (the baseline was not built or failed)."]
    with open(os.path.join(args.out, "report.md"), "w") as f:
        f.write("\n".join(md) + "\n")
    for m in missing:
        print(f"bench_report: {m}", file=sys.stderr)
    return 1 if missing else 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="the step files of bench_report.sh")
    ap.add_argument("--out", required=True)
    ap.add_argument("--build", default="build", help="the build directory (its CMakeCache)")
    ap.add_argument("--mode", default="full")
    ap.add_argument("--invocation", default="", help="the command that ran the benchmarks")
    args = ap.parse_args()
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"bench_report: matplotlib is missing: pip install -r {REQUIREMENTS} (or Debian's "
              "python3-matplotlib)", file=sys.stderr)
        return 2
    os.makedirs(args.out, exist_ok=True)
    return write_report(args, plt)


if __name__ == "__main__":
    sys.exit(main())
