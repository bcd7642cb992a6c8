// SPDX-License-Identifier: MIT
// Test support for the typed layer: randomized nested traffic whose every hop is decided by the
// message's contents, so that each rank can compute in advance exactly how many messages it
// will send and handle in an epoch (a simulation of the whole job's traffic), and helpers to
// capture what a job prints.
#pragma once

#include "support/expect.hpp"
#include "support/watchdog.hpp"

#include <am/typed.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace typed_test {

using am_test::mix;

/// This rank's place in the ring of ranks: {size, rank, right neighbour}.
struct ring_place {
    int n, me, right;
};
inline ring_place ring_of(const am::context& ctx) {
    return {ctx.size(), ctx.rank(), (ctx.rank() + 1) % ctx.size()};
}

/// The plain message of the deterministic tests: a value, the sending rank and an index.
struct item {
    std::uint64_t value;
    std::int32_t from;
    std::uint32_t index;
};

/// The value of item `i` from rank `from` to rank `to` (receivers recompute it to check).
inline std::uint64_t item_value(int from, int to, std::uint32_t i) {
    return mix((static_cast<std::uint64_t>(from) << 40) ^ (static_cast<std::uint64_t>(to) << 20) ^
               i);
}

/// One message of the randomized traffic. Its route (destination, message type, sender) is a
/// function of `salt`; a handler forwards it `ttl` more times, each time with a new salt.
struct hop {
    std::uint64_t id;     ///< origin rank, epoch and index: unique per initial message
    std::uint32_t salt;   ///< decides this hop's route
    std::uint16_t ttl;    ///< hops still to go after this one
    std::uint16_t epoch;  ///< the sender's epoch number when the chain started
    std::int32_t from;    ///< the rank that sent this hop
    std::uint32_t check;  ///< checksum of the fields above
};
static_assert(sizeof(hop) == 24);

/// The second message type: a hop with a payload (another size, another handler form).
struct walk {
    hop h;
    std::uint64_t payload;  ///< payload_of(h)
};
static_assert(sizeof(walk) == 32);

inline std::uint32_t check_of(const hop& h) {
    return static_cast<std::uint32_t>(
        mix(h.id ^ (std::uint64_t{h.salt} << 16) ^ (std::uint64_t{h.ttl} << 8) ^ h.epoch ^
            (std::uint64_t{static_cast<std::uint32_t>(h.from)} << 40)));
}
inline std::uint64_t payload_of(const hop& h) {
    return mix(h.id ^ std::uint64_t{h.salt});
}

/// How a hop travels: to `dest`, as type 0 (`hop`) or 1 (`walk`), by `via` 0: one core message
/// each (message_type::send), 1: through a coalescing layer, 2: a span of several (initial
/// messages) or coalesced (forwarded ones). `hot` quarters of the hops go to rank 0 (a hot spot
/// whose rings fill), the others to a random rank.
struct route {
    int dest;
    int type;
    int via;
};
inline route route_of(std::uint32_t salt, int ranks, int hot) {
    const std::uint64_t m = mix(std::uint64_t{salt} ^ 0x5bd1e995ull);
    const bool to_hot = static_cast<int>((m >> 48) & 3) < hot;
    return {to_hot ? 0 : static_cast<int>(m % static_cast<std::uint64_t>(ranks)),
            static_cast<int>((m >> 32) & 1), static_cast<int>((m >> 40) % 3)};
}
inline std::uint32_t next_salt(std::uint32_t salt, std::uint16_t ttl) {
    return static_cast<std::uint32_t>(mix((std::uint64_t{salt} << 16) | ttl) >> 11);
}

/// Parameters of a randomized traffic job.
struct traffic_options {
    std::uint64_t seed = 1;
    int epochs = 4;           ///< traffic epochs; even ones general, odd ones depth-limited
    int max_messages = 60;    ///< initial messages per rank and epoch: 0 .. max_messages
    int max_ttl = 9;          ///< forwards per chain in general epochs: 0 .. max_ttl
    int max_ttl_limited = 4;  ///< in depth-limited epochs (≤ 6)
    std::size_t coalesce_bytes = 64;
    int sender_threads = 0;     ///< > 0: std::threads send the initial messages (thread_multiple)
    bool only_general = false;  ///< every epoch general
    bool only_limited = false;  ///< every epoch depth-limited
    bool lag = true;            ///< some ranks poll a while before they begin each epoch
    int hot = 0;                ///< quarters of the hops that go to rank 0 (0 .. 4)
};

