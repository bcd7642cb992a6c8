// SPDX-License-Identifier: MIT
#include "threads_transport.hpp"

#include "../ring/params.hpp"
#include "../ring/region.hpp"

#include <am/error.hpp>

#include <sys/mman.h>

#include <cerrno>
#include <cstring>
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

}  // namespace

int launch(const config& cfg, const rank_body& body) {
    const ring::region_params p = ring::params_for(cfg);
    mapping mem(ring::layout(p).total);
    ring::initialize(mem.data(), p);
    std::vector<int> status(static_cast<std::size_t>(p.ranks), 0);
    std::vector<std::thread> threads;
    threads.reserve(status.size());
    for (int r = 1; r < p.ranks; ++r) {
        threads.emplace_back([&, r] { status[r] = run_one(mem.data(), r, cfg.faults, body); });
    }
    status[0] = run_one(mem.data(), 0, cfg.faults, body);
    for (std::thread& t : threads) t.join();
    for (int s : status) {
        if (s != 0) return s;
    }
    return 0;
}

}  // namespace am::transport::threads
