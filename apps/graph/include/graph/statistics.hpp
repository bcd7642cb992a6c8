// SPDX-License-Identifier: MIT
/// @file
/// The Graph500 statistics block (header-only, no dependency on `am`): the five-number summary,
/// mean and standard deviation of the per-root times, edges and TEPS, and the harmonic mean of
/// the TEPS with its standard deviation as the Graph500 specification gives it. Shared by
/// am-graph500 and the OpenMP reference (bench/graph/omp_graph_ref), so both print the same
/// block. Thread-safety: pure functions.
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <utility>
#include <vector>

namespace am::graph::stats {

struct summary {
    double min, q1, median, q3, max, mean, stddev;
};

/// Summary of `v` (non-empty): quartiles by linear interpolation, sample standard deviation.
inline summary summarize(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    auto quantile = [&](double q) {
        const double pos = q * static_cast<double>(v.size() - 1);
        const auto lo = static_cast<std::size_t>(pos);
        const std::size_t hi = std::min(lo + 1, v.size() - 1);
        return v[lo] + (v[hi] - v[lo]) * (pos - static_cast<double>(lo));
    };
    double sum = 0, sq = 0;
    for (const double x : v) sum += x;
    const double mean = sum / static_cast<double>(v.size());
    for (const double x : v) sq += (x - mean) * (x - mean);
    const double sd = v.size() > 1 ? std::sqrt(sq / static_cast<double>(v.size() - 1)) : 0;
    return {v.front(), quantile(0.25), quantile(0.5), quantile(0.75), v.back(), mean, sd};
}

/// Prints Graph500's lines for `what` ("time", "nedge", "TEPS") of `kernel` on stdout.
inline void print_summary(const char* kernel, const char* what, const summary& s) {
    std::printf(
        "%s min_%s: %.6g\n%s firstquartile_%s: %.6g\n%s median_%s: %.6g\n"
        "%s thirdquartile_%s: %.6g\n%s max_%s: %.6g\n%s mean_%s: %.6g\n"
        "%s stddev_%s: %.6g\n",
        kernel, what, s.min, kernel, what, s.q1, kernel, what, s.median, kernel, what, s.q3, kernel,
        what, s.max, kernel, what, s.mean, kernel, what, s.stddev);
}

/// Graph500's TEPS figure: the harmonic mean of `teps` (positive, non-empty) and its standard
/// deviation as the specification gives it.
inline std::pair<double, double> harmonic(const std::vector<double>& teps) {
    double inv = 0;
    for (const double t : teps) inv += 1 / t;
    const double n = static_cast<double>(teps.size());
    const double hmean = n / inv;
    double sq = 0;
    for (const double t : teps) sq += (1 / t - inv / n) * (1 / t - inv / n);
    return {hmean, n > 1 ? std::sqrt(sq) / (n - 1) * hmean * hmean : 0};
}

}  // namespace am::graph::stats