/// What one rank sends and handles in one epoch, from a simulation of every rank's chains.
struct epoch_plan {
    std::vector<hop> mine;                   ///< this rank's initial messages
    std::array<std::uint64_t, 2> handled{};  ///< hops this rank handles, by type
    std::uint64_t sent = 0;                  ///< hops this rank sends (initial and forwarded)
    std::uint64_t total = 0;                 ///< hops handled in the whole job
    int max_ttl = 0;                         ///< the deepest chain of the job (its nesting depth)
};

inline hop make_hop(std::uint64_t id, std::uint32_t salt, std::uint16_t ttl, std::uint16_t epoch,
                    int from) {
    hop h{id, salt, ttl, epoch, from, 0};
    h.check = check_of(h);
    return h;
}

/// The plan of traffic epoch `index` (epoch number `number` on every rank) for rank `me`.
inline epoch_plan make_plan(const traffic_options& o, int index, std::uint16_t number, int ranks,
                            int me, bool limited) {
    epoch_plan p;
    const int max_ttl = limited ? o.max_ttl_limited : o.max_ttl;
    for (int r = 0; r < ranks; ++r) {
        const std::uint64_t base =
            mix(o.seed * 1000003ull + static_cast<std::uint64_t>(r) * 7919ull +
                static_cast<std::uint64_t>(index) * 104729ull);
        const int count = static_cast<int>(base % static_cast<std::uint64_t>(o.max_messages + 1));
        for (int i = 0; i < count; ++i) {
            const std::uint64_t id = (static_cast<std::uint64_t>(r) << 40) |
                                     (static_cast<std::uint64_t>(number) << 24) |
                                     static_cast<std::uint64_t>(i);
            std::uint32_t salt =
                static_cast<std::uint32_t>(mix(base + static_cast<std::uint64_t>(i)));
            std::uint16_t ttl =
                static_cast<std::uint16_t>(mix(salt) % static_cast<std::uint64_t>(max_ttl + 1));
            if (ttl > p.max_ttl) p.max_ttl = ttl;
            if (r == me) p.mine.push_back(make_hop(id, salt, ttl, number, r));
            int sender = r;
            for (;;) {
                const route rt = route_of(salt, ranks, o.hot);
                if (sender == me) ++p.sent;
                if (rt.dest == me) ++p.handled[static_cast<std::size_t>(rt.type)];
                ++p.total;
                if (ttl == 0) break;
                salt = next_salt(salt, ttl);
                --ttl;
                sender = rt.dest;
            }
        }
    }
    return p;
}

