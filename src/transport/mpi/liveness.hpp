// SPDX-License-Identifier: MIT
// The mpi transport's liveness watchdog: a thread per job with its own UDP socket that sends
// heartbeat datagrams (liveness_format.hpp) to the rank's ring neighbours and declares a
// neighbour lost when it stays silent for the timeout — a host whose links were cut, a process
// stopped, a machine that froze — which MPI over TCP does not notice for minutes. Independent
// of MPI and of the rank's own thread (which may compute for long without polling): the
// watchdog raises the failure through `liveness_hooks`, the rank's next poll or wait ends the
// job, and if the process is still there `failure_grace` later the watchdog ends it itself.
// No MPI here; the set-up that exchanges the endpoints is liveness_setup.cpp.
#pragma once

#include "liveness_format.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace am::transport::mpi {

/// Heartbeats sent during the set-up's reachability probe, and how long it waits.
inline constexpr std::chrono::milliseconds probe_interval{50};
inline constexpr std::chrono::milliseconds probe_limit{2000};
/// After a failure, how long the rank's own thread has to end the process (MPI_Abort after
/// its failure messages left, ≤ 1.8 s) before the watchdog calls _exit(1).
inline constexpr std::chrono::milliseconds failure_grace{3000};
/// Copies of a "lost" datagram sent to every rank, one per heartbeat interval.
inline constexpr int lost_repeats = 3;

/// An IPv4 address of this host and its netmask, in network byte order.
struct ipv4_address {
    std::uint32_t addr = 0;
    std::uint32_t mask = 0;
};

/// This host's IPv4 addresses that heartbeats may use: those of interfaces that are up, not
/// loopback (loopback when there is no other); only interface `only` when not empty. Throws
/// am::error naming AM_HEARTBEAT_IF when `only` has no IPv4 address that is up.
std::vector<ipv4_address> heartbeat_addresses(const std::string& only);

/// The address to send a peer with addresses `theirs` (not empty) to: the first in a subnet
/// of one of `mine`, else its first.
std::uint32_t choose_address(std::span<const ipv4_address> mine,
                             std::span<const ipv4_address> theirs) noexcept;

/// "10.0.0.2" for an address in network byte order.
std::string address_text(std::uint32_t addr);

/// A UDP socket bound to INADDR_ANY, port 0 (the kernel picks one); closed by the destructor.
class udp_socket {
  public:
    /// Throws am::error (errc::system) naming the call that failed.
    udp_socket();
    ~udp_socket();
    udp_socket(const udp_socket&) = delete;
    udp_socket& operator=(const udp_socket&) = delete;
    [[nodiscard]] int fd() const noexcept { return _fd; }
    /// The port bound, in host byte order.
    [[nodiscard]] std::uint16_t port() const noexcept { return _port; }

  private:
    int _fd = -1;
    std::uint16_t _port = 0;
};

/// Where a rank's heartbeats go, and how it is named in messages.
struct peer_endpoint {
    std::uint32_t addr = 0;  // network byte order
    std::uint16_t port = 0;  // host byte order
    std::string host;        // its host name
};

/// What the watchdog does to the job. Called on the watchdog's thread; must not block.
struct liveness_hooks {
    std::function<void(const std::string&)> raise;  // fail the job with this reason
    std::function<bool()> failed;                   // the job has failed (for any reason)
    std::function<std::string()> reason;            // why, once it has
};

/// The watchdog of one rank of one job. Once started it sends at once (every `probe_interval` until
/// `arm`, then every timeout / 5) and declares losses only once armed. The thread stops with
/// `stop` or the destructor. `wait_heard`, `arm` and `stop` are for the job's thread.
class liveness {
  public:
    /// Binds the socket (throws am::error when it cannot); no thread yet.
    liveness(int rank, int size, std::chrono::milliseconds timeout, liveness_hooks hooks);
    ~liveness();
    liveness(const liveness&) = delete;
    liveness& operator=(const liveness&) = delete;

    /// The port heartbeats arrive at (host byte order), for the exchange at set-up.
    [[nodiscard]] std::uint16_t port() const noexcept { return _socket.port(); }
    /// Sets the peers' endpoints (exchanged after the socket was bound) and starts the thread.
    void start(std::vector<peer_endpoint> peers, std::uint64_t job);
    /// Waits at most `limit` for a first datagram from both ring neighbours. Returns the
    /// neighbour not heard from (-1: both were).
    int wait_heard(std::chrono::milliseconds limit) const;
    /// From now on a neighbour silent for the timeout is lost.
    void arm() noexcept { _armed.store(true, std::memory_order_release); }
    /// Stops the thread; with `bye` first tells the neighbours this rank finished the job.
    void stop(bool bye) noexcept;
    /// Datagrams ignored because they were not well-formed datagrams of this job.
    [[nodiscard]] std::uint64_t ignored() const noexcept {
        return _ignored.load(std::memory_order_relaxed);
    }

  private:
    using clock = std::chrono::steady_clock;
    void run();
    void send_to(int peer, beat_kind kind, int subject = 0) noexcept;
    void receive() noexcept;
    void check_neighbours(clock::time_point now);
    void lost(int peer, const std::string& reason);
    void broadcast_lost() noexcept;
    [[noreturn]] void give_up() const noexcept;
    [[nodiscard]] std::string name(int peer) const;

    int _rank;
    int _size;
    std::uint64_t _job = 0;
    std::chrono::milliseconds _timeout;
    int _left, _right;  // ring neighbours (equal with 2 ranks)
    std::vector<peer_endpoint> _peers;
    liveness_hooks _hooks;
    udp_socket _socket;
    int _wake[2] = {-1, -1};  // a pipe: `stop` writes, the thread wakes

    std::atomic<bool> _armed{false};
    std::atomic<unsigned> _heard{0};  // bit 0: the left neighbour was heard, bit 1: the right
    std::atomic<std::uint64_t> _ignored{0};

    // The thread's own state.
    std::vector<clock::time_point> _last;  // per rank: when it was last heard
    std::vector<bool> _gone;               // per rank: said bye, or declared lost
    std::uint64_t _seq = 0;
    int _lost_rank = -1;   // the rank to report lost to every rank
    int _lost_sends = 0;   // copies of that report still to send
    bool _raised = false;  // this watchdog failed the job
    std::thread _thread;
};

}  // namespace am::transport::mpi
