// SPDX-License-Identifier: MIT
/// @file
/// Message epochs of the typed layer: `am::epoch`, its options and its statistics
/// (part of <am/typed.hpp>).
#pragma once

#include <am/context.hpp>
#include <am/detail/typed.hpp>
#include <am/error.hpp>

#include <cstddef>
#include <cstdint>
#include <exception>
#include <string>

namespace am {

/// Statistics of one epoch on one rank.
struct epoch_stats {
    std::uint64_t epoch = 0;             ///< the epoch's number on this rank (1, 2, ...)
    std::uint64_t messages_sent = 0;     ///< typed messages this rank sent in it (after dedup
                                         ///< and combining)
    std::uint64_t messages_handled = 0;  ///< typed messages of the epoch handled on this rank
    std::uint64_t batches_sent = 0;      ///< core messages that carried them
    std::uint64_t bytes_sent = 0;        ///< payload bytes of those core messages
    std::uint64_t dedup_hits = 0;        ///< messages dropped by `dedup` layers
    std::uint64_t combined = 0;          ///< messages folded into another by `reduce_by_key`
    std::uint64_t waves = 0;             ///< reduction rounds the termination detector ran
    double seconds = 0;                  ///< from the epoch's start to its end on this rank
    /// Messages per core message (1 without coalescing); 0 when nothing was sent.
    [[nodiscard]] double coalescing_ratio() const noexcept {
        return batches_sent == 0
                   ? 0.0
                   : static_cast<double>(messages_sent) / static_cast<double>(batches_sent);
    }
    /// One line of text, e.g. "epoch 3: sent 1000 in 2 batches (ratio 500.0) ...".
    [[nodiscard]] std::string to_string() const;
};

/// How an epoch detects its end.
struct epoch_options {
    /// -1 (default): handlers may send to any depth; the general detector (four counters
    /// over a sum reduction) needs at least two reduction rounds. d ≥ 0: a promise that
    /// messages nest at most d deep (0: handlers send nothing; 1: handlers of messages sent by
    /// the rank's code may send, their handlers may not; at most 6). The epoch then ends after
    /// a single reduction round when everything has arrived, and a send deeper than d throws
    /// `am::error` (errc::bad_context).
    int depth = -1;
};

namespace detail {
void epoch_begin(typed_layer* l, const epoch_options& opt);
std::uint64_t epoch_end(typed_layer* l, std::uint64_t value, epoch_stats& out);
void epoch_abandon(typed_layer* l) noexcept;
std::size_t typed_memory_bytes(const typed_layer* l);
}  // namespace detail

/// Bytes the typed layer of `ctx`'s rank holds for its own bookkeeping: the layer object, the
/// message-type registry with each type's per-peer counts (O(ranks) per type), the epoch
/// history kept for AM_STATS and batches waiting for their epoch. Coalescing buffers and dedup
/// or combining caches are the program's objects and not included (`coalesced::buffer_bytes`).
/// Call from the rank's thread outside a handler.
[[nodiscard]] inline std::size_t typed_memory_bytes(context& ctx) {
    return detail::typed_memory_bytes(detail::typed_of(ctx));
}

/// A message epoch (AM++ §3.3): collective, scoped. Every typed message sent while it is
/// open — by the rank's code, or by handlers, to any depth — has been handled on every rank
/// when `end()` returns on any rank. Begin and end it on every rank, one epoch at a time;
/// the destructor ends it if `end()` was not called (unless an exception is unwinding).
/// Starting costs nothing; ending is the termination detector (`epoch_options`), which
/// flushes every coalescing and combining layer and handles arriving messages while it waits.
/// Not callable from a handler. A message of an epoch this rank has not begun yet (a faster
/// peer began it) waits, copied, until this rank begins that epoch: handlers never run before
/// the program on their rank has reached the epoch.
/// With `config::epoch_timeout` set, an end that takes longer prints this rank's per-peer
/// and per-type counts of the epoch and brings the job down (errc::timeout).
class epoch {
  public:
    explicit epoch(context& ctx, epoch_options opt = {}) : _layer(detail::typed_of(ctx)) {
        detail::epoch_begin(_layer, opt);
    }
    ~epoch() noexcept(false) {
        if (_ended) return;
        if (std::uncaught_exceptions() > _unwinding) {
            detail::epoch_abandon(_layer);
            return;
        }
        (void)end();
    }
    epoch(const epoch&) = delete;
    epoch& operator=(const epoch&) = delete;

    /// Ends the epoch (collective) and returns the sum of `value` over all ranks.
    std::uint64_t end(std::uint64_t value = 0) {
        if (_ended) {
            detail::typed_fail(_layer, errc::bad_context, "am::epoch::end",
                               "the epoch has already ended");
        }
        try {
            const std::uint64_t sum = detail::epoch_end(_layer, value, _stats);
            _ended = true;
            return sum;
        } catch (const error& e) {
            // Called where it may not be (a handler): the epoch stays open. Otherwise (the job
            // is going down, a timeout) the library has closed it.
            if (e.code() != errc::bad_context) _ended = true;
            throw;
        }
    }
    /// This rank's statistics of the epoch; complete once it has ended.
    [[nodiscard]] const epoch_stats& stats() const noexcept { return _stats; }

  private:
    detail::typed_layer* _layer;
    int _unwinding = std::uncaught_exceptions();
    bool _ended = false;
    epoch_stats _stats;
};

}  // namespace am
