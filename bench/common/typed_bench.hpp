// SPDX-License-Identifier: MIT
/// @file
/// Shared by the typed-layer benchmarks (typed_rate, epoch_overhead) and their MPI baseline
/// (mpi_typed_baseline): the 16-byte record and the generator that gives both sides exactly
/// the same records and destinations, the options these programs add to the shared ones, the
/// calibration of loop counts, and the launcher of the baseline at any rank count.
/// Header-only; needs neither am nor MPI.
#pragma once

#include "baseline.hpp"
#include "options.hpp"
#include "report.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace am::bench::typed {

/// The message of typed_rate: two 64-bit words.
struct record {
    std::uint64_t key;
    std::uint64_t value;
};
static_assert(sizeof(record) == 16);

/// splitmix64's finaliser.
inline std::uint64_t mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/// The seed of the records `rank` sends in repetition `rep` (the same in the am run and the
/// MPI baseline, so both exchange the same data).
inline std::uint64_t stream_seed(int rank, std::uint64_t rep) noexcept {
    return mix(0x6a09e667f3bcc909ull ^ (static_cast<std::uint64_t>(rank) << 40) ^ rep);
}

/// The i-th record of a stream: a counter-based generator, so records can be produced again
/// (the baseline's two-pass bucketing) without storing them.
inline record record_at(std::uint64_t seed, std::uint64_t i) noexcept {
    return {mix(seed + i * 0x9e3779b97f4a7c15ull), seed ^ i};
}

/// The record's destination: uniform over [0, ranks), the sending rank included.
inline int dest_of(const record& r, int ranks) noexcept {
    return static_cast<int>(((r.key >> 32) * static_cast<std::uint64_t>(ranks)) >> 32);
}

/// What a handler adds to its rank's sum for one record (and the sender for what it sent).
inline std::uint64_t checksum(const record& r) noexcept {
    return r.key ^ r.value;
}

/// Options of the typed programs besides the shared ones (bench/common/options.hpp). They are
/// taken out of argv before the shared parser sees the rest.
struct extra_options {
    std::uint64_t messages = 0;             ///< --messages N: coalesced messages per rank
    std::uint64_t uncoalesced = 0;          ///< --uncoalesced-messages N (default messages/16)
    std::size_t coalesce_bytes = 16 << 10;  ///< --coalesce-bytes B: per-destination buffer
    std::vector<int> ranks;                 ///< --ranks a,b,c (epoch_overhead: a list)
    bool quick = false;                     ///< --quick: smoke run
    bool full = false;                      ///< --full (epoch_overhead): up to 64 ranks
    double min_seconds = 0;                 ///< --min-ms T: a repetition lasts at least this
};

/// argv split into the typed programs' own options and the rest.
class arg_split {
  public:
    arg_split(int argc, char** argv) {
        for (int i = 0; i < argc; ++i) _rest.emplace_back(argv[i]);
        for (int i = 1; i < argc; ++i) _all.emplace_back(argv[i]);
    }

    /// Removes `--flag value` and returns the value (the last one given), if present.
    std::optional<std::string> take(std::string_view flag) {
        std::optional<std::string> v;
        for (std::size_t i = 1; i < _rest.size();) {
            if (_rest[i] == flag) {
                if (i + 1 >= _rest.size()) fail(std::string(flag) + " needs a value");
                v = _rest[i + 1];
                _rest.erase(_rest.begin() + static_cast<std::ptrdiff_t>(i),
                            _rest.begin() + static_cast<std::ptrdiff_t>(i + 2));
            } else {
                ++i;
            }
        }
        return v;
    }
    /// Removes `flag` and says whether it was there.
    bool take_flag(std::string_view flag) {
        const auto n = std::erase(_rest, std::string(flag));
        return n != 0;
    }
    /// argv without the options taken (for `parse_options`); valid while this object lives.
    [[nodiscard]] std::vector<char*> rest() {
        std::vector<char*> v;
        for (std::string& s : _rest) v.push_back(s.data());
        v.push_back(nullptr);
        return v;
    }
    /// argv[1..] as given.
    [[nodiscard]] const std::vector<std::string>& all() const noexcept { return _all; }

    [[noreturn]] void fail(const std::string& msg) const {
        std::fprintf(stderr, "%s: %s (try --help)\n", _rest.empty() ? "bench" : _rest[0].c_str(),
                     msg.c_str());
        std::exit(2);
    }

