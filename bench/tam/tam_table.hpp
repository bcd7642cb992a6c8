// SPDX-License-Identifier: MIT
/// @file
/// What tam_table's parts share (tam_table.cpp: options, --check, the worker modes run under
/// valgrind; table.cpp: the table measured under callgrind): the plan from the command line
/// and the JSON-lines output.
#pragma once

#include "tam_apps.hpp"

#include <am/tam.hpp>

#include <cstdio>
#include <limits>
#include <optional>
#include <string>
#include <vector>

namespace am::bench::tam_table {

inline constexpr const char* bench_name = "tam";

/// What the command line asks for.
struct plan {
    enum class mode { table, check, worker, reference };
    mode what = mode::table;
    std::vector<const tam_apps::app*> programs;  // --programs (default all six, in order)
    std::string arg = "paper";                   // --arg paper|large|N
    int ranks = 1;                               // --check: --ranks N
    std::string transport = "threads";           // --check: --transport threads|shm|mpi
    bool enabled = false;                        // --check: --enabled (options::enabled)
    std::string out;                             // --out FILE: the JSON lines also there
    std::string valgrind;                        // --valgrind PATH
    std::string keep;                            // --keep DIR: callgrind files kept there
    int reps = 4;                                // --reps N: callgrind runs of each measurement
    bool verbose = false;                        // --verbose: print the valgrind commands
    // The worker modes (internal): one program, one policy (--worker) or its reference.
    am::tam::policy dispatch = am::tam::policy::active_messages;  // --policy am|md
    std::string stats_out;                                        // --stats-out FILE
};

/// The argument `p.arg` means for program `a`: its paper or large argument, or the number.
[[nodiscard]] int argument(const plan& p, const tam_apps::app& a);

/// One value as a JSON line: the keys of every bench/ program (median `value`; min and max
/// `lo` and `hi` over `reps` runs, or `value` when not given), then "arg" (the program's
/// argument), "cache" ("4way", "direct" or "none") and, on `correct` lines, "correct".
struct point {
    const char* system;  // "md", "am", "md/am", "seq", "paper_md", "paper_am", "paper_md/am",
                         // --check --enabled: "md_enabled", "am_enabled"
    std::string transport;
    int ranks;
    const char* op;  // the program
    const char* metric;
    double value;
    int arg;
    const char* cache = "none";
    std::optional<bool> correct = std::nullopt;
    double lo = std::numeric_limits<double>::quiet_NaN();
    double hi = std::numeric_limits<double>::quiet_NaN();
    int reps = 1;
};

/// Prints JSON lines on stdout, and also into --out's file when one was given.
class emitter {
  public:
    explicit emitter(const std::string& out_path);
    ~emitter();
    emitter(const emitter&) = delete;
    emitter& operator=(const emitter&) = delete;
    void add(const point& p);

  private:
    std::FILE* _file = nullptr;
};

/// The default mode: every program of the plan under both policies and its reference under
/// callgrind, both caches; prints the tables (stderr) and JSON lines. Exit status.
int run_table(const plan& p);

}  // namespace am::bench::tam_table
