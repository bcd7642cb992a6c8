// SPDX-License-Identifier: MIT
// The core of one rank: handler table, sends with flow control, dispatch with header
// validation, progress, the handler-table handshake and the end-of-job quiescence.
#pragma once

#include "../transport/transport.hpp"
#include "handler_table.hpp"
#include "wire.hpp"

#include <am/context.hpp>

#include <atomic>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace am::detail {

/// Counters updated by one thread at a time (under the send or poll lock when a progress
/// thread exists) and read by any: relaxed load + store instead of a locked add.
inline void bump(std::atomic<std::uint64_t>& a, std::uint64_t n = 1) noexcept {
    a.store(a.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

class context_impl final : public transport::message_sink {
public:
    context_impl(transport::transport& tp, const config& cfg);
    ~context_impl();
    context_impl(const context_impl&) = delete;
    context_impl& operator=(const context_impl&) = delete;

    [[nodiscard]] int rank() const noexcept { return _rank; }
    [[nodiscard]] int size() const noexcept { return _size; }
    [[nodiscard]] std::size_t max_medium() const noexcept { return _max_medium; }
    [[nodiscard]] std::span<std::byte> own_segment() const noexcept { return _own_segment; }
    [[nodiscard]] context& front() noexcept { return _front; }
    [[nodiscard]] transport::transport& transport() noexcept { return _tp; }

    std::uint32_t add_handler(const handler_desc& d) { return _table.add(d, _rank); }
    void send(const send_desc& d, bool reply);
    std::size_t poll();
    void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) override;
    void barrier();
    /// Returns when every message sent by any rank has been handled (collective).
    void quiesce();
    void idle(unsigned& backoff);
    [[nodiscard]] bool in_handler() const noexcept;
    [[nodiscard]] bool in_reply_handler() const noexcept;
    [[nodiscard]] am::stats snapshot() const;
    void start_progress_thread();
    void stop_progress_thread() noexcept;

private:
    struct pending_msg {
        std::vector<std::byte> bytes;
    };

    void validate(const send_desc& d, bool reply) const;
    [[nodiscard]] std::size_t message_bytes(const send_desc& d) const noexcept;
    void write_message(std::byte* out, const send_desc& d) const noexcept;
    void copy_long_payload(const send_desc& d) const;
    bool try_inject(const send_desc& d, std::size_t bytes);
    void enqueue(const send_desc& d, std::size_t bytes);
    void flush_pending();
    void count_sent(const send_desc& d, bool reply) noexcept;
    void reject(int source, const char* why) noexcept;
    void check_tables();
    [[noreturn]] void report_mismatch(std::uint32_t max_count);
    void progress_loop() noexcept;
    [[nodiscard]] std::size_t poll_locked();

    transport::transport& _tp;
    context _front;
    int _rank;
    int _size;
    std::size_t _max_medium;
    std::span<std::byte> _own_segment;
    handler_table _table;
    std::uint32_t _sealed = 0;

    std::vector<std::deque<pending_msg>> _pending;  // [dest * lanes + lane]
    std::atomic<std::size_t> _pending_total{0};  // written under the send lock

    bool _locking = false;  // true while a progress thread shares the context
    std::mutex _send_mutex;
    std::mutex _poll_mutex;
    std::thread _progress;
    std::atomic<bool> _stop{false};

    std::atomic<std::uint64_t> _sent{0}, _sent_bytes{0}, _replies{0}, _received{0},
        _received_bytes{0}, _stalls{0}, _queued{0}, _bad{0};
};

}  // namespace am::detail