    /// A count with an optional K/M/G suffix (binary).
    std::uint64_t count(std::string_view flag, const std::string& text) const {
        std::string_view s = text;
        std::uint64_t mult = 1;
        if (!s.empty()) {
            const char last = s.back();
            if (last == 'K' || last == 'k') mult = std::uint64_t{1} << 10;
            if (last == 'M' || last == 'm') mult = std::uint64_t{1} << 20;
            if (last == 'G' || last == 'g') mult = std::uint64_t{1} << 30;
            if (mult != 1) s.remove_suffix(1);
        }
        if (s.empty()) fail(std::string(flag) + " needs a number");
        std::uint64_t v = 0;
        for (char c : s) {
            if (c < '0' || c > '9') fail(std::string(flag) + ": bad number '" + text + "'");
            v = v * 10 + static_cast<std::uint64_t>(c - '0');
        }
        return v * mult;
    }

  private:
    std::vector<std::string> _rest;
    std::vector<std::string> _all;
};

/// Takes the typed programs' options out of `a`. `ranks_list`: --ranks is a comma-separated
/// list (epoch_overhead) rather than the shared single count.
inline extra_options take_extra_options(arg_split& a, bool ranks_list) {
    extra_options x;
    if (auto v = a.take("--messages")) x.messages = a.count("--messages", *v);
    if (auto v = a.take("--uncoalesced-messages")) {
        x.uncoalesced = a.count("--uncoalesced-messages", *v);
    }
    if (auto v = a.take("--coalesce-bytes")) {
        x.coalesce_bytes = static_cast<std::size_t>(a.count("--coalesce-bytes", *v));
    }
    if (auto v = a.take("--min-ms")) {
        x.min_seconds = static_cast<double>(a.count("--min-ms", *v)) / 1e3;
    }
    if (ranks_list) {
        if (auto v = a.take("--ranks")) {
            std::string_view s = *v;
            while (!s.empty()) {
                const std::size_t comma = s.find(',');
                const auto n = a.count("--ranks", std::string(s.substr(0, comma)));
                if (n < 1 || n > 4096) a.fail("--ranks: rank counts must be in [1, 4096]");
                x.ranks.push_back(static_cast<int>(n));
                if (comma == std::string_view::npos) break;
                s.remove_prefix(comma + 1);
            }
        }
    }
    x.quick = a.take_flag("--quick");
    x.full = a.take_flag("--full");
    return x;
}

/// Loop counts calibrated so that a repetition lasts at least `target` seconds: after a trial
/// of `count` iterations that took `elapsed` seconds (as rank 0 measured it, shared by every
/// rank so they agree), the next count to try, or 0 when `count` is enough.
inline std::uint64_t next_count(std::uint64_t count, double elapsed, double target,
                                std::uint64_t cap = std::uint64_t{1} << 24) {
    if (elapsed >= target || count >= cap) return 0;
    const double want = elapsed > 0 ? static_cast<double>(count) * target / elapsed * 1.2
                                    : static_cast<double>(count) * 100;
    const double grown =
        std::min(std::max(want, static_cast<double>(count) * 2), static_cast<double>(count) * 100);
    return std::min(cap, static_cast<std::uint64_t>(std::ceil(grown)));
}

/// Runs `exe` (mpi_typed_baseline) as `mpirun -n <ranks> ... exe <mode> <args> --json`, with the
/// placement of `mpirun_command` (rank r on core r when every rank has a core, else unbound
/// and oversubscribed), adding its result lines to `rep`. Returns false, after saying why on
/// stderr, when the program was not built or the job failed.
inline bool run_typed_baseline(const options& o, const std::string& exe, int ranks,
                               const std::string& mode, const std::vector<std::string>& args,
                               reporter& rep) {
    if (exe.empty() || access(exe.c_str(), X_OK) != 0) {
        static bool said = false;  // once per process, not once per round
        if (!said) {
            std::fprintf(stderr,
                         "bench: NO MPI BASELINE: mpi_typed_baseline was not built (MPI not "
                         "found at configure time, or -DAM_WITH_MPI=OFF); am figures are not "
                         "compared\n");
        }
        said = true;
        return false;
    }
    std::vector<std::string> argv = mpirun_command(o, ranks, o.pin != 0);
    argv.push_back(exe);
    argv.push_back(mode);
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--json");
    const child_outcome c = run_collecting(argv, {}, rep);
    if (c.status != 0 || c.results == 0) {
        std::fprintf(stderr,
                     "bench: NO MPI BASELINE: '%s -n %d ... %s %s' failed (status %d, %d "
                     "results); am figures are not compared\n",
                     argv[0].c_str(), ranks, exe.c_str(), mode.c_str(), c.status, c.results);
        return false;
    }
    return true;
}

}  // namespace am::bench::typed
