// SPDX-License-Identifier: MIT
#include "threads_transport.hpp"

#include "../ring/params.hpp"
#include "../ring/region.hpp"

#include <am/error.hpp>

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <latch>
#include <mutex>
#include <string>
#include <thread>
#include <utility>
#include <vector>

namespace am::transport::threads {
namespace {

class mapping {
  public:
    explicit mapping(std::size_t bytes) : _bytes(bytes) {
        _p = mmap(nullptr, bytes, PROT_READ | PROT_WRITE,
                  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (_p == MAP_FAILED) {
            throw error(errc::system, "am::run: threads transport: mmap of " +
                                          std::to_string(bytes) +
                                          " bytes failed: " + std::strerror(errno));
        }
    }
    ~mapping() { munmap(_p, _bytes); }
    mapping(const mapping&) = delete;
    mapping& operator=(const mapping&) = delete;
    [[nodiscard]] std::byte* data() const noexcept { return static_cast<std::byte*>(_p); }

  private:
    void* _p;
    std::size_t _bytes;
};

int run_one(std::byte* base, int rank, std::uint64_t faults, const rank_body& body) {
    ring::ring_transport tp(base, rank);
    if (faults != 0) tp.set_faults(faults * 0x9e3779b97f4a7c15ull + static_cast<unsigned>(rank));
    return body(tp);
}

// Which ranks still run. A thread rank cannot be killed alone, and one that never polls (it
// sleeps, spins or blocks in the program's code) would keep `launch` joining it forever after
// the job failed. So the first rank to return watches the others: once the job has failed they
// get `ring::stop_grace_seconds` to return, then the process ends, naming them. Rank 0 stays on
// the launching thread (programs see their calling thread as rank 0), which is why the watcher
// is whichever rank returns first and not the launching thread: rank 0 may be the one stuck.
// A normal job pays nothing: no thread is added, and the watcher is a rank that has returned.
class watch {
  public:
    watch(std::byte* base, int ranks)
        : _region(base), _running(static_cast<std::size_t>(ranks), true), _left(ranks) {}

    /// Rank `rank` returned `status`. The first rank to return waits here until the others
    /// have too, or ends the process when they do not within the grace after a failure.
    void returned(int rank, int status) {
        std::unique_lock lock(_mutex);
        _running[static_cast<std::size_t>(rank)] = false;
        --_left;
        if (_status == 0) _status = status;
        _cv.notify_all();
        if (_watching) return;
        _watching = true;
        using clock = std::chrono::steady_clock;
        clock::time_point deadline = clock::time_point::max();
        while (_left != 0) {
            // The failed flag is raised without a notification (region::fail is
            // async-signal-safe): look at it every 50 ms.
            _cv.wait_for(lock, std::chrono::milliseconds(50));
            if (deadline == clock::time_point::max() && _region.failed()) {
                deadline = clock::now() + std::chrono::seconds(ring::stop_grace_seconds);
            }
            if (_left != 0 && clock::now() >= deadline) give_up();
        }
    }

  private:
    [[noreturn]] void give_up() const {
        for (std::size_t r = 0; r < _running.size(); ++r) {
            if (!_running[r]) continue;
            std::fprintf(stderr,
                         "am: rank %zu did not stop within %d s of the job failing; exiting "
                         "the process\n",
                         r, ring::stop_grace_seconds);
        }
        std::fflush(nullptr);
        std::_Exit(_status != 0 ? _status : 1);
    }