/// Runs `opt.epochs` epochs of randomized nested traffic on this rank and checks, after each,
/// the exact number of messages this rank sent and handled (per type), the job's total (summed
/// with a second, empty epoch), the end value, and that no handler ran outside its epoch.
/// Counters are atomics: handlers may run on a progress thread or on sending threads.
inline void run_traffic(am::context& ctx, const traffic_options& opt) {
    const int n = ctx.size(), me = ctx.rank();
    struct state {
        std::array<std::atomic<std::uint64_t>, 2> handled{};
        std::atomic<std::uint64_t> bad_check{0}, bad_source{0}, bad_route{0}, bad_epoch{0};
        std::atomic<std::uint32_t> current{0};  // epoch this rank has reached (set before begin)
        std::atomic<std::uint32_t> ended{0};    // last epoch that ended on this rank
        am::message_type<hop>* hops = nullptr;
        am::message_type<walk>* walks = nullptr;
        am::coalesced<hop>* hop_buf = nullptr;
        am::coalesced<walk>* walk_buf = nullptr;
    } s;
    // Sends hop `h` the way its route says; initial span sends are collected by the caller.
    const auto send = [&s](const hop& h, const route& rt) {
        if (rt.type == 0) {
            if (rt.via == 0) {
                s.hops->send(h, rt.dest);
            } else {
                s.hop_buf->send(h, rt.dest);
            }
        } else {
            const walk w{h, payload_of(h)};
            if (rt.via == 0) {
                s.walks->send(w, rt.dest);
            } else {
                s.walk_buf->send(w, rt.dest);
            }
        }
    };
    // What every handler does with one hop of `type` from `source`.
    const int hot = opt.hot;
    const auto handle = [&s, &send, n, me, hot](int type, int source, const hop& h) {
        if (h.check != check_of(h)) s.bad_check.fetch_add(1);
        if (source != h.from) s.bad_source.fetch_add(1);
        const route rt = route_of(h.salt, n, hot);
        if (rt.dest != me || rt.type != type) s.bad_route.fetch_add(1);
        // A message of epoch k runs only once this rank has reached k and before k ended here.
        if (h.epoch != s.current.load() || s.ended.load() >= h.epoch) s.bad_epoch.fetch_add(1);
        s.handled[static_cast<std::size_t>(type)].fetch_add(1);
        if (h.ttl == 0) return;
        const std::uint32_t salt = next_salt(h.salt, h.ttl);
        send(make_hop(h.id, salt, static_cast<std::uint16_t>(h.ttl - 1), h.epoch, me),
             route_of(salt, n, hot));
    };
    am::message_type<hop> hops(
        ctx, [&handle](int source, const hop& h) { handle(0, source, h); }, "hop");
    am::message_type<walk> walks(
        ctx,
        [&handle, &s](int source, std::span<const walk> batch) {
            for (const walk& w : batch) {
                if (w.payload != payload_of(w.h)) s.bad_check.fetch_add(1);
                handle(1, source, w.h);
            }
        },
        "walk");
    const std::size_t bytes = std::min(opt.coalesce_bytes, ctx.max_medium());
    am::coalesced<hop> hop_buf(hops, {.bytes = std::max(bytes, sizeof(hop))});
    am::coalesced<walk> walk_buf(walks, {.bytes = std::max(bytes, sizeof(walk))});
    s.hops = &hops, s.walks = &walks, s.hop_buf = &hop_buf, s.walk_buf = &walk_buf;

    // Sends the initial messages with index % stride == first.
    const auto send_initial = [&](const std::vector<hop>& mine, std::size_t first,
                                  std::size_t stride) {
        std::vector<std::vector<hop>> hop_spans(static_cast<std::size_t>(n));
        std::vector<std::vector<walk>> walk_spans(static_cast<std::size_t>(n));
        for (std::size_t i = first; i < mine.size(); i += stride) {
            const route rt = route_of(mine[i].salt, n, opt.hot);
            if (rt.via != 2) {
                send(mine[i], rt);
            } else if (rt.type == 0) {
                hop_spans[static_cast<std::size_t>(rt.dest)].push_back(mine[i]);
            } else {
                walk_spans[static_cast<std::size_t>(rt.dest)].push_back(
                    walk{mine[i], payload_of(mine[i])});
            }
        }
        for (int d = 0; d < n; ++d) {
            std::span<const hop> hv(hop_spans[static_cast<std::size_t>(d)]);
            for (std::size_t at = 0; at < hv.size(); at += hops.max_batch()) {
                hops.send(hv.subspan(at, std::min(hops.max_batch(), hv.size() - at)), d);
            }
            std::span<const walk> wv(walk_spans[static_cast<std::size_t>(d)]);
            for (std::size_t at = 0; at < wv.size(); at += walks.max_batch()) {
                walks.send(wv.subspan(at, std::min(walks.max_batch(), wv.size() - at)), d);
            }
        }
    };

    std::uint32_t number = 0;  // epochs begun on this rank
    for (int e = 0; e < opt.epochs; ++e) {
        const bool limited = opt.only_limited || (!opt.only_general && e % 2 == 1);
        ++number;
        const epoch_plan plan =
            make_plan(opt, e, static_cast<std::uint16_t>(number), n, me, limited);
        s.handled[0] = 0, s.handled[1] = 0;
        // A third of the ranks lag before they begin the epoch, polling meanwhile: messages of
        // faster ranks reach them before they have begun it, and must wait (the handler's
        // epoch check fails if they run now).
        if (opt.lag && mix(opt.seed * 31 + number * 7 + static_cast<std::uint64_t>(me)) % 3 == 0) {
            for (int i = 0; i < 200; ++i) {
                (void)ctx.poll();
                std::this_thread::yield();
            }
        }
        s.current = number;
        std::uint64_t value;
        am::epoch_stats st;
        {
            am::epoch epoch(
                ctx, limited ? am::epoch_options{.depth = plan.max_ttl} : am::epoch_options{});
            if (opt.sender_threads > 0) {
                std::vector<std::thread> threads;
                for (int t = 0; t < opt.sender_threads; ++t) {
                    threads.emplace_back([&, t] {
                        send_initial(plan.mine, static_cast<std::size_t>(t),
                                     static_cast<std::size_t>(opt.sender_threads));
                    });
                }
                for (std::thread& t : threads) t.join();
            } else {
                send_initial(plan.mine, 0, 1);
            }
            value = epoch.end(static_cast<std::uint64_t>(me) + 1);
            st = epoch.stats();
        }
        s.ended = number;
        const std::string where = "seed " + std::to_string(opt.seed) + ", epoch " +
                                  std::to_string(number) + (limited ? " (depth " : " (general") +
                                  (limited ? std::to_string(plan.max_ttl) + ")" : ")") + ", rank " +
                                  std::to_string(me);
        EXPECT_EQ(value, static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n + 1) / 2)
            << where;
        EXPECT_EQ(s.handled[0].load(), plan.handled[0]) << where;
        EXPECT_EQ(s.handled[1].load(), plan.handled[1]) << where;
        EXPECT_EQ(st.epoch, number) << where;
        EXPECT_EQ(st.messages_handled, plan.handled[0] + plan.handled[1]) << where;
        EXPECT_EQ(st.messages_sent, plan.sent) << where;
        EXPECT_GE(st.waves, limited ? 1u : 2u) << where;
        // The whole job's count, summed by an empty epoch, and checked against the simulation.
        const std::uint64_t mine = s.handled[0].load() + s.handled[1].load();
        ++number;
        s.current = number;
        am::epoch sum(ctx, {.depth = 0});
        const std::uint64_t total = sum.end(mine);
        s.ended = number;
        EXPECT_EQ(total, plan.total) << where;
        EXPECT_EQ(s.bad_check.load(), 0u) << where;
        EXPECT_EQ(s.bad_source.load(), 0u) << where;
        EXPECT_EQ(s.bad_route.load(), 0u) << where;
        EXPECT_EQ(s.bad_epoch.load(), 0u) << where;
        if (::testing::Test::HasFailure()) break;  // one report per rank is enough
    }
}

