// SPDX-License-Identifier: MIT
/// @file
/// The one results format of every benchmark: a `result` per (system, op, size, metric) with
/// median, min and max over repetitions, printed as JSON lines with exactly the keys
/// bench, system, transport, ranks, op, bytes, metric, median, min, max, reps.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace am::bench {

/// One reported point. Plain data with fixed-size strings, so ranks that are forked processes
/// can hand it to the launcher through shared memory.
struct result {
    char bench[32] = {};
    char system[16] = {};     ///< "am", "mpi", "memcpy", or a ratio "am/mpi", "am/memcpy"
    char transport[16] = {};  ///< "shm", "threads", "mpi", "none"
    char op[24] = {};         ///< "short", "medium", "long", "send_recv", "isend_window", ...
    char metric[24] = {};     ///< unit in the name: latency_us, rate_Mmsgps, bandwidth_GBps
    int ranks = 0;
    int reps = 0;
    std::uint64_t bytes = 0;
    double median = 0, min = 0, max = 0;
};

/// Median, min and max of per-repetition values.
struct summary {
    double median, min, max;
    int reps;
};
summary summarize(std::vector<double> values);

/// The ratio num/den of two summaries: median = num.median / den.median; min and max are the
/// range the ratio can take over the repetitions, num.min / den.max and num.max / den.min
/// (the ratio of the minima and the ratio of the maxima are not a range: the median may lie
/// outside them). Only the summaries are kept, so the repetitions cannot be paired; the range
/// is the widest the two min-max ranges allow. reps = the smaller count. Every denominator
/// figure must be positive (the caller checks).
summary ratio_of(const summary& num, const summary& den);

/// Builds a result; strings longer than the fields are truncated.
result make_result(std::string_view bench, std::string_view system, std::string_view transport,
                   int ranks, std::string_view op, std::uint64_t bytes, std::string_view metric,
                   const summary& s);

/// Where results are printed as they are added.
enum class output {
    table,      ///< table rows on stdout
    json,       ///< JSON lines on stdout, and the whole table on stderr at the end
    json_only,  ///< JSON lines on stdout only (a baseline child whose parent prints the table)
    quiet,      ///< nothing: results are only kept (for lookups and ratios)
};

/// Prints results as they come and keeps them for lookups and ratios.
class reporter {
  public:
    explicit reporter(output mode) : _mode(mode) {}
    ~reporter();
    reporter(const reporter&) = delete;
    reporter& operator=(const reporter&) = delete;

    void add(const result& r);
    [[nodiscard]] const std::vector<result>& results() const noexcept { return _all; }
    /// The first result matching the key fields, if any.
    [[nodiscard]] std::optional<result> find(std::string_view system, std::string_view op,
                                             std::uint64_t bytes, std::string_view metric) const;
    /// Adds a ratio line num/den for every (bytes) present in both sets, figures as `ratio_of`
    /// gives them: median = ratio of the medians, min = num.min / den.max, max = num.max /
    /// den.min.
    void add_ratios(std::string_view num_system, std::string_view num_op,
                    std::string_view den_system, std::string_view den_op, std::string_view metric,
                    std::string_view ratio_metric);
    /// Adds a ratio line for every `system` result with `metric` on `num_transport` over the
    /// same point (op, bytes) on `den_transport`: system "<system>-<num>/<system>-<den>" (e.g.
    /// "am-ucx/am-mpi"), transport `num_transport`, figures as `add_ratios` gives them.
    void add_transport_ratios(std::string_view system, std::string_view num_transport,
                              std::string_view den_transport, std::string_view metric,
                              std::string_view ratio_metric);
    /// Prints the table of everything added so far (done by the destructor with --json).
    void print_table(std::FILE* out) const;

  private:
    static void print_header(std::FILE* out);
    static void print_row(std::FILE* out, const result& r);

    output _mode;
    std::vector<result> _all;
};

/// The distinct `bytes` of the `am` results with `metric` (any metric when empty), in
/// increasing order: the sizes a baseline must measure.
std::vector<std::size_t> am_sizes(const reporter& rep, std::string_view metric = {});

/// Pools the results of several rounds (each a full am run + baseline run): per key (all
/// fields but the numbers), median of the round medians, min of the minima, max of the
/// maxima, reps summed. Keeps the order in which keys first appear.
std::vector<result> pool_rounds(const std::vector<std::vector<result>>& rounds);

/// One JSON line in the format above.
std::string to_json(const result& r);
/// Parses a line written by `to_json` (flat object, string and number values); nullopt if the
/// line is not such an object.
std::optional<result> from_json(std::string_view line);

}  // namespace am::bench
