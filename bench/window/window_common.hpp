// SPDX-License-Identifier: MIT
/// @file
/// Shared by window_bench (the am side) and mpi_window_baseline (its MPI baselines): the
/// paper's two operations as plain kernels, the data both sides compute on, the JSON line
/// writer with the window keys, and a small option reader. Header-only; needs neither am
/// nor MPI.
#pragma once

#include "lib/options.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

namespace am::bench::window {

// ------------------------------------------------------------------------------- operations

/// Remote search: each segment is a 20-character query in and a 20-character answer out.
inline constexpr std::size_t key_chars = 20;
/// Absolute sum: each segment is 100 ints in and 100 ints out.
inline constexpr std::size_t abssum_ints = 100;
/// Segments of one AM in the paper's experiments.
inline constexpr std::size_t paper_segments = 100;

/// splitmix64's finaliser.
inline std::uint64_t mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

/// 20 lowercase letters from `seed`.
inline void make_key(std::uint64_t seed, char* out) noexcept {
    std::uint64_t h = mix(seed);
    for (std::size_t i = 0; i < key_chars; ++i) {
        if (i % 12 == 11) h = mix(h + i);
        out[i] = static_cast<char>('a' + (h % 26));
        h /= 26;
    }
}

/// The target's persistent database: `n` distinct-ish keys, sorted (memcmp order).
inline std::vector<char> make_database(std::size_t n) {
    std::vector<std::string> keys(n, std::string(key_chars, ' '));
    for (std::size_t j = 0; j < n; ++j) make_key(0x5eed0000ull + j, keys[j].data());
    std::sort(keys.begin(), keys.end());
    std::vector<char> db(n * key_chars);
    for (std::size_t j = 0; j < n; ++j) std::memcpy(&db[j * key_chars], keys[j].data(), key_chars);
    return db;
}

/// The search kernel over `nseg` queries: for each query, the first database key that is not
/// less than it (binary search; an exact match when the query is in the database), or 20 NUL
/// characters when there is none.
inline void search_kernel(const char* in, const char* db, std::size_t db_keys, char* out,
                          std::size_t nseg) noexcept {
    for (std::size_t s = 0; s < nseg; ++s) {
        const char* q = in + s * key_chars;
        std::size_t lo = 0, hi = db_keys;
        while (lo < hi) {
            const std::size_t mid = lo + (hi - lo) / 2;
            if (std::memcmp(db + mid * key_chars, q, key_chars) < 0) {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        char* o = out + s * key_chars;
        if (lo < db_keys) {
            std::memcpy(o, db + lo * key_chars, key_chars);
        } else {
            std::memset(o, 0, key_chars);
        }
    }
}

/// The absolute-sum kernel over `nseg` segments: out[i] = |in[i]| + |p[i]|, where `p` is the
/// persistent array of the unit's segments (segment s uses p[s*100 .. s*100+99]).
inline void abssum_kernel(const std::int32_t* in, const std::int32_t* p, std::int32_t* out,
                          std::size_t nseg) noexcept {
    const std::size_t n = nseg * abssum_ints;
    for (std::size_t i = 0; i < n; ++i) {
        const std::int32_t a = in[i] < 0 ? -in[i] : in[i];
        const std::int32_t b = p[i] < 0 ? -p[i] : p[i];
        out[i] = a + b;
    }
}

/// Input set `set` of an AM of `nseg` search queries: even segments are database keys (hits),
/// odd ones random keys (mostly misses).
inline std::vector<char> make_queries(std::size_t set, std::size_t nseg, std::size_t db_keys) {
    std::vector<char> q(nseg * key_chars);
    for (std::size_t s = 0; s < nseg; ++s) {
        const std::uint64_t h = mix(set * 1000003ull + s);
        if (s % 2 == 0) {
            make_key(0x5eed0000ull + h % db_keys, &q[s * key_chars]);
        } else {
            make_key(h ^ 0xabcdefull, &q[s * key_chars]);
        }
    }
    return q;
}

/// Input set `set` of an absolute-sum AM of `nseg` segments (values in [-10^6, 10^6]).
inline std::vector<std::int32_t> make_ints(std::size_t set, std::size_t nseg) {
    std::vector<std::int32_t> v(nseg * abssum_ints);
    for (std::size_t i = 0; i < v.size(); ++i) {
        v[i] = static_cast<std::int32_t>(mix(set * 7919ull + i) % 2000001) - 1000000;
    }
    return v;
}

/// The target's persistent array of the absolute sum (enough for `nseg` segments).
inline std::vector<std::int32_t> make_persistent_ints(std::size_t nseg) {
    return make_ints(0xfeedull, nseg);
}

/// Bytes of one input segment and one output segment of `op`.
inline std::size_t segment_bytes(std::string_view op) {
    return op == "search" ? key_chars : abssum_ints * sizeof(std::int32_t);
}

// ------------------------------------------------------------------------------------- JSON

/// One JSON line: keys in insertion order, values strings, numbers or null.
class json_line {
  public:
    json_line& str(std::string_view key, std::string_view v) {
        std::string s = "\"";
        for (char c : v) {
            if (c == '"' || c == '\\') s += '\\';
            s += c;
        }
        return raw(key, s + "\"");
    }
    json_line& num(std::string_view key, double v) {
        if (!std::isfinite(v)) return null(key);
        char b[64];
        if (v == std::floor(v) && std::fabs(v) < 1e15) {
            std::snprintf(b, sizeof b, "%.0f", v);
        } else {
            std::snprintf(b, sizeof b, "%.6g", v);
        }
        return raw(key, b);
    }
    json_line& null(std::string_view key) { return raw(key, "null"); }
    /// A number, or null when `v` is negative (not applicable).
    json_line& opt(std::string_view key, double v) { return v < 0 ? null(key) : num(key, v); }
    [[nodiscard]] std::string text() const { return "{" + _body + "}"; }
    /// Prints the line on stdout and flushes (ranks may be forked processes).
    void print() const {
        std::printf("%s\n", text().c_str());
        std::fflush(stdout);
    }

  private:
    json_line& raw(std::string_view key, std::string_view v) {
        if (!_body.empty()) _body += ", ";
        _body += "\"";
        _body += key;
        _body += "\": ";
        _body += v;
        return *this;
    }
    std::string _body;
};

/// Median, min and max of per-repetition values.
struct stats3 {
    double median = 0, min = 0, max = 0;
    int reps = 0;
};
inline stats3 summarize3(std::vector<double> v) {
    stats3 s;
    if (v.empty()) return s;
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    s.median = n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    s.min = v.front();
    s.max = v.back();
    s.reps = static_cast<int>(n);
    return s;
}

/// The keys every window line has, in the order.
struct point_keys {
    std::string figure;     ///< "3a", "3b", "3c", "3d", "4", "5", "6", "7"
    std::string system;     ///< "am", "mpi_rma", "mpi_twosided"
    std::string transport;  ///< "threads", "shm" (am), "mpi" (baselines)
    int ranks = 2;
    std::string op;              ///< "search", "abssum"
    std::uint64_t bytes = 0;     ///< input bytes of one AM (mean over the AMs of the point)
    std::string metric;          ///< "throughput_amps", "latency_us"
    long pipeline_unit = -1;     ///< segments per unit (0: the runtime's choice); -1: n/a
    long internal_buffer = -1;   ///< bytes per origin at the target; -1: n/a
    std::string ordering;        ///< am_order value; empty: n/a
    int concurrent = -1;         ///< 0/1; -1: n/a
    std::uint64_t segments = 0;  ///< segments per AM (of the large AM when they alternate)
    std::uint64_t ams = 0;       ///< AMs per repetition (all origins)
};

inline json_line start_line(const point_keys& k, const stats3& s) {
    json_line j;
    j.str("bench", "window").str("figure", k.figure).str("system", k.system);
    j.str("transport", k.transport).num("ranks", k.ranks).str("op", k.op);
    j.num("bytes", static_cast<double>(k.bytes)).str("metric", k.metric);
    j.num("median", s.median).num("min", s.min).num("max", s.max).num("reps", s.reps);
    j.opt("pipeline_unit", static_cast<double>(k.pipeline_unit));
    j.opt("internal_buffer", static_cast<double>(k.internal_buffer));
    if (k.ordering.empty()) {
        j.null("ordering");
    } else {
        j.str("ordering", k.ordering);
    }
    j.opt("concurrent", k.concurrent);
    j.num("segments", static_cast<double>(k.segments)).num("ams", static_cast<double>(k.ams));
    return j;
}

// ------------------------------------------------------------------------------------ options

/// The options given, read from argv by the one parser (bench/lib/options.hpp): `names` take
/// a value, `flags` do not; anything else is refused there. Values are read with defaults.
class args {
  public:
    args(int argc, char** argv, const char* usage, std::initializer_list<const char*> names,
         std::initializer_list<const char*> flags) {
        std::vector<option_spec> table;
        for (const char* n : names) {
            table.push_back({n, "V", "", [this, n](const std::string& v) { _set[n] = v; }});
        }
        for (const char* f : flags) {
            table.push_back({f, nullptr, "", [this, f](const std::string&) { _set[f] = ""; }});
        }
        (void)parse_args(argc, argv, usage, table);
    }
    [[nodiscard]] bool has(const std::string& k) const { return _set.count(k) != 0; }
    [[nodiscard]] std::string get(const std::string& k, std::string def) const {
        const auto it = _set.find(k);
        return it == _set.end() ? def : it->second;
    }
    template <class F>
    static std::invoke_result_t<F&> checked(F&& read) {
        try {
            return read();
        } catch (const std::invalid_argument& e) {
            fail(e.what());
        }
    }
    [[nodiscard]] std::uint64_t count(const std::string& k, std::uint64_t def) const {
        const auto it = _set.find(k);
        return it == _set.end() ? def : checked([&] { return to_count(k, it->second); });
    }
    [[nodiscard]] std::vector<std::uint64_t> counts(const std::string& k,
                                                    std::vector<std::uint64_t> def) const {
        const auto it = _set.find(k);
        return it == _set.end() ? def : checked([&] { return to_counts(k, it->second); });
    }
    [[noreturn]] static void fail(const std::string& msg) {
        std::fprintf(stderr, "window_bench: %s (try --help)\n", msg.c_str());
        std::exit(2);
    }

  private:
    std::map<std::string, std::string> _set;
};

}  // namespace am::bench::window
