// SPDX-License-Identifier: MIT
#include "threads_transport.hpp"

#include "../ring/params.hpp"
#include "../ring/region.hpp"

#include <am/error.hpp>

#include <sys/mman.h>

#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
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

}  // namespace

int launch(const config& cfg, const rank_body& body) {
    const ring::region_params p = ring::params_for(cfg);
    mapping mem(ring::layout(p).total);
    ring::initialize(mem.data(), p);
    std::vector<int> status(static_cast<std::size_t>(p.ranks), 0);
    watch ranks(mem.data(), p.ranks);
    const auto run = [&](int r) {
        status[static_cast<std::size_t>(r)] = run_one(mem.data(), r, cfg.faults, body);
        ranks.returned(r, status[static_cast<std::size_t>(r)]);
    };
    std::vector<std::thread> threads;
    threads.reserve(status.size());
    for (int r = 1; r < p.ranks; ++r) threads.emplace_back(run, r);
    run(0);
    for (std::thread& t : threads) t.join();
    for (int s : status) {
        if (s != 0) return s;
    }
    return 0;
}

}  // namespace am::transport::threads
