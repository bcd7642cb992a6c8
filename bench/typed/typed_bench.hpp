// SPDX-License-Identifier: MIT
/// @file
/// Shared by the typed-layer benchmarks (typed_rate, epoch_overhead) and their MPI baseline
/// (mpi_typed_baseline): the 16-byte record and the generator that gives both sides exactly
/// the same records and destinations, the options these programs add to the shared ones, and the
/// calibration of loop counts.
/// Header-only; needs neither am nor MPI.
#pragma once

#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"

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

/// Options of the typed programs besides the shared ones (bench/lib/options.hpp).
struct extra_options {
    std::uint64_t messages = 0;             ///< --messages N: coalesced messages per rank
    std::uint64_t uncoalesced = 0;          ///< --uncoalesced-messages N (default messages/16)
    std::size_t coalesce_bytes = 16 << 10;  ///< --coalesce-bytes B: per-destination buffer
    std::vector<int> ranks;                 ///< --ranks a,b,c (epoch_overhead: a list)
    bool quick = false;                     ///< --quick: smoke run
    bool full = false;                      ///< --full (epoch_overhead): up to 64 ranks
    double min_seconds = 0;                 ///< --min-ms T: a repetition lasts at least this
};

/// The typed programs' entries of the option table, bound to `x`. `ranks_list`: --ranks is a
/// comma-separated list (epoch_overhead) rather than the shared single count.
inline std::vector<option_spec> extra_table(extra_options& x, bool ranks_list) {
    std::vector<option_spec> t = {
        {"--messages", "N",
         "typed_rate: records per rank per repetition, coalesced and MPI (default 8M;\n"
         "--quick 16K)",
         store_count(x.messages, "--messages")},
        {"--uncoalesced-messages", "N", "typed_rate: the same for op uncoalesced (messages/16)",
         store_count(x.uncoalesced, "--uncoalesced-messages")},
        {"--coalesce-bytes", "B", "typed_rate: per-destination buffer (default 16K)",
         store_count(x.coalesce_bytes, "--coalesce-bytes")},
        {"--min-ms", "T", "epoch_overhead: a repetition lasts >= T ms (default 20)",
         [&x](const std::string& v) {
             x.min_seconds = static_cast<double>(to_count("--min-ms", v)) / 1e3;
         }},
        {"--quick", nullptr, "smoke run: few messages (typed_rate), 2 ranks, 3 repetitions",
         store_flag(x.quick)},
        {"--full", nullptr, "epoch_overhead: every rank count up to 64 (oversubscribes)",
         store_flag(x.full)},
    };
    if (ranks_list) {
        t.push_back({"--ranks", "a,b,...", "rank counts (default 2,4,8; --full 2,4,8,16,32,64)",
                     [&x](const std::string& v) {
                         x.ranks.clear();
                         for (std::uint64_t n : to_counts("--ranks", v, 1, 4096)) {
                             x.ranks.push_back(static_cast<int>(n));
                         }
                     }});
    }
    return t;
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

}  // namespace am::bench::typed
