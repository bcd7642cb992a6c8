// SPDX-License-Identifier: MIT
// The mpi transport's packing, driven directly through its interface (try_reserve, commit,
// poll, barrier) on every rank of `mpiexec -n N` with node size 1 (every peer through MPI). A
// sink stands in for the core: it checks what arrives and, in "echo", answers from inside the
// delivery as a handler would (tests/mpi/CMakeLists.txt runs it at 2-4 ranks).
//
//   am_mpi_packing stream   every rank sends every other rank 3000 messages of mixed sizes
//                           (8 B to over a pack, so some are announced and sent apart) on both
//                           lanes, back to back without polling, polling only when refused.
//                           Checks: each (source, lane) arrives complete, in order, intact;
//                           packs carried more than one message each (≥ 4 on average), and
//                           the counts of packed and large messages are exactly those sent.
//   am_mpi_packing flow     ranks 1.. send rank 0 mixed messages on one lane while rank 0 does
//                           not poll (it waits in a plain MPI_Recv for each sender's word that
//                           it was refused). Checks: a sender is refused exactly when it used
//                           its credits_per_peer MPI messages (packs and announcements), none
//                           returned meanwhile; then everything arrives, in order.
//   am_mpi_packing echo     rank 0 sends one request to a peer and polls until the reply comes
//                           (replies are sent from inside the delivery), 300 times per peer.
//                           A pack held across that wait would deadlock (the test's timeout);
//                           on rank 0 every pack carries exactly one message.
// Every process prints "packing: ok (rank R)" when its checks held, else "packing: FAILED: ...".
#include "transport/mpi/mpi_transport.hpp"
#include "transport/mpi/mpi_transport_impl.hpp"

#include <am/config.hpp>

#include <mpi.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace tp = am::transport;
namespace mt = am::transport::mpi;

namespace {

int g_failures = 0;
int g_rank = -1;

void fail(const std::string& what) {
    std::fprintf(stderr, "packing: FAILED: rank %d: %s\n", g_rank, what.c_str());
    ++g_failures;
}

/// The length of message `seq`: mixed small, near the pack's limit, and larger than a pack.
std::size_t length_of(std::uint32_t seq, bool large) {
    static constexpr std::size_t sizes[] = {8,   16, 24,   40,   100,           8,
                                            300, 16, 1000, 3000, mt::max_eager, 24};
    if (large && seq % 97 == 13) return mt::max_eager + 1 + seq % 5000;
    return sizes[seq % (sizeof sizes / sizeof sizes[0])];
}

/// Message bytes: source, seq, then a pattern of both.
void fill(std::byte* p, std::size_t len, int source, std::uint32_t seq) {
    const std::uint32_t head[2] = {static_cast<std::uint32_t>(source), seq};
    std::memcpy(p, head, len < 8 ? len : 8);
    for (std::size_t i = 8; i < len; ++i) p[i] = static_cast<std::byte>(seq * 7 + i + source);
}

bool intact(const std::byte* p, std::size_t len, int source, std::uint32_t seq) {
    std::vector<std::byte> want(len);
    fill(want.data(), len, source, seq);
    return std::memcmp(want.data(), p, len) == 0;
}

/// Stands in for the core: per (source, lane) the next sequence number, checked contents.
class checking_sink final : public tp::message_sink {
  public:
    checking_sink(int size, bool large)
        : _next(static_cast<std::size_t>(size) * 2, 0), _large(large) {}
    void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) override {
        std::uint32_t& next = _next[static_cast<std::size_t>(source) * 2 + lane];
        if (len != length_of(next, _large) || !intact(msg, len, source, next)) {
            fail("message " + std::to_string(next) + " from rank " + std::to_string(source) +
                 " lane " + std::to_string(lane) + ": wrong length or contents (" +
                 std::to_string(len) + " bytes), or out of order");
        }
        ++next;
        ++_total;
    }
    [[nodiscard]] std::uint64_t total() const { return _total; }
    [[nodiscard]] std::uint32_t next(int source, unsigned lane) const {
        return _next[static_cast<std::size_t>(source) * 2 + lane];
    }

  private:
    std::vector<std::uint32_t> _next;
    std::uint64_t _total = 0;
    bool _large;
};

void poll_until(tp::transport& t, tp::message_sink& sink, const std::function<bool()>& done) {
    unsigned backoff = 0;
    while (!done()) {
        if (t.poll(sink) == 0) am::util::backoff(backoff, t.spin_limit());
    }
}

/// Sends message `seq` of `len` bytes to (dest, lane), polling while refused; true if refused.
bool send(tp::transport& t, tp::message_sink& sink, int dest, unsigned lane, std::uint32_t seq,
          std::size_t len) {
    bool refused = false;
    std::byte* p = t.try_reserve(dest, lane, len);
    while (p == nullptr) {
        refused = true;
        t.poll(sink);
        p = t.try_reserve(dest, lane, len);
    }
    fill(p, len, t.rank(), seq);
    t.commit(dest, lane, p, len);
    return refused;
}

void barrier(tp::transport& t, tp::message_sink& sink) {
    t.barrier(tp::coll::barrier, [&] { return t.poll(sink); });
}

