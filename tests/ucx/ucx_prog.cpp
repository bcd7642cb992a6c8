// SPDX-License-Identifier: MIT
// The ucx transport driven directly through its interface (try_reserve, commit, poll, barrier,
// remote_memory) on every rank of `mpiexec -n N`, with node size 1 (every peer through UCX).
// A sink stands in for the core (tests/ucx/CMakeLists.txt runs it at 2 and 3 ranks).
//
//   am_ucx_transport stream    every rank sends every other rank 2000 messages of mixed sizes
//                              (8 B to 512 KiB: eager and rendezvous) on both lanes, back to
//                              back, polling only when refused. Checks: each (source, lane)
//                              arrives complete, in order, intact.
//   am_ucx_transport flow      rank 1.. send rank 0 messages while rank 0 does not poll (it waits
//                              in MPI_Recv for each sender's word that it was refused). Checks:
//                              a sender is refused within a bound (back-pressure works), then
//                              everything arrives, in order.
//   am_ucx_transport echo      rank 0 sends one request to a peer and polls until the reply comes
//                              (answered from inside the delivery), 300 times per peer.
//   am_ucx_transport onesided  put/get of patterns into every peer's segment (1 B to 1 MiB);
//                              atomics on rank 0's words from every rank at once, against exact
//                              sequential results: fetch_add (final value and the set of old
//                              values), compare_swap increments, and/or/xor of disjoint bits,
//                              swap, 32-bit words; min is refused (run by message above); an
//                              access outside a segment throws out_of_segment.
// Every process prints "ucx: ok (rank R)" when its checks held, else "ucx: FAILED: ...".
#include "transport/mpi/mpi_transport.hpp"
#include "transport/transport.hpp"
#include "util/backoff.hpp"

#include <am/config.hpp>
#include <am/error.hpp>

#include <mpi.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

namespace tp = am::transport;
namespace mt = am::transport::mpi;

