// SPDX-License-Identifier: MIT
// context_impl: collectives — barrier with the handler-table handshake, allgather, allreduce
// and quiescence.
#include "context_common.hpp"

#include "../util/backoff.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>

namespace am::detail {

void context_impl::idle(unsigned& backoff) {
    util::backoff(backoff, _tp.spin_limit());
}

void context_impl::poll_or_idle(unsigned& backoff) {
    if (poll() != 0) {
        backoff = 0;
    } else {
        idle(backoff);
    }
}

void context_impl::barrier(transport::coll_kind kind, const char* call) {
    if (in_handler()) fail(errc::bad_context, call, _rank, "called from a handler");
    const trace_span span(trace(), trace_kind::wait,
                          static_cast<std::uint32_t>(trace_cause::barrier));
    check_tables(kind);
}

void context_impl::allgather(transport::coll_kind kind, const void* in, void* out,
                             std::size_t bytes, const char* call) {
    if (in_handler()) fail(errc::bad_context, call, _rank, "called from a handler");
    if (bytes > _tp.max_gather_bytes()) {
        fail(errc::too_large, call, _rank,
             std::to_string(bytes) + " bytes per rank exceed the bootstrap limit of " +
                 std::to_string(_tp.max_gather_bytes()));
    }
    _tp.allgather(kind, in, out, bytes, [this] { return poll(); }, {});
}

void context_impl::allreduce_sum(transport::coll_kind kind, const std::uint64_t* in,
                                 std::uint64_t* out, std::size_t n, const transport::idle_fn& idle,
                                 const char* call) {
    if (in_handler()) fail(errc::bad_context, call, _rank, "called from a handler");
    if (n > transport::transport::max_reduce_words) {
        fail(errc::too_large, call, _rank,
             std::to_string(n) + " words exceed the reduction limit of " +
                 std::to_string(transport::transport::max_reduce_words));
    }
    _tp.allreduce_sum(kind, in, out, n, idle);
}

void context_impl::check_tables(transport::coll_kind kind) {
    struct digest {
        std::uint64_t count, hash;
    };
    const std::uint32_t n = _table.count();
    const digest mine{n, _table.digest(n)};
    std::vector<digest> all(static_cast<std::size_t>(_size));
    bool same = true;
    std::uint64_t most = 0;
    // Seal before any handler can run during the exchange: a peer that has seen the same
    // digests (this rank's among them) may already send with the new handlers, and a handler
    // run here (by this wait's polls or a progress thread) may answer with them. On a mismatch
    // the seal is taken back and the job fails with the report.
    const std::uint32_t before = _sealed.load(std::memory_order_relaxed);
    _sealed.store(n, std::memory_order_relaxed);
    auto check = [&] {
        for (const digest& d : all) {
            same = same && d.count == all[0].count && d.hash == all[0].hash;
            most = d.count > most ? d.count : most;
        }
        if (!same) _sealed.store(before, std::memory_order_relaxed);
    };
    _tp.allgather(
        kind, &mine, all.data(), sizeof mine, [this] { return poll(); }, check);
    if (!same) report_mismatch(static_cast<std::uint32_t>(most));
}

void context_impl::report_mismatch(std::uint32_t max_count) {
    constexpr std::size_t width = 240;  // of each printed entry
    for (std::uint32_t i = 0; i < max_count; ++i) {
        const std::vector<entry_label> labels = gather_labels(i);
        for (int r = 1; r < _size; ++r) {
            if (labels[r].digest == labels[0].digest) continue;
            // Entries count from the program's first handler; the library's own come first.
            const std::string entry = i >= _builtin ? "entry " + std::to_string(i - _builtin) +
                                                          " of the program's handlers (table "
                                                          "index " +
                                                          std::to_string(i) + ")"
                                                    : "library entry " + std::to_string(i);
            const auto [first, other] = around_difference(labels[0].text, labels[r].text, width);
            fail(errc::handler_mismatch, "am::context::barrier", _rank,
                 "handler tables differ at " + entry + ": rank 0 registered " + first + ", rank " +
                     std::to_string(r) + " registered " + other);
        }
    }
    fail(errc::handler_mismatch, "am::context::barrier", _rank, "handler tables differ");
}

// Collective. The labels travel in pieces that fit the transport's gather limit; past the
// first piece only when the entry differs somewhere, so a report can show where two labels
// differ however long their common part is.
std::vector<context_impl::entry_label> context_impl::gather_labels(std::uint32_t i) {
    constexpr std::size_t piece_bytes = 240, max_label = 16 * 1024;
    struct piece {
        std::uint64_t digest, length;
        char text[piece_bytes];
    };
    std::string mine = "(nothing)";
    std::uint64_t digest = 0;
    if (i < _table.count()) {
        mine = handler_label(_table.cold(i));
        digest = _table.cold(i).digest;
    }
    if (mine.size() > max_label) mine.resize(max_label);
    std::vector<piece> all(static_cast<std::size_t>(_size));
    std::vector<entry_label> labels(static_cast<std::size_t>(_size));
    std::uint64_t longest = 0;
    bool differ = false;
    for (std::size_t at = 0; at == 0 || (differ && at < longest); at += piece_bytes) {
        piece p{digest, mine.size(), {}};
        if (at < mine.size()) mine.copy(p.text, piece_bytes, at);
        _tp.allgather(core_coll::handshake_report, &p, all.data(), sizeof p,
                      [this] { return poll(); }, {});
        for (std::size_t r = 0; r < all.size(); ++r) {
            labels[r].digest = all[r].digest;
            differ = differ || all[r].digest != all[0].digest;
            longest = std::max(longest, all[r].length);
            if (at < all[r].length) {
                labels[r].text.append(all[r].text,
                                      std::min<std::size_t>(piece_bytes, all[r].length - at));
            }
        }
    }
    return labels;
}

void context_impl::quiesce(transport::coll_kind kind) {
    struct counts {
        std::uint64_t sent, received, pending;
    };
    std::uint64_t last_sent = ~0ull, last_received = ~0ull;
    std::vector<counts> all(static_cast<std::size_t>(_size));
    const auto start = std::chrono::steady_clock::now();
    const trace_span span(trace(), trace_kind::wait,
                          static_cast<std::uint32_t>(trace_cause::quiesce));
    bool reported = false;
    for (;;) {
        if (!reported && _pending_report && _pending_report_seconds > 0 &&
            _layer_pending.load(std::memory_order_relaxed) > 0 &&
            std::chrono::steady_clock::now() - start >
                std::chrono::duration<double>(_pending_report_seconds)) {
            reported = true;
            const std::string what = _pending_report();
            std::fprintf(stderr, "am: rank %d: quiescence has waited %.0f s for %s\n", _rank,
                         _pending_report_seconds, what.c_str());
        }
        // Handle what has arrived and flush what is queued before counting: the allgather
        // below only polls while it waits, and the last rank to arrive (or a single rank)
        // does not wait at all.
        unsigned backoff = 0;
        for (;;) {
            const std::size_t handled = poll();
            if (handled == 0 && _pending_total.load() == 0) break;
            if (handled == 0) util::backoff(backoff, _tp.spin_limit());
        }
        // Blocked optimistic handlers count as pending: they will still send or finish.
        const counts mine{
            total_sent(), total_received(),
            _pending_total.load() + static_cast<std::uint64_t>(std::max<std::int64_t>(
                                        _layer_pending.load(std::memory_order_acquire), 0))};
        _tp.allgather(kind, &mine, all.data(), sizeof mine, [this] { return poll(); }, {});
        counts sum{0, 0, 0};
        for (const counts& c : all) {
            sum.sent += c.sent, sum.received += c.received, sum.pending += c.pending;
        }
        // Two identical rounds in which everything sent was received: nothing is in flight and
        // no handler ran in between (Mattern's four-counter argument).
        if (sum.pending == 0 && sum.sent == sum.received && sum.sent == last_sent &&
            sum.received == last_received) {
            return;
        }
        last_sent = sum.sent;
        last_received = sum.received;
    }
}

}  // namespace am::detail