int stream(tp::transport& t) {
    constexpr std::uint32_t per_peer = 3000;
    checking_sink sink(t.size(), true);
    std::uint64_t packed = 0, large = 0;
    std::vector<std::uint32_t> seq(static_cast<std::size_t>(t.size()) * 2, 0);
    for (std::uint32_t i = 0; i < per_peer; ++i) {
        for (int d = 0; d < t.size(); ++d) {
            if (d == t.rank()) continue;
            const unsigned lane = i % 2;
            std::uint32_t& s = seq[static_cast<std::size_t>(d) * 2 + lane];
            const std::size_t len = length_of(s, true);
            (len > mt::max_eager ? large : packed) += 1;
            send(t, sink, d, lane, s++, len);
        }
    }
    const std::uint64_t expected =
        std::uint64_t{per_peer} * static_cast<std::uint64_t>(t.size() - 1);
    poll_until(t, sink, [&] { return sink.total() == expected; });
    barrier(t, sink);
    const mt::send_counts c = dynamic_cast<mt::mpi_transport&>(t).counts();
    if (c.core_messages != packed || c.large != large) {
        fail("counted " + std::to_string(c.core_messages) + " packed and " +
             std::to_string(c.large) + " large messages, sent " + std::to_string(packed) + " and " +
             std::to_string(large));
    }
    if (c.packs == 0 || c.core_messages < 4 * c.packs) {
        fail(std::to_string(c.core_messages) + " messages in " + std::to_string(c.packs) +
             " packs: not packed");
    }
    std::printf(
        "packing: rank %d: %llu messages in %llu packs (%llu sent because full), %llu "
        "large\n",
        t.rank(), static_cast<unsigned long long>(c.core_messages),
        static_cast<unsigned long long>(c.packs), static_cast<unsigned long long>(c.full_flushes),
        static_cast<unsigned long long>(c.large));
    return 0;
}

int flow(tp::transport& t) {
    constexpr std::uint32_t count = 4000;
    checking_sink sink(t.size(), true);
    if (t.rank() == 0) {
        // Not a single poll until every sender was refused: their credits are all out.
        for (int r = 1; r < t.size(); ++r) {
            int word = 0;
            MPI_Recv(&word, 1, MPI_INT, MPI_ANY_SOURCE, 77, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        }
        const auto expected = std::uint64_t{count} * static_cast<std::uint64_t>(t.size() - 1);
        poll_until(t, sink, [&] { return sink.total() == expected; });
        for (int r = 1; r < t.size(); ++r) {
            if (sink.next(r, 0) != count) fail("rank " + std::to_string(r) + " incomplete");
        }
    } else {
        bool told = false;
        for (std::uint32_t s = 0; s < count; ++s) {
            const std::size_t len = length_of(s, true);
            // Refused: check before polling (which could bring credits back).
            std::byte* p = t.try_reserve(0, 0, len);
            if (p == nullptr && !told) {
                const mt::send_counts c = dynamic_cast<mt::mpi_transport&>(t).counts();
                if (c.packs + c.large != mt::credits_per_peer) {
                    fail("refused after " + std::to_string(c.packs) + " packs and " +
                         std::to_string(c.large) + " announcements, not " +
                         std::to_string(mt::credits_per_peer));
                }
                int word = 1;
                MPI_Send(&word, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
                told = true;
            }
            if (p == nullptr) {
                send(t, sink, 0, 0, s, len);
                continue;
            }
            fill(p, len, t.rank(), s);
            t.commit(0, 0, p, len);
        }
        if (!told) fail("never refused: flow control did not stop the sender");
    }
    barrier(t, sink);
    return 0;
}

/// Answers every request (lane 0) with a reply (lane 1) from inside the delivery.
class echo_sink final : public tp::message_sink {
  public:
    explicit echo_sink(tp::transport& t) : _t(t) {}
    void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) override {
        if (lane == 1) {
            ++replies;
            return;
        }
        ++requests;
        std::byte* p = _t.try_reserve(source, 1, len);
        if (p == nullptr) {
            fail("no room for a reply");
            return;
        }
        std::memcpy(p, msg, len);
        _t.commit(source, 1, p, len);
    }
    std::uint64_t requests = 0, replies = 0;

  private:
    tp::transport& _t;
};

int echo(tp::transport& t) {
    constexpr std::uint64_t rounds = 300;
    echo_sink sink(t);
    if (t.rank() == 0) {
        for (std::uint64_t i = 0; i < rounds; ++i) {
            for (int d = 1; d < t.size(); ++d) {
                std::byte* p = nullptr;
                poll_until(t, sink, [&] { return (p = t.try_reserve(d, 0, 16)) != nullptr; });
                fill(p, 16, 0, static_cast<std::uint32_t>(i));
                t.commit(d, 0, p, 16);
                const std::uint64_t want = sink.replies + 1;
                poll_until(t, sink, [&] { return sink.replies == want; });
            }
        }
        const mt::send_counts c = dynamic_cast<mt::mpi_transport&>(t).counts();
        if (c.core_messages != c.packs ||
            c.packs != rounds * static_cast<std::uint64_t>(t.size() - 1)) {
            fail(std::to_string(c.core_messages) + " requests in " + std::to_string(c.packs) +
                 " packs: a wait's first poll must send the request alone");
        }
    } else {
        poll_until(t, sink, [&] { return sink.requests == rounds; });
    }
    barrier(t, sink);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    const std::string mode = argc > 1 ? argv[1] : "";
    am::config cfg;
    cfg.node_size = 1;
    const int rc = mt::launch_on(MPI_COMM_WORLD, cfg, [&](tp::transport& t) {
        int status = 0;
        if (mode == "stream") {
            status = stream(t);
        } else if (mode == "flow") {
            status = flow(t);
        } else if (mode == "echo") {
            status = echo(t);
        } else {
            fail("unknown mode " + mode);
        }
        t.mark_finished();
        return status;
    });
    if (rc != 0) fail("launch_on returned " + std::to_string(rc));
    if (g_failures == 0) std::printf("packing: ok (rank %d)\n", g_rank);
    std::fflush(stdout);
    MPI_Finalize();
    return g_failures == 0 ? 0 : 1;
}