namespace {

int g_failures = 0;
int g_rank = -1;

void fail(const std::string& what) {
    std::fprintf(stderr, "ucx: FAILED: rank %d: %s\n", g_rank, what.c_str());
    ++g_failures;
}

/// The length of message `seq`: mostly small, some near and over UCX's rendezvous threshold.
std::size_t length_of(std::uint32_t seq) {
    static constexpr std::size_t sizes[] = {8, 16, 24, 40, 100, 8, 300, 16, 1000, 3000, 24, 64};
    if (seq % 97 == 13) return (std::size_t{1} << 19) - seq % 5000;  // about 512 KiB
    if (seq % 31 == 7) return 20000 + seq % 50000;
    return sizes[seq % (sizeof sizes / sizeof sizes[0])];
}

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

/// Stands in for the core: per (source, lane) the next sequence number, checked contents
/// (messages longer than `cap` were sent `cap` long).
class checking_sink final : public tp::message_sink {
  public:
    explicit checking_sink(int size, std::size_t cap = SIZE_MAX)
        : _next(static_cast<std::size_t>(size) * 2, 0), _cap(cap) {}
    void deliver(int source, unsigned lane, std::byte* msg, std::size_t len) override {
        std::uint32_t& next = _next[static_cast<std::size_t>(source) * 2 + lane];
        if (len != std::min(length_of(next), _cap) || !intact(msg, len, source, next)) {
            fail("message " + std::to_string(next) + " from rank " + std::to_string(source) +
                 " lane " + std::to_string(lane) + ": wrong length or contents (" +
                 std::to_string(len) + " bytes), or out of order");
        }
        if (reinterpret_cast<std::uintptr_t>(msg) % 8 != 0) fail("a message not 8-aligned");
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
    std::size_t _cap;
};

void poll_until(tp::transport& t, tp::message_sink& sink, const std::function<bool()>& done) {
    unsigned backoff = 0;
    while (!done()) {
        if (t.poll(sink) == 0) am::util::backoff(backoff, t.spin_limit());
    }
}

void send(tp::transport& t, tp::message_sink& sink, int dest, unsigned lane, std::uint32_t seq,
          std::size_t len) {
    std::byte* p = t.try_reserve(dest, lane, len);
    while (p == nullptr) {
        t.poll(sink);
        p = t.try_reserve(dest, lane, len);
    }
    fill(p, len, t.rank(), seq);
    t.commit(dest, lane, p, len);
}

void barrier(tp::transport& t, tp::message_sink& sink) {
    t.barrier(tp::coll::barrier, [&] { return t.poll(sink); });
}

int stream(tp::transport& t) {
    constexpr std::uint32_t per_peer = 2000;
    checking_sink sink(t.size());
    std::vector<std::uint32_t> seq(static_cast<std::size_t>(t.size()) * 2, 0);
    for (std::uint32_t i = 0; i < per_peer; ++i) {
        for (int d = 0; d < t.size(); ++d) {
            if (d == t.rank()) continue;
            const unsigned lane = i % 2;
            std::uint32_t& s = seq[static_cast<std::size_t>(d) * 2 + lane];
            send(t, sink, d, lane, s, length_of(s));
            ++s;
        }
    }
    const auto expected = std::uint64_t{per_peer} * static_cast<std::uint64_t>(t.size() - 1);
    poll_until(t, sink, [&] { return sink.total() == expected; });
    barrier(t, sink);
    return 0;
}

int flow(tp::transport& t) {
    constexpr std::uint32_t count = 200000;  // far more than UCX and am buffer together
    constexpr std::size_t cap = 4096;
    checking_sink sink(t.size(), cap);
    if (t.rank() == 0) {
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
            const std::size_t len = std::min(length_of(s), cap);
            std::byte* p = t.try_reserve(0, 0, len);
            if (p == nullptr && !told) {
                std::printf("ucx: rank %d refused after %u messages to an unpolled rank\n",
                            t.rank(), s);
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
        if (!told) {
            fail("never refused in " + std::to_string(count) + " messages to an unpolled rank");
            int word = 1;
            MPI_Send(&word, 1, MPI_INT, 0, 77, MPI_COMM_WORLD);
        }
    }
    barrier(t, sink);
    return 0;
}

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
    } else {
        poll_until(t, sink, [&] { return sink.requests == rounds; });
    }
    barrier(t, sink);
    return 0;
}

// ------------------------------------------------------------------------------ one-sided

struct idle_sink final : tp::message_sink {
    void deliver(int source, unsigned, std::byte*, std::size_t) override {
        fail("an unexpected message from rank " + std::to_string(source));
    }
};

/// A one-sided operation's completion: how often `done` ran and the value it got.
struct completion {
    int runs = 0;
    std::uint64_t value = 0;
    static void on_done(void* arg, std::uint64_t value) {
        auto* c = static_cast<completion*>(arg);
        ++c->runs;
        c->value = value;
    }
};

void wait_done(tp::transport& t, tp::message_sink& sink, const completion& c) {
    poll_until(t, sink, [&] { return c.runs > 0; });
    if (c.runs != 1) fail("a completion ran " + std::to_string(c.runs) + " times");
}

std::uint64_t atomic(tp::transport& t, tp::message_sink& sink, int rank, std::uint64_t offset,
                     am::atomic_op op, unsigned bytes, std::uint64_t v, std::uint64_t c = 0) {
    completion done;
    if (!t.remote_memory()->atomic(rank, offset, op, bytes, v, c, completion::on_done, &done)) {
        fail(std::string("atomic ") + am::to_string(op) + " refused");
        return 0;
    }
    wait_done(t, sink, done);
    return done.value;
}

/// put and get of every peer's segment: patterns of 1 B to 1 MiB at several offsets.
void put_get(tp::transport& t, tp::one_sided& os, tp::message_sink& sink) {
    const std::span<std::byte> mine = t.segment(t.rank());
    const std::size_t region = mine.size() / static_cast<std::size_t>(t.size());
    for (int d = 0; d < t.size(); ++d) {
        if (d == t.rank()) continue;
        if (!os.reaches(d)) fail("rank " + std::to_string(d) + " not reachable");
        std::uint64_t offset = static_cast<std::uint64_t>(t.rank()) * region;
        for (std::size_t len : {std::size_t{1}, std::size_t{8}, std::size_t{100}, std::size_t{4096},
                                std::size_t{65537}, std::size_t{1} << 20}) {
            std::vector<std::byte> out(len), back(len);
            fill(out.data(), len, t.rank(), static_cast<std::uint32_t>(len));
            completion put_done, get_done;
            os.put(d, offset, out.data(), len, completion::on_done, &put_done);
            wait_done(t, sink, put_done);
            os.get(d, offset, back.data(), len, completion::on_done, &get_done);
            wait_done(t, sink, get_done);
            if (back != out) fail("get after put of " + std::to_string(len) + " bytes differs");
            offset += len;
        }
    }
    barrier(t, sink);
    // What the peers put into this rank's segment is there (remote completion before done).
    for (int s = 0; s < t.size(); ++s) {
        if (s == t.rank()) continue;
        std::uint64_t offset = static_cast<std::uint64_t>(s) * region;
        for (std::size_t len : {std::size_t{1}, std::size_t{8}, std::size_t{100}, std::size_t{4096},
                                std::size_t{65537}, std::size_t{1} << 20}) {
            if (!intact(mine.data() + offset, len, s, static_cast<std::uint32_t>(len)))
                fail("rank " + std::to_string(s) + "'s put of " + std::to_string(len) +
                     " bytes is not in this segment");
            offset += len;
        }
    }
}

void contended_atomics(tp::transport& t, tp::message_sink& sink) {
    constexpr std::uint64_t n = 200;
    const auto p = static_cast<std::uint64_t>(t.size());
    auto* words = reinterpret_cast<std::uint64_t*>(t.segment(t.rank()).data());
    if (t.rank() == 0) {
        words[0] = 0;            // fetch_add
        words[1] = 0;            // compare_swap increments
        words[2] = ~0ull;        // and: each rank clears its bit
        words[3] = 0;            // or: each rank sets its bit
        words[4] = 0;            // xor: each rank flips its bit twice + once
        words[5] = 0xabcdefull;  // 32-bit: low word fetch_add, wraps
    }
    barrier(t, sink);
    std::vector<std::uint64_t> olds;
    if (t.rank() != 0) {
        for (std::uint64_t i = 0; i < n; ++i)
            olds.push_back(atomic(t, sink, 0, 0, am::atomic_op::add, 8, 1));
        for (std::uint64_t i = 0; i < n; ++i) {
            std::uint64_t seen = atomic(t, sink, 0, 8, am::atomic_op::add, 8, 0);
            for (;;) {
                const std::uint64_t got =
                    atomic(t, sink, 0, 8, am::atomic_op::compare_swap, 8, seen + 1, seen);
                if (got == seen) break;
                seen = got;
            }
        }
        const std::uint64_t bit = 1ull << t.rank();
        atomic(t, sink, 0, 16, am::atomic_op::bit_and, 8, ~bit);
        atomic(t, sink, 0, 24, am::atomic_op::bit_or, 8, bit);
        for (int k = 0; k < 3; ++k) atomic(t, sink, 0, 32, am::atomic_op::bit_xor, 8, bit);
        for (std::uint64_t i = 0; i < n; ++i)
            atomic(t, sink, 0, 40, am::atomic_op::add, 4, 0x80000000ull);
        completion none;
        if (t.remote_memory()->atomic(0, 0, am::atomic_op::min, 8, 0, 0, completion::on_done,
                                      &none))
            fail("min was accepted: UCP has no min");
    }
    // Rank 0 polls meanwhile: over shared memory and TCP, UCX runs atomics (and puts to a
    // rank of this host) by messages that the target's worker handles when it progresses.
    barrier(t, sink);
    // Every rank's old values of the fetch_add, gathered at rank 0: exactly 0 .. (p-1)n-1.
    std::vector<std::uint64_t> all(static_cast<std::size_t>(n * p));
    std::vector<std::uint64_t> send(n, ~0ull);
    if (t.rank() != 0) std::copy(olds.begin(), olds.end(), send.begin());
    MPI_Gather(send.data(), static_cast<int>(n), MPI_UINT64_T, all.data(), static_cast<int>(n),
               MPI_UINT64_T, 0, MPI_COMM_WORLD);
    barrier(t, sink);
    if (t.rank() != 0) return;
    const std::uint64_t others = (p - 1) * n;
    if (words[0] != others)
        fail("fetch_add: " + std::to_string(words[0]) + ", not " + std::to_string(others));
    if (words[1] != others)
        fail("compare_swap: " + std::to_string(words[1]) + ", not " + std::to_string(others));
    std::vector<std::uint64_t> got(all.begin() + static_cast<std::ptrdiff_t>(n), all.end());
    std::sort(got.begin(), got.end());
    for (std::uint64_t i = 0; i < got.size(); ++i) {
        if (got[i] != i) {
            fail("fetch_add old values are not 0.." + std::to_string(others - 1));
            break;
        }
    }
    std::uint64_t bits = 0;
    for (int r = 1; r < t.size(); ++r) bits |= 1ull << r;
    if (words[2] != ~bits) fail("and: wrong bits");
    if (words[3] != bits) fail("or: wrong bits");
    if (words[4] != bits) fail("xor: wrong bits");
    const std::uint64_t low = (0xabcdefull + others * 0x80000000ull) & 0xffffffffull;
    if (words[5] != low) fail("32-bit add touched the high word or lost an add");
}

void bad_access(tp::transport& t, tp::one_sided& os) {
    const int peer = (t.rank() + 1) % t.size();
    const std::size_t seg = t.segment(t.rank()).size();  // every rank's is the same size
    std::byte b{};
    try {
        os.put(peer, seg - 4, &b, 8, completion::on_done, nullptr);
        fail("a put past the end of a segment was accepted");
    } catch (const am::error& e) {
        if (e.code() != am::errc::out_of_segment) fail(std::string("wrong error: ") + e.what());
    }
}

int onesided(tp::transport& t) {
    tp::one_sided* os = t.remote_memory();
    if (os == nullptr) {
        fail("the transport has no one-sided interface: not the ucx transport");
        return 1;
    }
    if (os->reaches(t.rank())) fail("a rank reaches itself through the network");
    idle_sink sink;
    put_get(t, *os, sink);
    barrier(t, sink);
    contended_atomics(t, sink);
    bad_access(t, *os);
    barrier(t, sink);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    const std::string mode = argc > 1 ? argv[1] : "";
    am::config cfg;
    cfg.transport = am::transport_kind::ucx;
    cfg.node_size = 1;
    cfg.segment_bytes = std::size_t{16} << 20;
    const int rc = mt::launch_on(MPI_COMM_WORLD, cfg, [&](tp::transport& t) {
        int status = 0;
        if (mode == "stream") {
            status = stream(t);
        } else if (mode == "flow") {
            status = flow(t);
        } else if (mode == "echo") {
            status = echo(t);
        } else if (mode == "onesided") {
            status = onesided(t);
        } else {
            fail("unknown mode " + mode);
        }
        t.mark_finished();
        return status;
    });
    if (rc != 0) fail("launch_on returned " + std::to_string(rc));
    if (g_failures == 0) std::printf("ucx: ok (rank %d)\n", g_rank);
    std::fflush(stdout);
    MPI_Finalize();
    return g_failures == 0 ? 0 : 1;
}
