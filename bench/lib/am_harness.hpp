// SPDX-License-Identifier: MIT
/// @file
/// Runs a benchmark body on am ranks: configuration from the shared options, core pinning,
/// busy-polling waits, and the path of rank 0's results back to the reporting process
/// (ranks may be forked processes: shm transport, or launched by `amrun`; or the processes of
/// an MPI job: mpi or ucx transport, started by the user's mpirun or by the benchmark itself;
/// `--transport ucx,mpi` starts one job per transport, in turn, in every round).
#pragma once

#include "options.hpp"
#include "report.hpp"
#include "sys.hpp"

#include <am/am.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

namespace am::bench {

/// Reads every byte of `p` and returns their sum as 64-bit little words (the tail bytewise):
/// what a handler that uses a payload costs at least, and a check that it arrived intact.
/// Several independent accumulators, so that the read runs at load bandwidth, not at one add
/// per cycle.
[[nodiscard]] std::uint64_t read_sum(std::span<const std::byte> p) noexcept;

/// Fills `p` with a pattern whose `read_sum` differs for every prefix length a benchmark uses
/// (no zero words), so a payload that arrived short, stale or overwritten is noticed.
void fill_pattern(std::span<std::byte> p) noexcept;

/// The mpi transport: what idle ranks wait for (see `rank_env::idle`).
struct idle_state {
    am::handler<am::category::short_am> release;
    std::uint64_t released = 0;  // releases handled
    std::uint64_t waits = 0;     // idle() calls so far
};

/// What a rank body needs besides its context.
class rank_env {
  public:
    rank_env(const options& o, std::string transport, shared_results& out, bool busy)
        : _o(o), _transport(std::move(transport)), _out(out), _busy(busy) {}

    [[nodiscard]] const options& opts() const noexcept { return _o; }
    /// The `transport` value of the results (for the current peer, see `use_peer`).
    [[nodiscard]] const std::string& transport() const noexcept { return _transport; }

    /// The ranks that rank 0 measures against, in turn: --peers (those in range), else 1 (0 in
    /// a job of one rank); on the mpi transport with nodes of several ranks, 1 and the first
    /// rank of another node, when the job has them.
    [[nodiscard]] std::vector<int> peers(const am::context& ctx) const;
    /// Results from now on are about `peer`. On the mpi transport with nodes of several ranks
    /// the transport value says how the peer is reached: "mixed-shm" (on rank 0's node: shared
    /// memory) or "mixed-mpi" (on another node: MPI). Elsewhere it changes nothing.
    void use_peer(int peer);

    /// A rank that takes no part in a point (neither rank 0 nor the peer) calls this before
    /// the barrier that ends the point. mpi transport: returns when rank 0 has called
    /// `release_idle`, polling with sleeps in between, so that ranks oversubscribing the cores
    /// leave them to the two that measure. Elsewhere it returns at once (as before).
    void idle(am::context& ctx) const;
    /// Rank 0, when it has measured a point against `peer`: releases the ranks in `idle`.
    void release_idle(am::context& ctx, int peer) const;

    /// mpi transport: `idle_state` for idle/release_idle, and whether each rank shares rank 0's
    /// node (from the communicator, as the transport groups them).
    void set_mpi(idle_state* idle, std::vector<bool> same_node_as_0) {
        _idle = idle;
        _same_node = std::move(same_node_as_0);
    }

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
    idle_state* _idle = nullptr;
    std::vector<bool> _same_node;
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
///
/// --transport mpi: started by an MPI launcher, this process is one rank of the job (rank 0
/// reports; with --mpi-child it prints its JSON lines itself and `reporting` is false);
/// otherwise the program starts itself under mpirun (`mpirun -n <ranks> --bind-to core ...
/// <program> <arguments> --mpi-child`) and adds the results rank 0 prints to `rep`.
int run_am_job(const options& o, const job_params& p, const rank_body& body, reporter& rep,
               bool& reporting);

/// Called by a program that supports --transport mpi (am_pingpong, am_flood) after parsing:
/// allows it, and makes it the default when the program was started by an MPI launcher
/// without --transport. Other programs refuse --transport mpi.
void allow_mpi_transport(options& o);

/// One round: the am job and its baseline, results into `rep`. Returns a status; sets
/// `reporting` false in a process that must stay silent (an am rank other than 0 under amrun).
using round_fn = std::function<int(reporter& rep, bool& reporting)>;

/// Runs `round` `o.rounds` times (alternating am and baseline runs, so a change of machine
/// state mid-way hits both) and prints the results in `mode`: as they come for one round,
/// else pooled by `pool_rounds` at the end. The per-round results go to `kept` if given.
/// In the processes of an MPI job (--transport mpi under mpirun) every rank goes through the
/// rounds; between them the ranks other than 0 wait, sleeping, while rank 0 runs the baseline.
int run_rounds(const options& o, output mode, const round_fn& round,
               std::vector<std::vector<result>>* kept = nullptr);

/// One round of a program as `bench_main` runs it: the am side (`run_am_job`, `run_rma_jobs`),
/// returning its status, then, when it succeeded in the reporting process, the baselines,
/// false when a wanted one could not run (the ratios too).
struct round_parts {
    std::function<int(reporter& rep, bool& reporting)> am;
    std::function<bool(reporter& rep)> baselines;
};

/// The options of program `name` (its "bench" key and the name in its messages): the shared
/// table extended by `extra`; `mpi_ok`: it supports --transport mpi (`allow_mpi_transport`).
options bench_options(int argc, char** argv, const char* name, const char* summary,
                      std::span<const option_spec> extra = {}, bool mpi_ok = false);

/// The rest of every bench main: `o.rounds` rounds of `parts` (`run_rounds`, JSON with
/// --json) and the exit status: the am side's when it failed, else `no_baseline_status` when
/// a wanted baseline could not run, else 0. Results printed in `mode`, per-round results kept
/// in `kept` if given (as `run_rounds` does).
int bench_main(const options& o, const round_parts& parts, output mode,
               std::vector<std::vector<result>>* kept = nullptr);
/// `bench_main` with output JSON lines (--json) or a table.
int bench_main(const options& o, const round_parts& parts);

/// A program without options of its own, as `bench_main` runs it.
struct bench_program {
    const char* name;     ///< its "bench" key and the name in its messages
    const char* summary;  ///< what --help says it measures
    /// The am side of one round (`run_am_job`, `run_rma_jobs`); returns its status.
    std::function<int(const options& o, reporter& rep, bool& reporting)> am;
    /// Its baselines, once the am side succeeded; false when a wanted one could not run.
    std::function<bool(const options& o, reporter& rep)> baselines;
};

/// The whole main of such a program: `bench_options`, then `bench_main` of its parts.
int bench_main(int argc, char** argv, const bench_program& p);

/// True, after saying so on stderr, when --no-baseline asked to skip the MPI baseline.
bool baseline_skipped(const options& o);

/// The arguments of an MPI baseline child that measures `sizes` for `o.bench`:
/// `forwarded_options`, --bench and --sizes.
std::vector<std::string> baseline_args(const options& o, const std::vector<std::size_t>& sizes);

}  // namespace am::bench