/// The rank function of a randomized traffic job with `opt` (for spmd_test::run).
inline am_test::rank_fn traffic_job(const traffic_options& opt) {
    return [opt](am::context& ctx) { run_traffic(ctx, opt); };
}

/// all_params() with the mpi transport at 2 ranks only: for tests of the typed layer's own
/// checks and bookkeeping (errors, caches, statistics, handler forms); the traffic, epoch,
/// deferral and coalescing tests run on every mpi variant.
inline std::vector<am_test::spmd_param> light_params() {
    return am_test::exact_params({1, 2, 4, 64}, {1, 2, 4}, {2});
}

/// Output of fd 2 while `f` runs (shm ranks are forked with it redirected, so their output is
/// in it too).
template <class F>
std::string capture_stderr(F&& f) {
    ::testing::internal::CaptureStderr();
    f();
    return ::testing::internal::GetCapturedStderr();
}

/// The hang guard (tests/support/watchdog.hpp): watchdog guard("what", seconds).
using am_test::watchdog;

/// Seconds since `t`.
inline double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

/// The core-level count of messages run by the program's `i`-th handler on this rank
/// (a message_type registers one handler, after the library's).
inline std::uint64_t core_received(am::context& ctx, std::size_t i) {
    const am::stats st = ctx.stats();
    return st.handlers.at(st.library_handlers + i).received;
}

}  // namespace typed_test
