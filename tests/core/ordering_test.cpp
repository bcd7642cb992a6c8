// SPDX-License-Identifier: MIT
// Ordering: messages from one rank to another on one lane are handled in send order, whatever
// their category, also when rings are tiny and when sends from handlers are parked.
#include "support/spmd.hpp"

namespace {

using am_test::spmd_test;

class ordering : public spmd_test {};

// Every rank sends `count` requests to every rank, cycling through short, medium and
// (empty) long messages that share one sequence per (source, destination); each is answered
// by a reply carrying the same number, and both sides check the sequences.
void in_order(am::context& ctx, int count) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::size_t>(n);
    std::vector<std::uint64_t> next_request(un, 0), next_reply(un, 0);
    std::uint64_t out_of_order = 0;
    am::counter requests(ctx), replies(ctx);
    auto answer = ctx.handler([&](am::token& t, std::uint64_t seq) {
        auto& want = next_reply[static_cast<std::size_t>(t.source())];
        if (seq != want) ++out_of_order;
        EXPECT_EQ(seq, want) << "reply from rank " << t.source() << " out of order";
        want = seq + 1;
        replies.add();
    });
    auto check = [&](am::token& t, std::uint64_t seq) {
        auto& want = next_request[static_cast<std::size_t>(t.source())];
        if (seq != want) ++out_of_order;
        EXPECT_EQ(seq, want) << "request from rank " << t.source() << " out of order";
        want = seq + 1;
        requests.add();
        t.reply(answer, seq);
    };
    auto on_short = ctx.handler([&](am::token& t, std::uint64_t seq) { check(t, seq); });
    auto on_medium =
        ctx.handler([&](am::token& t, std::span<const std::byte> p, std::uint64_t seq) {
            EXPECT_EQ(p.size(), seq % 97);
            EXPECT_EQ(am_test::checksum(p), am_test::checksum(am_test::pattern(p.size(), seq)));
            check(t, seq);
        });
    auto on_long = ctx.handler([&](am::token& t, std::span<std::byte> p, std::uint64_t seq) {
        EXPECT_TRUE(p.empty());
        check(t, seq);
    });
    ctx.barrier();
    for (std::uint64_t seq = 0; seq < static_cast<std::uint64_t>(count); ++seq) {
        for (int i = 0; i < n; ++i) {
            const int d = (me + i) % n;
            switch (seq % 3) {
                case 0:
                    ctx.request(d, on_short, seq);
                    break;
                case 1: {
                    const auto buf = am_test::pattern(seq % 97, seq);
                    ctx.request(d, on_medium, am::bytes(buf), seq);
                    break;
                }
                default:
                    ctx.request(d, on_long, std::span<const std::byte>{}, 0, seq);
            }
        }
    }
    const auto total = static_cast<std::uint64_t>(count) * static_cast<std::uint64_t>(n);
    requests.wait(total);
    replies.wait(total);
    EXPECT_EQ(out_of_order, 0u);
    for (int s = 0; s < n; ++s) {
        EXPECT_EQ(next_request[static_cast<std::size_t>(s)], static_cast<std::uint64_t>(count));
        EXPECT_EQ(next_reply[static_cast<std::size_t>(s)], static_cast<std::uint64_t>(count));
    }
    ctx.barrier();
}

TEST_P(ordering, per_lane_send_order) {
    const int count = ranks() > 16 ? 30 : 3000;
    ASSERT_EQ(run([count](am::context& ctx) { in_order(ctx, count); }), 0);
}

TEST_P(ordering, per_lane_send_order_tiny_rings) {
    const int count = ranks() > 16 ? 30 : 3000;
    ASSERT_EQ(run([count](am::context& ctx) { in_order(ctx, count); },
                  [](am::config& c) { c.ring_bytes = 1024; }),
              0);
}

// Handlers send bursts back to the requester with 1 KiB rings: most of each burst is parked and
// flushed later, yet per (source, destination) order must hold across bursts.
TEST_P(ordering, handler_sends_keep_order) {
    const int triggers = ranks() > 16 ? 2 : 20;
    const int burst = ranks() > 16 ? 10 : 25;
    const int rc = run(
        [triggers, burst](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            const auto un = static_cast<std::size_t>(n);
            std::vector<std::uint64_t> next_to(un, 0), next_from(un, 0);
            am::counter got(ctx), trigger_acks(ctx);
            auto on_short = ctx.handler([&](am::token& t, std::uint64_t seq) {
                auto& want = next_from[static_cast<std::size_t>(t.source())];
                EXPECT_EQ(seq, want) << "from rank " << t.source();
                want = seq + 1;
                got.add();
            });
            auto on_medium =
                ctx.handler([&](am::token& t, std::span<const std::byte> p, std::uint64_t seq) {
                    EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(120, seq)));
                    auto& want = next_from[static_cast<std::size_t>(t.source())];
                    EXPECT_EQ(seq, want) << "from rank " << t.source();
                    want = seq + 1;
                    got.add();
                });
            auto trigger_ack = ctx.handler([&](am::token&) { trigger_acks.add(); });
            auto trigger = ctx.handler([&](am::token& t) {
                auto& seq = next_to[static_cast<std::size_t>(t.source())];
                for (int i = 0; i < burst; ++i, ++seq) {
                    if (seq % 2 == 0) {
                        t.ctx().request(t.source(), on_short, seq);
                    } else {
                        const auto buf = am_test::pattern(120, seq);
                        t.ctx().request(t.source(), on_medium, am::bytes(buf), seq);
                    }
                }
                t.reply(trigger_ack);
            });
            ctx.barrier();
            for (int k = 0; k < triggers; ++k) {
                for (int i = 0; i < n; ++i) ctx.request((me + i) % n, trigger);
            }
            const auto un64 = static_cast<std::uint64_t>(n);
            got.wait(un64 * static_cast<std::uint64_t>(triggers * burst));
            trigger_acks.wait(un64 * static_cast<std::uint64_t>(triggers));
            for (int s = 0; s < n; ++s) {
                EXPECT_EQ(next_from[static_cast<std::size_t>(s)],
                          static_cast<std::uint64_t>(triggers * burst));
            }
            ctx.barrier();
        },
        [](am::config& c) { c.ring_bytes = 1024; });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(ordering, am_test::all_params());

}  // namespace
