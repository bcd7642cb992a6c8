// SPDX-License-Identifier: MIT
// Statistics: exact per-handler and per-rank counters from context::stats(), parking of sends
// from handlers when rings are full, and the AM_STATS report printed at exit.
#include "support/spmd.hpp"

#include <span>

namespace {

using am_test::spmd_test;

class stats : public spmd_test {};

// Per destination and rank: 3 pings (short), 2 mediums of 100 B, 4 asks (short) each answered
// by a 10-byte medium reply, 1 long of 64 B.
struct traffic {
    am::counter pings, mediums, asks, answers, longs;
    explicit traffic(am::context& ctx)
        : pings(ctx), mediums(ctx), asks(ctx), answers(ctx), longs(ctx) {}
};

void exact_counts(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::uint64_t>(n);
    traffic tr(ctx);
    auto ping = ctx.handler([&](am::token&, std::uint32_t k) {
        EXPECT_LT(k, 3u);
        tr.pings.add();
    });
    auto medium = ctx.handler([&](am::token&, std::span<const std::byte> p) {
        EXPECT_EQ(p.size(), 100u);
        tr.mediums.add();
    });
    auto answer = ctx.handler([&](am::token&, std::span<const std::byte> p) {
        EXPECT_EQ(p.size(), 10u);
        tr.answers.add();
    });
    auto ask = ctx.handler([&, answer](am::token& t) {
        tr.asks.add();
        const std::vector<std::byte> ten(10, std::byte{7});
        t.reply(answer, am::bytes(ten));
    });
    auto put = ctx.handler([&](am::token&, std::span<std::byte> p) {
        EXPECT_EQ(p.size(), 64u);
        tr.longs.add();
    });
    ctx.barrier();
    const std::vector<std::byte> hundred(100), sixty_four(64);
    for (int d = 0; d < n; ++d) {
        for (int k = 0; k < 3; ++k) ctx.request(d, ping, static_cast<std::uint32_t>(k));
        for (int k = 0; k < 2; ++k) ctx.request(d, medium, am::bytes(hundred));
        for (int k = 0; k < 4; ++k) ctx.request(d, ask);
        ctx.request(d, put, am::bytes(sixty_four), static_cast<std::size_t>(me) * 64);
    }
    tr.pings.wait(3 * un);
    tr.mediums.wait(2 * un);
    tr.asks.wait(4 * un);
    tr.answers.wait(4 * un);
    tr.longs.wait(un);

    const am::stats s = ctx.stats();
    EXPECT_EQ(s.rank, me);
    EXPECT_EQ(s.messages_sent, 14 * un);
    EXPECT_EQ(s.bytes_sent, 304 * un);
    EXPECT_EQ(s.replies_sent, 4 * un);
    EXPECT_EQ(s.messages_received, 14 * un);
    EXPECT_EQ(s.bytes_received, 304 * un);
    EXPECT_EQ(s.credit_stalls, 0u);  // the default rings never fill here
    EXPECT_EQ(s.queued_from_handlers, 0u);
    EXPECT_EQ(s.bad_headers, 0u);
    // The library's own handlers come first and carried nothing here.
    ASSERT_EQ(s.handlers.size(), s.library_handlers + 5u);
    for (std::size_t i = 0; i < s.library_handlers; ++i) {
        EXPECT_EQ(s.handlers[i].sent + s.handlers[i].received, 0u) << s.handlers[i].name;
    }
    const std::span<const am::handler_stats> mine(s.handlers.data() + s.library_handlers, 5);
    struct want {
        std::uint64_t sent, sent_bytes, received, received_bytes;
    };
    const want w[5] = {{3 * un, 0, 3 * un, 0},
                       {2 * un, 200 * un, 2 * un, 200 * un},
                       {4 * un, 40 * un, 4 * un, 40 * un},
                       {4 * un, 0, 4 * un, 0},
                       {un, 64 * un, un, 64 * un}};
    for (std::size_t i = 0; i < 5; ++i) {
        EXPECT_EQ(mine[i].sent, w[i].sent) << "handler " << i;
        EXPECT_EQ(mine[i].sent_bytes, w[i].sent_bytes) << "handler " << i;
        EXPECT_EQ(mine[i].received, w[i].received) << "handler " << i;
        EXPECT_EQ(mine[i].received_bytes, w[i].received_bytes) << "handler " << i;
    }
    // Callables are named after their type: the enclosing function and the signature.
    EXPECT_TRUE(am_test::contains(mine[0].name, "exact_counts")) << mine[0].name;
    EXPECT_TRUE(am_test::contains(mine[0].name, "lambda")) << mine[0].name;
    const std::string text = s.to_string();
    EXPECT_TRUE(am_test::contains(text, "am stats rank " + std::to_string(me))) << text;
    EXPECT_TRUE(am_test::contains(text, mine[4].name)) << text;
    // Idle library handlers are left out of the report.
    EXPECT_FALSE(am_test::contains(text, "am::rma::")) << text;
    ctx.barrier();
}

TEST_P(stats, exact_counts) {
    ASSERT_EQ(run(exact_counts), 0);
}

// With 1 KiB rings, a handler that sends 64 sixteen-argument requests cannot inject them all:
// the burst a rank sends itself is handled on its own thread, which cannot drain the ring
// meanwhile, so some sends are necessarily parked.
TEST_P(stats, queued_from_handlers_with_tiny_rings) {
    constexpr int burst = 64;
    const int rc = run(
        [](am::context& ctx) {
            const int n = ctx.size();
            const auto un = static_cast<std::uint64_t>(n);
            am::counter got(ctx), bursts(ctx);
            using u64 = std::uint64_t;
            auto fat = ctx.handler([&](am::token&, u64, u64, u64, u64, u64, u64, u64, u64, u64, u64,
                                       u64, u64, u64, u64, u64, u64 last) {
                EXPECT_EQ(last, 15u);
                got.add();
            });
            auto go = ctx.handler([&, fat](am::token& t) {
                bursts.add();
                for (u64 i = 0; i < burst; ++i) {
                    t.ctx().request(t.source(), fat, i, i, i, i, i, i, i, i, i, i, i, i, i, i, i,
                                    u64{15});
                }
            });
            ctx.barrier();
            for (int d = 0; d < n; ++d) ctx.request(d, go);
            bursts.wait(un);
            got.wait(burst * un);
            const am::stats s = ctx.stats();
            EXPECT_EQ(s.messages_sent, un + burst * un);
            EXPECT_EQ(s.messages_received, un + burst * un);
            EXPECT_EQ(s.replies_sent, 0u);
            EXPECT_GT(s.queued_from_handlers, 0u);
            EXPECT_LE(s.queued_from_handlers, burst * un);
            EXPECT_GE(s.credit_stalls, s.queued_from_handlers);
            const std::size_t b = s.library_handlers;
            ASSERT_EQ(s.handlers.size(), b + 2u);
            EXPECT_EQ(s.handlers[b].sent, burst * un);
            EXPECT_EQ(s.handlers[b].received, burst * un);
            EXPECT_EQ(s.handlers[b + 1].sent, un);
            EXPECT_EQ(s.handlers[b + 1].received, un);
            ctx.barrier();
        },
        [](am::config& c) { c.ring_bytes = 1024; });
    ASSERT_EQ(rc, 0);
}

// config::print_stats (AM_STATS=1) prints every rank's report to stderr when it finishes (each
// rank on its own process's stderr: on mpi this process has its own rank's report only).
TEST_P(stats, printed_at_exit) {
    ::testing::internal::CaptureStderr();  // forked shm ranks inherit the redirected stderr
    const int rc = run(exact_counts, [](am::config& c) { c.print_stats = true; });
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_EQ(rc, 0) << err;
    ASSERT_FALSE(visible_ranks().empty());
    for (int r : visible_ranks()) {
        EXPECT_TRUE(am_test::contains(err, "am stats rank " + std::to_string(r) + ":"))
            << "no report of rank " << r << " in:\n"
            << err;
    }
    const std::string line =
        "sent " + std::to_string(14 * ranks()) + " msgs / " + std::to_string(304 * ranks()) + " B";
    EXPECT_TRUE(am_test::contains(err, line)) << line << " not in:\n" << err;
    EXPECT_TRUE(am_test::contains(err, "exact_counts")) << err;
}

AM_INSTANTIATE(stats, am_test::all_params());

}  // namespace
