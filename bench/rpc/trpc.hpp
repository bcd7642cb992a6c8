// SPDX-License-Identifier: MIT
/// @file
/// TRPC, the "traditional RPC" baseline of the Optimistic Active Messages paper (Wallach et
/// al., 1995), built in the benchmark on am's plain active messages:
///
/// - The caller sends a short request naming the function, its arguments, its call id.
/// - The target's handler (a plain AM handler, on the polling thread) does not run the function:
///   it appends the call to the rank's queue (std::mutex + std::condition_variable) and returns.
/// - One of the rank's pool of kernel threads (std::thread, `threads` per rank, created by the
///   rank's thread after it was pinned, so they share its core) takes the call, runs the
///   function — with the blocking it may need done by kernel means (std::mutex) — and, when it
///   is done, sends the result back itself: a short request to the caller's reply handler,
///   from the pool thread. A send from a thread other than the rank's needs
///   `config::thread_multiple`, so every TRPC job runs with it (and pays its send lock).
///
/// So every call runs as a (kernel) thread and replies when done, as the paper's TRPC does;
/// the pool saves the thread creation per call, which only makes the baseline faster.
#pragma once

#include <am/am.hpp>

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace am::bench::rpc {

/// One queued call.
struct trpc_call {
    std::uint64_t fn;
    std::uint64_t a;
    std::uint64_t b;
    std::uint64_t id;
    int caller;
};

/// A rank's pool: `run` is called on a pool thread for every pushed call.
class trpc_pool {
  public:
    trpc_pool(int threads, std::function<void(const trpc_call&)> run) : _run(std::move(run)) {
        for (int i = 0; i < threads; ++i) _threads.emplace_back([this] { serve(); });
    }
    trpc_pool(const trpc_pool&) = delete;
    trpc_pool& operator=(const trpc_pool&) = delete;
    ~trpc_pool() {
        {
            std::lock_guard<std::mutex> g(_mu);
            _stop = true;
        }
        _cv.notify_all();
        for (std::thread& t : _threads) t.join();
    }

    /// Queues a call (from the handler on the polling thread) and wakes a pool thread.
    void push(const trpc_call& c) {
        {
            std::lock_guard<std::mutex> g(_mu);
            _q.push_back(c);
        }
        _cv.notify_one();
    }

    /// True when a call threw on a pool thread.
    [[nodiscard]] bool failed() const noexcept { return _failed.load(); }

  private:
    void serve() {
        for (;;) {
            trpc_call c;
            {
                std::unique_lock<std::mutex> lk(_mu);
                _cv.wait(lk, [this] { return _stop || !_q.empty(); });
                if (_q.empty()) return;  // stopping and nothing left
                c = _q.front();
                _q.pop_front();
            }
            try {
                _run(c);
            } catch (const std::exception& e) {  // the job is failing: the rank will see it
                std::fprintf(stderr, "rpc_bench: TRPC pool thread: %s\n", e.what());
                _failed.store(true);
            }
        }
    }

    std::function<void(const trpc_call&)> _run;
    std::mutex _mu;
    std::condition_variable _cv;
    std::deque<trpc_call> _q;
    bool _stop = false;
    std::atomic<bool> _failed{false};
    std::vector<std::thread> _threads;
};

}  // namespace am::bench::rpc
