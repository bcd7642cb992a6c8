// SPDX-License-Identifier: MIT
/// @file
/// The UCX baseline of am_pingpong and am_flood: UCX's own benchmark, `ucx_perftest` (Debian
/// `ucx-utils`), run as a server and a client process on this host over UCX's shared-memory
/// transports (`UCX_TLS=sm,self`, or --ucx-tls), pinned to the two cores the am ranks use, on the
/// sizes the am run measured, with the same iterations and repetitions; its figures become JSON
/// lines with system "ucx", transport "ucx-sm". Optional: when ucx_perftest is not installed the
/// baseline is skipped with a one-line note and the benchmark's status is unaffected.
#pragma once

#include "options.hpp"
#include "report.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace am::bench {

/// The UCX tests used: `ucp_am_lat` (ping-pong of UCP active messages; ucx_perftest reports
/// half the round trip, like am_pingpong) and `ucp_am_bw` (the client streams UCP active
/// messages to the server: message rate and bandwidth, like am_flood).
enum class ucx_test { am_lat, am_bw };

/// One point of the baseline: a test at one message size, and what to report of it.
struct ucx_point {
    ucx_test test;
    std::size_t bytes;
    std::uint64_t iters;   ///< timed iterations per repetition (`-n`)
    std::uint64_t warmup;  ///< untimed iterations before each repetition (`-w`)
    /// "latency_us" (am_lat), "rate_Mmsgps" or "bandwidth_GBps" (am_bw).
    std::string metric;
};

/// The points of `test` at `sizes` with the iterations and warm-up of `plan` (as the am run
/// measured them), appended to `points`.
void add_ucx_points(std::vector<ucx_point>& points, const options& o, ucx_test test,
                    const std::vector<std::size_t>& sizes, const work_plan& plan,
                    const std::string& metric);

/// The op name of a test in the results: "ucp_am_lat" or "ucp_am_bw".
const char* ucx_op(ucx_test t);

/// Runs the UCX baseline of one benchmark, once per round. Holds what must persist across the
/// rounds of one invocation (the program's path, whether the skip note was printed).
class ucx_baseline {
  public:
    /// Resolves ucx_perftest: --ucx-perftest PATH, else `ucx_perftest` on PATH.
    ucx_baseline(const options& o, std::string bench);

    /// Runs every point `o.reps` times (one ucx_perftest batch: a server and a client process)
    /// and adds the results to `rep`, preceded by the cache-line hop between the two cores it
    /// ran on. Returns false, after saying why on stderr, only when the baseline was wanted,
    /// ucx_perftest is there, and it failed; a skipped baseline (--no-baseline, --no-ucx,
    /// not installed, fewer than 2 cores, --transport mpi without ucx) returns true after a note.
    /// With --ucx-tls A/B/..., one batch per UCX_TLS value, in that order (transport "ucx-<its
    /// first transport>"; ratios are taken against the first).
    bool run(const std::vector<ucx_point>& points, reporter& rep);

  private:
    /// Why the baseline is not run, or empty.
    [[nodiscard]] std::string skip_reason() const;
    void note(const std::string& why);
    /// One batch with UCX_TLS=`tls`.
    bool run_tls(const std::vector<ucx_point>& points, const std::string& tls, reporter& rep);

    const options& _o;
    std::string _bench;
    std::string _exe;  // empty: not found
    bool _noted = false;
};

}  // namespace am::bench
