// SPDX-License-Identifier: MIT
/// @file
/// Runs a benchmark body on am ranks: configuration from the shared options, core pinning,
/// busy-polling waits, and the path of rank 0's results back to the reporting process
/// (ranks may be forked processes: shm transport, or launched by `amrun`).
#pragma once

#include "options.hpp"
#include "report.hpp"
#include "sys.hpp"

#include <am/am.hpp>

#include <functional>
#include <string>
#include <vector>

namespace am::bench {

/// What a rank body needs besides its context.
class rank_env {
  public:
    rank_env(const options& o, std::string transport, shared_results& out, bool busy)
        : _o(o), _transport(std::move(transport)), _out(out), _busy(busy) {}

    [[nodiscard]] const options& opts() const noexcept { return _o; }
    [[nodiscard]] const std::string& transport() const noexcept { return _transport; }

    /// Polls until `pred()` holds: a pure busy poll when every rank has a core (the latency
    /// path, as MPI's own progress engine does), else `ctx.wait` with its back-off.
    template <class Pred>
    void wait(am::context& ctx, Pred&& pred) const {
        if (_busy) {
            while (!pred()) ctx.poll();
        } else {
            ctx.wait(pred);
        }
    }

    /// Rank 0 reports one point from per-repetition values (system "am" unless given; system
    /// "memcpy" is a single-core figure, transport "none").
    void report(am::context& ctx, const char* bench, const char* op, std::size_t bytes,
                const char* metric, const std::vector<double>& per_rep,
                const char* system = "am") const;

  private:
    const options& _o;
    std::string _transport;
    shared_results& _out;
    bool _busy;
};

using rank_body = std::function<void(am::context&, rank_env&)>;

/// How to run a job besides the options.
struct job_params {
    std::size_t segment_bytes = 0;  ///< at least this segment per rank
    bool hop = true;                ///< measure the cache-line hop between ranks 0 and 1 first
    am::rma_path rma = am::rma_path::automatic;  ///< how put/get travel (`config::rma`)
};

/// Runs `body` on every rank (transport, ranks and pinning from `o`, bench name `o.bench`),
/// then adds rank 0's results to `rep` if this process is the one that reports (the
/// launcher, or rank 0 under `amrun`; `reporting` says which). Returns am::run's status.
int run_am_job(const options& o, const job_params& p, const rank_body& body, reporter& rep,
               bool& reporting);

/// One round: the am job and its baseline, results into `rep`. Returns a status; sets
/// `reporting` false in a process that must stay silent (an am rank other than 0 under amrun).
using round_fn = std::function<int(reporter& rep, bool& reporting)>;

/// Runs `round` `o.rounds` times (alternating am and baseline runs, so a change of machine
/// state mid-way hits both) and prints the results in `mode`: as they come for one round,
/// else pooled by `pool_rounds` at the end. The per-round results go to `kept` if given.
int run_rounds(const options& o, output mode, const round_fn& round,
               std::vector<std::vector<result>>* kept = nullptr);

}  // namespace am::bench
