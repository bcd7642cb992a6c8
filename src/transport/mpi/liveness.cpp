// SPDX-License-Identifier: MIT
// The liveness watchdog (liveness.hpp): this host's addresses, the UDP socket and the thread
// that sends heartbeats to the ring neighbours, hears theirs and declares the silent lost.
#include "liveness.hpp"

#include <am/error.hpp>

#include <arpa/inet.h>
#include <fcntl.h>
#include <ifaddrs.h>
#include <net/if.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace am::transport::mpi {
namespace {

[[noreturn]] void throw_system(const char* call) {
    throw error(errc::system, std::string("am::run: mpi transport: heartbeats: ") + call +
                                  " failed: " + std::strerror(errno));
}

/// IPv4 addresses of up interfaces named `only` (any when empty); loopback ones apart.
void collect(const ifaddrs* list, const std::string& only, std::vector<ipv4_address>& up,
             std::vector<ipv4_address>& loopback, std::vector<std::string>& names) {
    for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
        if (i->ifa_addr == nullptr || i->ifa_addr->sa_family != AF_INET) continue;
        if (std::find(names.begin(), names.end(), i->ifa_name) == names.end()) {
            names.emplace_back(i->ifa_name);
        }
        if ((i->ifa_flags & IFF_UP) == 0) continue;
        if (!only.empty() && only != i->ifa_name) continue;
        ipv4_address a;
        a.addr = reinterpret_cast<const sockaddr_in*>(i->ifa_addr)->sin_addr.s_addr;
        if (i->ifa_netmask != nullptr) {
            a.mask = reinterpret_cast<const sockaddr_in*>(i->ifa_netmask)->sin_addr.s_addr;
        }
        ((i->ifa_flags & IFF_LOOPBACK) != 0 ? loopback : up).push_back(a);
    }
}

}  // namespace

std::vector<ipv4_address> heartbeat_addresses(const std::string& only) {
    ifaddrs* list = nullptr;
    if (getifaddrs(&list) != 0) throw_system("getifaddrs");
    std::vector<ipv4_address> up, loopback;
    std::vector<std::string> names;
    collect(list, only, up, loopback, names);
    freeifaddrs(list);
    if (up.empty()) up = std::move(loopback);
    if (up.empty() && !only.empty()) {
        std::string have;
        for (const std::string& n : names) have += (have.empty() ? "" : ", ") + n;
        throw error(errc::invalid_argument, "am::run: mpi transport: AM_HEARTBEAT_IF=\"" + only +
                                                "\" has no IPv4 address that is up (interfaces "
                                                "with IPv4 addresses: " +
                                                have + ")");
    }
    if (up.empty()) {
        throw error(errc::system,
                    "am::run: mpi transport: heartbeats: this host has no IPv4 "
                    "address that is up (set AM_HEARTBEAT=off)");
    }
    return up;
}

std::uint32_t choose_address(std::span<const ipv4_address> mine,
                             std::span<const ipv4_address> theirs) noexcept {
    for (const ipv4_address& t : theirs) {
        for (const ipv4_address& m : mine) {
            if (m.mask == t.mask && (m.addr & m.mask) == (t.addr & m.mask)) return t.addr;
        }
    }
    return theirs.front().addr;
}

std::string address_text(std::uint32_t addr) {
    char text[INET_ADDRSTRLEN] = {};
    in_addr a{};
    a.s_addr = addr;
    inet_ntop(AF_INET, &a, text, sizeof text);
    return text;
}

// ------------------------------------------------------------------------------ the socket