    ring::region _region;
    std::mutex _mutex;
    std::condition_variable _cv;
    std::vector<bool> _running;
    int _left;
    int _status = 0;  // of the first rank to return non-zero
    bool _watching = false;
};

// ------------------------------------------------------ exit() while thread ranks run
//
// exit() on any thread of the process ends every rank of a threads job, whatever status it is
// given: a rank that calls std::exit(0) (in its function or a handler) would end the
// job with status 0 and no word, its peers' work lost. As under shm and mpi, where the rank is
// a process, it fails the job instead: a hook run by exit() names the rank and ends the
// process with a non-zero status. exit() ends the process and an exit handler cannot be
// withdrawn, so the hook is registered once per process and reads a process-wide count of
// running thread jobs (constant-initialised and trivially destructible: it outlives every exit
// handler); each rank's thread knows its rank.

std::atomic<int> g_running_jobs{0};  // threads jobs of this process between start and end
std::atomic<pid_t> g_jobs_pid{0};    // the process they run in (a forked child has none)
thread_local int t_rank = -1;        // the rank this thread runs, -1 if none
std::once_flag g_exit_hook_once;

extern "C" void fail_thread_job_at_exit(int status, void* /*unused*/) {
    if (g_running_jobs.load() == 0 || g_jobs_pid.load() != getpid()) return;
    char line[256];
    int n = 0;
    if (t_rank >= 0) {
        n = std::snprintf(line, sizeof line,
                          "am: rank %d called exit(%d) before finishing am::run (its ranks are "
                          "threads of one process: exit ends them all)\n",
                          t_rank, status);
    } else {
        n = std::snprintf(line, sizeof line,
                          "am: exit(%d) was called while am::run ran its ranks as threads, "
                          "before they finished\n",
                          status);
    }
    std::fflush(nullptr);
    if (n > 0) (void)!::write(2, line, std::min(static_cast<std::size_t>(n), sizeof line - 1));
    std::_Exit((status & 0xff) != 0 ? status : 1);  // exit(256) would end with 0
}

/// A threads job in the process's count from its start to its end.
class running_job {
  public:
    running_job() {
        std::call_once(g_exit_hook_once, [] {
            if (on_exit(fail_thread_job_at_exit, nullptr) != 0) {
                throw error(errc::system, "am::run: threads transport: on_exit failed");
            }
        });
        g_jobs_pid.store(getpid());
        g_running_jobs.fetch_add(1);
    }
    ~running_job() { g_running_jobs.fetch_sub(1); }
    running_job(const running_job&) = delete;
    running_job& operator=(const running_job&) = delete;
};

/// This thread runs rank `rank` for the scope (the previous value comes back: a rank may start
/// a job of its own).
class rank_thread {
  public:
    explicit rank_thread(int rank) noexcept : _previous(std::exchange(t_rank, rank)) {}
    ~rank_thread() { t_rank = _previous; }
    rank_thread(const rank_thread&) = delete;
    rank_thread& operator=(const rank_thread&) = delete;

  private:
    int _previous;
};

}  // namespace

int launch(const config& cfg, const rank_body& body) {
    const ring::region_params p = ring::params_for(cfg);
    mapping mem(ring::layout(p).total);
    ring::initialize(mem.data(), p);
    std::vector<int> status(static_cast<std::size_t>(p.ranks), 0);
    watch ranks(mem.data(), p.ranks);
    const running_job job;
    // The ranks start once every thread exists: thousands of ranks already waiting (yielding
    // and sleeping in their first barrier) starved the launching thread, and creating 4096
    // threads then took minutes instead of a second.
    std::latch created(1);
    struct open_gate {
        std::latch& l;
        ~open_gate() { l.count_down(); }
    };
    const auto run = [&](int r) {
        if (r != 0) created.wait();
        const rank_thread self(r);
        status[static_cast<std::size_t>(r)] = run_one(mem.data(), r, cfg.faults, body);
        ranks.returned(r, status[static_cast<std::size_t>(r)]);
    };
    std::vector<std::thread> threads;
    threads.reserve(status.size());
    {
        const open_gate gate{created};  // also when creating a thread throws
        for (int r = 1; r < p.ranks; ++r) threads.emplace_back(run, r);
    }
    run(0);
    for (std::thread& t : threads) t.join();
    for (int s : status) {
        if (s != 0) return s;
    }
    return 0;
}

}  // namespace am::transport::threads

namespace am::transport {

void set_thread_rank(int rank) noexcept {
    threads::t_rank = rank;
}

}  // namespace am::transport
