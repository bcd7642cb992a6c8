// SPDX-License-Identifier: MIT
// Setting up the liveness watchdog of an mpi job (liveness_setup.hpp).
#include "liveness_setup.hpp"

#include "check.hpp"

#include <am/error.hpp>

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace am::transport::mpi {
namespace {

constexpr std::size_t max_addresses = 8;

/// A rank's part of the exchange at set-up (MPI_Allgather of bytes).
struct endpoint_record {
    std::uint64_t job = 0;    // a random id; rank 0's is the job's
    std::uint32_t count = 0;  // addresses; 0: this rank could not set up, `text` says why
    std::uint16_t port = 0;
    std::uint16_t code = 0;  // the errc of the failure
    std::uint32_t addr[max_addresses] = {};
    std::uint32_t mask[max_addresses] = {};
    char text[192] = {};  // the host name, or the error
};

std::uint64_t random_job_id() {
    std::random_device rd;
    std::uint64_t id = 0;
    while (id == 0) id = (std::uint64_t{rd()} << 32) ^ rd();
    return id;
}

/// This rank's record; the error in it when something failed.
endpoint_record my_record(const config& cfg, const liveness& live) {
    endpoint_record me;
    try {
        const std::vector<ipv4_address> a = heartbeat_addresses(cfg.heartbeat_if);
        me.count = static_cast<std::uint32_t>(std::min(a.size(), max_addresses));
        for (std::size_t i = 0; i < me.count; ++i) {
            me.addr[i] = a[i].addr;
            me.mask[i] = a[i].mask;
        }
        me.port = live.port();
        me.job = random_job_id();
        if (gethostname(me.text, sizeof me.text - 1) != 0) std::strcpy(me.text, "?");
    } catch (const error& e) {
        me.count = 0;
        me.code = static_cast<std::uint16_t>(e.code());
        std::snprintf(me.text, sizeof me.text, "%s", e.what());
    }
    return me;
}

std::vector<ipv4_address> addresses_of(const endpoint_record& r) {
    std::vector<ipv4_address> a(r.count);
    for (std::size_t i = 0; i < r.count; ++i) a[i] = {r.addr[i], r.mask[i]};
    return a;
}

/// Throws on every rank when a rank could not set up: the first such rank, named.
void check_records(std::span<const endpoint_record> all) {
    for (std::size_t r = 0; r < all.size(); ++r) {
        if (all[r].count != 0) continue;
        throw error(static_cast<errc>(all[r].code),
                    "am::run: mpi transport: rank " + std::to_string(r) +
                        " could not set up heartbeats: " + std::string(all[r].text));
    }
}

/// The peers' endpoints as rank `me` reaches them.
std::vector<peer_endpoint> endpoints(std::span<const endpoint_record> all, int me) {
    const std::vector<ipv4_address> mine = addresses_of(all[static_cast<std::size_t>(me)]);
    std::vector<peer_endpoint> peers(all.size());
    for (std::size_t r = 0; r < all.size(); ++r) {
        const std::vector<ipv4_address> theirs = addresses_of(all[r]);
        peers[r] = {choose_address(mine, theirs), all[r].port, std::string(all[r].text)};
    }
    return peers;
}

void warn_unreachable(std::span<const endpoint_record> all, int r, int q) {
    const auto rs = static_cast<std::size_t>(r), qs = static_cast<std::size_t>(q);
    const std::uint32_t to_q = choose_address(addresses_of(all[rs]), addresses_of(all[qs]));
    std::fprintf(stderr,
                 "am: warning: rank %d (host %s) heard no heartbeat from rank %d (host %s, %s "
                 "UDP port %u) within %.1f s (a firewall? AM_HEARTBEAT_IF names the interface "
                 "to use): heartbeats are off for this job, a lost host will not be detected\n",
                 r, all[rs].text, q, all[qs].text, address_text(to_q).c_str(),
                 static_cast<unsigned>(all[qs].port),
                 std::chrono::duration<double>(probe_limit).count());
}

}  // namespace

std::chrono::milliseconds heartbeat_timeout(const config& cfg, int host_size, int size) noexcept {
    if (size < 2 || cfg.heartbeat == 0) return std::chrono::milliseconds(0);
    if (cfg.heartbeat < 0) {
        return host_size < size ? auto_heartbeat_timeout : std::chrono::milliseconds(0);
    }
    return std::chrono::milliseconds(static_cast<long long>(std::llround(cfg.heartbeat * 1000)));
}

std::unique_ptr<liveness> start_liveness(MPI_Comm comm, const config& cfg, int rank, int size,
                                         const node& nd, liveness_hooks hooks) {
    const std::chrono::milliseconds timeout = heartbeat_timeout(cfg, nd.host_size, size);
    if (timeout.count() == 0) return nullptr;
    std::unique_ptr<liveness> live;
    endpoint_record me;
    try {
        live = std::make_unique<liveness>(rank, size, timeout, std::move(hooks));
        me = my_record(cfg, *live);
    } catch (const error& e) {
        me.code = static_cast<std::uint16_t>(e.code());
        std::snprintf(me.text, sizeof me.text, "%s", e.what());
    }
    std::vector<endpoint_record> all(static_cast<std::size_t>(size));
    check(MPI_Allgather(&me, sizeof me, MPI_BYTE, all.data(), sizeof me, MPI_BYTE, comm),
          "MPI_Allgather");
    check_records(all);
    live->start(endpoints(all, rank), all[0].job);
    // Every rank waits for both neighbours (each sends while it waits), then all agree.
    const int unheard = live->wait_heard(probe_limit);
    std::vector<int> heard(static_cast<std::size_t>(size), -1);
    check(MPI_Allgather(&unheard, 1, MPI_INT, heard.data(), 1, MPI_INT, comm), "MPI_Allgather");
    for (int r = 0; r < size; ++r) {
        const int q = heard[static_cast<std::size_t>(r)];
        if (q < 0) continue;
        if (rank == 0) warn_unreachable(all, r, q);
        live->stop(false);
        return nullptr;
    }
    live->arm();
    return live;
}

}  // namespace am::transport::mpi
