// SPDX-License-Identifier: MIT
/// @file
/// The am side shared by rma_lat and rma_bw: the windows the ranks expose in their segments,
/// the completion counters, the message that ends a point, data checks, default sizes, the
/// put/get paths to measure and their op labels.
#pragma once

#include "lib/am_harness.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <am/am.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace am::bench {

/// Sizes of the RMA programs: --sizes if given; a power-of-two sweep if --min-bytes or
/// --max-bytes is given; else 8 B, 64 B, 512 B, 4 KiB, 32 KiB, 256 KiB, 1 MiB, 4 MiB.
std::vector<std::size_t> rma_sizes(const options& o);

/// Whether to run `op`: those named by --ops, else the ops that run by default.
bool rma_wants(const options& o, std::string_view op, bool by_default = true);

/// The put/get paths to measure (--rma auto|am|both, default both; one under `amrun`, which
/// attaches a process to its job only once).
std::vector<am::rma_path> rma_paths(const options& o);

/// The op label of `op` on path `p`: `op` on the automatic path (direct copies where the
/// target's segment is mapped), `op` + "_am" on the active-message path.
std::string rma_op(std::string_view op, am::rma_path p);

/// A segment large enough for the windows of `sizes`.
std::size_t rma_segment_bytes(const std::vector<std::size_t>& sizes);

/// One RMA body run on a rank: the path it runs on; `first` is true for the first path of a
/// round (which also measures the cache-line hop and any single-core references).
using rma_body = std::function<void(am::context&, rank_env&, am::rma_path path, bool first)>;

/// One round of an RMA program: an am job per path in `rma_paths(o)`, results into `rep`.
/// Returns the first non-zero am::run status, else 0; `reporting` as in `run_am_job`.
int run_rma_jobs(const options& o, const rma_body& body, reporter& rep, bool& reporting);

/// Rank-local state of the RMA programs. Every rank exposes a window in its segment: a get
/// region filled with `pattern(rank)` and never written, and a put region written by the peer.
/// Ranks 0 and 1 are the pair that measures (0 the origin, except in ping-pongs); other ranks
/// only take part in the collectives.
///
/// Counters are created in the same order on every rank, so a put's flag names the same
/// counter everywhere (`am::counter`). Expected counts only grow: counters are never reset.
class rma_ranks {
  public:
    /// Collective: registers the stop handler, allocates and exchanges the windows (regions
    /// of at least `bytes`, page-aligned).
    rma_ranks(am::context& ctx, std::size_t bytes);
    rma_ranks(const rma_ranks&) = delete;
    rma_ranks& operator=(const rma_ranks&) = delete;

    /// The byte every rank's puts carry and its get region holds.
    static std::byte pattern(int rank) { return static_cast<std::byte>(0xa0 + rank); }

    am::context& ctx;
    int peer;  ///< the other rank of the pair; -1 on ranks >= 2

    am::counter put_flag;  ///< target flag of timed puts (counted by the target at the end)
    am::counter pp_flag;   ///< flag of the put ping-pong (both ranks wait on it)
    am::counter done;      ///< origin-side completion of puts (`put(..., flag, done)`)
    am::counter got;       ///< flag of gets

    std::uint64_t puts_flagged = 0;  ///< puts sent with `put_flag` (rank 0)
    std::uint64_t want_done = 0;     ///< count of `done` to wait for next
    std::uint64_t want_got = 0;      ///< count of `got` to wait for next
    std::uint64_t want_pp = 0;       ///< count of `pp_flag` to wait for next

    page_buffer src;  ///< source of puts (`pattern(rank)`)
    page_buffer dst;  ///< destination of gets

    am::global_ptr<std::byte> peer_get;  ///< the peer's get region
    am::global_ptr<std::byte> peer_put;  ///< the peer's put region

    /// Collective start of a point: clears the bytes `check` looks at, then a barrier.
    void begin(std::size_t bytes);
    /// Rank 0: tells rank 1 the point is over. Rank 1: serves (polls) until told so and until
    /// `put_flag` has counted every flagged put of rank 0. Then a collective barrier.
    void end(const rank_env& env);

    /// Aborts the job with a message naming `what` unless the first and last byte of the get
    /// destination (rank 0) came from the peer's get region.
    void check_get(std::string_view what, std::size_t bytes);
    /// The same for this rank's put region, written by the peer.
    void check_put(std::string_view what, std::size_t bytes);

  private:
    [[nodiscard]] std::byte* my_put() const;
    [[noreturn]] void fail(std::string_view what, std::size_t bytes, std::size_t at, std::byte got,
                           std::byte want);

    std::uint64_t _stops = 0, _stops_seen = 0, _stop_flags = 0;
    am::handler<am::category::short_am, std::uint64_t> _stop;
    am::global_ptr<std::byte> _mine;  ///< this rank's get region; the put region follows
    std::size_t _region = 0;
};

}  // namespace am::bench