udp_socket::udp_socket() {
    _fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (_fd < 0) throw_system("socket");
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    a.sin_port = 0;
    socklen_t len = sizeof a;
    if (bind(_fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0 ||
        getsockname(_fd, reinterpret_cast<sockaddr*>(&a), &len) != 0) {
        const int e = errno;
        close(_fd);
        errno = e;
        throw_system("bind");
    }
    _port = ntohs(a.sin_port);
}

udp_socket::~udp_socket() {
    if (_fd >= 0) close(_fd);
}

// ---------------------------------------------------------------------------- the watchdog

liveness::liveness(int rank, int size, std::chrono::milliseconds timeout, liveness_hooks hooks)
    : _rank(rank),
      _size(size),
      _timeout(timeout),
      _left((rank + size - 1) % size),
      _right((rank + 1) % size),
      _hooks(std::move(hooks)) {
    if (pipe2(_wake, O_CLOEXEC | O_NONBLOCK) != 0) throw_system("pipe2");
}

liveness::~liveness() {
    stop(false);
    close(_wake[0]);
    close(_wake[1]);
}

void liveness::start(std::vector<peer_endpoint> peers, std::uint64_t job) {
    _peers = std::move(peers);
    _job = job;
    _last.assign(static_cast<std::size_t>(_size), clock::now());
    _gone.assign(static_cast<std::size_t>(_size), false);
    _thread = std::thread([this] { run(); });
}

int liveness::wait_heard(std::chrono::milliseconds limit) const {
    const auto until = clock::now() + limit;
    for (;;) {
        const unsigned h = _heard.load(std::memory_order_acquire);
        if (h == 3) return -1;
        if (clock::now() >= until) return (h & 1) == 0 ? _left : _right;
        std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
}

void liveness::stop(bool bye) noexcept {
    if (!_thread.joinable()) return;
    const char c = 0;
    while (write(_wake[1], &c, 1) < 0 && errno == EINTR) {
    }
    _thread.join();
    if (!bye) return;
    // Twice: a lost datagram would make a neighbour still finishing declare this rank lost.
    for (int k = 0; k < 2; ++k) {
        send_to(_left, beat_kind::bye);
        if (_right != _left) send_to(_right, beat_kind::bye);
    }
}

void liveness::send_to(int peer, beat_kind kind, int subject) noexcept {
    const peer_endpoint& p = _peers[static_cast<std::size_t>(peer)];
    const beat_datagram d = make_beat(_job, kind, _rank, ++_seq, subject);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = p.addr;
    a.sin_port = htons(p.port);
    // Best effort: a full buffer or an unreachable network is what the timeout detects.
    (void)sendto(_socket.fd(), &d, sizeof d, 0, reinterpret_cast<const sockaddr*>(&a), sizeof a);
}

std::string liveness::name(int peer) const {
    const peer_endpoint& p = _peers[static_cast<std::size_t>(peer)];
    return "rank " + std::to_string(peer) + " (host " + p.host + ", " + address_text(p.addr) + ")";
}

void liveness::run() {
    auto next_beat = clock::now();
    auto failed_at = clock::time_point::max();
    bool armed = false;
    for (;;) {
        auto now = clock::now();
        if (!armed && _armed.load(std::memory_order_acquire)) {
            armed = true;  // silence is counted from here, not from the probe
            std::fill(_last.begin(), _last.end(), now);
        }
        if (now >= next_beat) {
            send_to(_left, beat_kind::beat);
            if (_right != _left) send_to(_right, beat_kind::beat);
            if (_lost_sends > 0) broadcast_lost();  // one copy per interval
            next_beat = now + (armed ? _timeout / 5 : probe_interval);
        }
        if (armed) check_neighbours(now);
        if (failed_at == clock::time_point::max() && _hooks.failed()) failed_at = now;
        if (now - failed_at >= failure_grace) give_up();
        // Awake for the next heartbeat, and at the end of the grace on the dot: the bound
        // (docs/transports.md) is timeout + interval + grace.
        const auto wake = failed_at == clock::time_point::max()
                              ? next_beat
                              : std::min(next_beat, failed_at + failure_grace);
        const auto wait = std::chrono::ceil<std::chrono::milliseconds>(wake - now).count();
        std::array<pollfd, 2> fds{{{_socket.fd(), POLLIN, 0}, {_wake[0], POLLIN, 0}}};
        if (poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(wait, 1))) > 0) {
            if ((fds[1].revents & POLLIN) != 0) return;
            if ((fds[0].revents & POLLIN) != 0) receive();
        }
    }
}

void liveness::receive() noexcept {
    std::array<std::byte, 64> buf;
    for (;;) {
        const ssize_t n = recvfrom(_socket.fd(), buf.data(), buf.size(), 0, nullptr, nullptr);
        if (n < 0) return;  // EAGAIN: all read
        const auto m =
            parse_beat(std::span(buf.data(), static_cast<std::size_t>(n)), _job, _size, _rank);
        if (!m) {
            _ignored.fetch_add(1, std::memory_order_relaxed);
            continue;
        }
        const auto from = static_cast<std::size_t>(m->from);
        _last[from] = clock::now();
        if (m->from == _left) _heard.fetch_or(1, std::memory_order_release);
        if (m->from == _right) _heard.fetch_or(2, std::memory_order_release);
        if (m->kind == beat_kind::bye) _gone[from] = true;
        if (m->kind == beat_kind::lost && !_raised && !_hooks.failed()) {
            try {
                const std::string what =
                    m->subject == _rank
                        ? "this rank was declared lost by " + name(m->from)
                        : "lost " + name(m->subject) + ": reported by " + name(m->from);
                _raised = true;
                _hooks.raise("rank " + std::to_string(_rank) + ": " + what + "; aborting the job");
            } catch (...) {
                _hooks.raise("a rank of the job was lost");
            }
        }
    }
}

void liveness::check_neighbours(clock::time_point now) {
    for (const int n : {_left, _right}) {
        const auto i = static_cast<std::size_t>(n);
        if (_gone[i] || now - _last[i] <= _timeout) continue;
        _gone[i] = true;  // declared once
        const double silent = std::chrono::duration<double>(now - _last[i]).count();
        char secs[32];
        std::snprintf(secs, sizeof secs, "%.1f", silent);
        std::string reason;
        try {
            reason = "rank " + std::to_string(_rank) + ": lost " + name(n) + ": no heartbeat for " +
                     secs + " s; aborting the job";
            const std::uint64_t bad = ignored();
            if (bad != 0) reason += " (" + std::to_string(bad) + " foreign datagrams ignored)";
        } catch (...) {
            reason = "a ring neighbour was lost";
        }
        lost(n, reason);
    }
}

void liveness::lost(int peer, const std::string& reason) {
    // Raised before the others hear of it: on a node they share the failure's record, and the
    // first reason recorded, this one, names how the loss was seen.
    if (!_raised) {
        _raised = true;
        _hooks.raise(reason);
    }
    if (_lost_rank < 0) {
        _lost_rank = peer;
        _lost_sends = lost_repeats;
        broadcast_lost();  // the first copy now, the others with the next heartbeats
    }
}

void liveness::broadcast_lost() noexcept {
    for (int r = 0; r < _size; ++r) {
        if (r != _rank && r != _lost_rank) send_to(r, beat_kind::lost, _lost_rank);
    }
    --_lost_sends;
}

void liveness::give_up() const noexcept {
    std::string why;
    try {
        why = _hooks.reason();
    } catch (...) {
    }
    std::fprintf(stderr,
                 "am: rank %d: still running %.1f s after the job failed (computing without "
                 "polling, or MPI_Abort hangs): exiting; the failure: %s\n",
                 _rank, std::chrono::duration<double>(failure_grace).count(), why.c_str());
    std::fflush(nullptr);
    _exit(1);
}

}  // namespace am::transport::mpi
