// SPDX-License-Identifier: MIT
/// @file
/// The Graph500 result line, shared by the PBGL baseline (pbgl_baseline.cpp) and the launcher
/// (graph500_bench.cpp), and written in the same form by `am-graph500 --json`: the keys of
/// every benchmark line (bench/lib/report.hpp: bench "graph500", metric "teps", op the
/// kernel, bytes 0, median/min/max over the roots, reps the number of roots) followed by
/// scale, edgefactor, harmonic_mean (Graph500's TEPS figure) and validated.
/// Header-only; needs neither am nor MPI.
#pragma once

#include "lib/report.hpp"

#include <graph/generator.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace am::bench::graph500 {

/// A baseline's option check: exits with status 2, naming `who` and the bad field, when `spec`
/// is not a graph the generator makes (graph::check_spec).
inline void check_spec_or_exit(const am::graph::graph_spec& spec, const char* who) {
    try {
        am::graph::check_spec(spec);
    } catch (const std::invalid_argument& e) {
        std::fprintf(stderr, "%s: %s (try --help)\n", who, e.what());
        std::exit(2);
    }
}

/// One kernel's TEPS over its roots, as one JSON line.
struct teps_line {
    result base;  ///< the keys every benchmark line has
    int scale = 0;
    int edgefactor = 0;
    double harmonic_mean = 0;  ///< of the per-root TEPS
    bool validated = false;    ///< every root's result passed validation
    /// am-graph500 only: the median of the runs' levels (BFS levels, SSSP rounds, CC rounds,
    /// PageRank iterations); 0 when the line has none (PBGL's).
    double levels = 0;
    /// am-graph500's and the OpenMP reference's SSSP lines: the Δ used; 0 when absent.
    double delta = 0;
};

/// Harmonic mean of positive values (0 when empty or when one is not positive).
inline double harmonic_mean(const std::vector<double>& v) {
    double inv = 0;
    for (double x : v) {
        if (x <= 0) return 0;
        inv += 1 / x;
    }
    return v.empty() ? 0 : static_cast<double>(v.size()) / inv;
}

/// The number after `"key":` in a flat JSON object, if present.
inline std::optional<double> json_number(std::string_view line, std::string_view key) {
    std::string pattern(1, '"');  // appended piecewise: GCC 12 misreads "a" + string (-Wrestrict)
    pattern.append(key);
    pattern.append("\":");
    const std::size_t at = line.find(pattern);
    if (at == std::string_view::npos) return std::nullopt;
    const std::string rest(line.substr(at + pattern.size()));
    char* end = nullptr;
    const double v = std::strtod(rest.c_str(), &end);
    if (end == rest.c_str()) return std::nullopt;
    return v;
}

/// The line, with the extra keys after the common ones.
inline std::string to_json(const teps_line& t) {
    std::string s = am::bench::to_json(t.base);
    s.pop_back();  // the closing brace
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  ",\"scale\":%d,\"edgefactor\":%d,\"harmonic_mean\":%.6g,\"validated\":%s}",
                  t.scale, t.edgefactor, t.harmonic_mean, t.validated ? "true" : "false");
    return s + buf;
}

/// Parses a Graph500 line (ours or am-graph500's); nullopt for any other line.
inline std::optional<teps_line> parse(std::string_view line) {
    const std::optional<result> r = from_json(line);
    if (!r || std::string_view(r->bench) != "graph500" || std::string_view(r->metric) != "teps") {
        return std::nullopt;
    }
    teps_line t;
    t.base = *r;
    t.scale = static_cast<int>(json_number(line, "scale").value_or(0));
    t.edgefactor = static_cast<int>(json_number(line, "edgefactor").value_or(0));
    t.harmonic_mean = json_number(line, "harmonic_mean").value_or(0);
    t.validated = line.find("\"validated\":true") != std::string_view::npos;
    t.levels = json_number(line, "levels").value_or(0);
    t.delta = json_number(line, "delta").value_or(0);
    return t;
}

}  // namespace am::bench::graph500
