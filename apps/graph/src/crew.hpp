// SPDX-License-Identifier: MIT
// Handler threads of one rank for the graph kernels (apps/graph internal).
#pragma once

#include <am/context.hpp>

#include <atomic>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace am::graph {

/// The rank's thread and `size() − 1` workers, running one job at a time (a BFS level's or an
/// SSSP round's work). Between jobs a worker sleeps on a futex and does not poll, so
/// handlers of the program's other objects stay on the rank's thread. An exception on a
/// worker is rethrown on the rank's thread by `run` or `park`. Construct it on the rank's
/// thread.
class crew {
  public:
    crew(context& ctx, int threads) : _ctx(ctx), _workers(threads - 1) {
        _ids.push_back(std::this_thread::get_id());
        for (int t = 1; t < threads; ++t) _threads.emplace_back([this, t] { work(t); });
        for (const auto& t : _threads) _ids.push_back(t.get_id());
    }
    ~crew() {
        _poll.store(false, std::memory_order_release);  // workers left polling by an error
        _stop = true;                                   // published by the round's release
        _round.fetch_add(1, std::memory_order_release);
        _round.notify_all();
        for (auto& t : _threads) t.join();
    }
    crew(const crew&) = delete;
    crew& operator=(const crew&) = delete;

    /// The calling thread's index (0: the rank's thread), or −1 for a thread not in the crew.
    [[nodiscard]] int self() const noexcept {
        const auto id = std::this_thread::get_id();
        for (std::size_t t = 0; t < _ids.size(); ++t) {
            if (_ids[t] == id) return static_cast<int>(t);
        }
        return -1;
    }

    /// Runs `job(t)` on every thread t (0: the calling, rank's thread) and returns when all
    /// have finished it. With `poll`, every thread polls the context while it waits and the
    /// workers go on polling (running handlers) until `park()`; otherwise the workers are
    /// parked when it returns.
    void run(const std::function<void(int)>& job, bool poll) {
        _job = &job;
        _poll.store(poll, std::memory_order_relaxed);
        _done.store(0, std::memory_order_relaxed);
        _parked.store(0, std::memory_order_relaxed);
        _round.fetch_add(1, std::memory_order_release);
        _round.notify_all();
        try {
            job(0);
        } catch (...) {
            keep(std::current_exception());
        }
        // A handler that throws here is kept like a job's exception; the workers are still
        // inside the job, so this waits for them (without polling) before `park` rethrows.
        while (_done.load(std::memory_order_acquire) < _workers) {
            bool idle = true;
            if (poll) {
                try {
                    idle = _ctx.poll() == 0;
                } catch (...) {
                    keep(std::current_exception());
                    poll = false;
                }
            }
            if (idle) std::this_thread::yield();
        }
        if (!poll || failed()) park();
    }
    /// Runs `job` as `run` with `poll`, then `finish()` on the rank's thread (an epoch's end)
    /// while the workers go on polling, then parks them, also when `finish` throws.
    template <class Finish>
    void run_then(const std::function<void(int)>& job, Finish&& finish) {
        run(job, true);
        try {
            finish();
        } catch (...) {
            park();
            throw;
        }
        park();
    }
    /// Stops the workers' polling after a `run` with `poll` and waits until they stop.
    void park() {
        _poll.store(false, std::memory_order_release);
        while (_parked.load(std::memory_order_acquire) < _workers) std::this_thread::yield();
        std::exception_ptr e;
        {
            std::lock_guard lock(_error_mutex);
            e = std::exchange(_error, nullptr);
        }
        if (e) std::rethrow_exception(e);
    }

  private:
    void work(int t) {
        std::uint32_t seen = 0;
        for (;;) {
            await_round(seen);
            seen = _round.load(std::memory_order_acquire);
            if (_stop) return;
            try {
                (*_job)(t);
            } catch (...) {
                keep(std::current_exception());
            }
            _done.fetch_add(1, std::memory_order_release);
            try {
                while (_poll.load(std::memory_order_acquire)) {
                    if (_ctx.poll() == 0) std::this_thread::yield();
                }
            } catch (...) {
                keep(std::current_exception());
            }
            _parked.fetch_add(1, std::memory_order_release);
        }
    }
    /// Waits until the round counter leaves `seen`: spinning briefly first, then asleep on
    /// the futex. A BFS level's job follows the last one within microseconds; a worker that
    /// slept then is woken on the waker's core and often stays there while the job runs
    /// (the scheduler moves it later), which made some 1×2 searches 3–5× slower. The spin is
    /// bounded (`spin_rounds` pauses, tens of µs) so that oversubscribed threads still sleep.
    void await_round(std::uint32_t seen) {
        for (int i = 0; i < spin_rounds; ++i) {
            if (_round.load(std::memory_order_acquire) != seen) return;
            cpu_relax();
        }
        _round.wait(seen, std::memory_order_acquire);
    }
    static void cpu_relax() noexcept {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#else
        std::this_thread::yield();
#endif
    }
    static constexpr int spin_rounds = 4096;

    // A polling worker may fail while the rank's thread looks: both under the lock.
    bool failed() {
        std::lock_guard lock(_error_mutex);
        return _error != nullptr;
    }
    void keep(std::exception_ptr e) {
        std::lock_guard lock(_error_mutex);
        if (!_error) _error = std::move(e);
    }

    context& _ctx;
    const int _workers;
    std::vector<std::thread> _threads;
    std::vector<std::thread::id> _ids;  // [0]: the rank's thread
    const std::function<void(int)>* _job = nullptr;
    bool _stop = false;
    std::atomic<std::uint32_t> _round{0};  // bumped to start a job (or to stop)
    std::atomic<bool> _poll{false};        // workers poll after their share while set
    std::atomic<int> _done{0};             // workers that finished the job
    std::atomic<int> _parked{0};           // workers that stopped polling
    std::mutex _error_mutex;
    std::exception_ptr _error;
};

inline constexpr int max_threads = 64;

/// Checks `threads` (kernel_options::threads) for the kernel named `who` and, above 1,
/// starts the crew and has each worker poll once: on a context without
/// config::thread_multiple that throws, which becomes a clear error here rather than a
/// corrupted buffer later. Returns nullptr for 1 thread.
inline std::unique_ptr<crew> make_crew(context& ctx, int threads, const char* who) {
    const std::string prefix = std::string("am::graph::") + who + ": rank " +
                               std::to_string(ctx.rank()) +
                               ": kernel_options::threads = " + std::to_string(threads);
    if (threads < 1 || threads > max_threads) {
        throw std::invalid_argument(prefix + " is outside [1, " + std::to_string(max_threads) +
                                    "]");
    }
    if (threads == 1) return nullptr;
    auto c = std::make_unique<crew>(ctx, threads);
    try {
        c->run([&ctx](int t) { (void)(t > 0 && ctx.poll() > 0); }, false);
    } catch (const error& e) {
        throw std::invalid_argument(
            prefix +
            " needs a context with config::thread_multiple (AM_THREAD_MULTIPLE=1): " + e.what());
    }
    return c;
}

}  // namespace am::graph
