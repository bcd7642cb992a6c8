// SPDX-License-Identifier: MIT
// Typed messages and epochs: every message sent in an epoch, nested ones too, has been handled
// on every rank when the epoch ends; exact counts checked with the epoch's global sum.
#include "support/spmd.hpp"

#include <am/typed.hpp>

namespace {

using am_test::spmd_test;

class typed : public spmd_test {};

struct hop {
    std::uint64_t origin;
    std::uint32_t ttl;
    std::uint32_t pad;
};

// Every rank starts `fan` chains per destination; each message is forwarded to the next rank
// `ttl` more times. After the epoch, the handled count of every rank summed equals the number
// of messages sent in total, which is known in closed form.
void chains(am::context& ctx, bool coalesced, int depth_option, std::uint32_t ttl) {
    const int n = ctx.size(), me = ctx.rank();
    std::uint64_t handled = 0;
    std::unique_ptr<am::coalesced<hop>> sender;
    am::message_type<hop>* type_ptr = nullptr;
    am::message_type<hop> type(ctx, [&](int, const hop& h) {
        ++handled;
        if (h.ttl == 0) return;
        const hop next{h.origin, h.ttl - 1, 0};
        const int dest = static_cast<int>((h.origin + h.ttl + static_cast<std::uint64_t>(me)) %
                                          static_cast<std::uint64_t>(n));
        if (sender) {
            sender->send(next, dest);
        } else {
            type_ptr->send(next, dest);
        }
    });
    type_ptr = &type;
    if (coalesced) sender = std::make_unique<am::coalesced<hop>>(type, am::coalesce_options{256});
    constexpr std::uint64_t fan = 50;
    for (int round = 0; round < 3; ++round) {
        handled = 0;
        am::epoch epoch(ctx, {.depth = depth_option});
        for (int d = 0; d < n; ++d) {
            for (std::uint64_t i = 0; i < fan; ++i) {
                const hop h{static_cast<std::uint64_t>(me) * 1000 + i, ttl, 0};
                if (sender) {
                    sender->send(h, d);
                } else {
                    type.send(h, d);
                }
            }
        }
        const std::uint64_t sent_here = epoch.end();
        (void)sent_here;
        EXPECT_EQ(epoch.stats().messages_handled, handled);
        // Every message (fan per pair, each forwarded ttl times) has been handled once the
        // epoch has ended: an empty epoch sums the counts.
        am::epoch sum(ctx);
        const std::uint64_t total = sum.end(handled);
        EXPECT_EQ(total,
                  static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(n) * fan * (ttl + 1))
            << "round " << round;
        if (coalesced && n > 1) {
            EXPECT_GT(epoch.stats().coalescing_ratio(), 1.0);
        }
    }
}

TEST_P(typed, nested_chains_uncoalesced) {
    ASSERT_EQ(run([](am::context& ctx) { chains(ctx, false, -1, 3); }), 0);
}
TEST_P(typed, nested_chains_coalesced) {
    ASSERT_EQ(run([](am::context& ctx) { chains(ctx, true, -1, 4); }), 0);
}
TEST_P(typed, nested_chains_depth_limited) {
    ASSERT_EQ(run([](am::context& ctx) { chains(ctx, true, 2, 2); }), 0);
}

INSTANTIATE_TEST_SUITE_P(all, typed, ::testing::ValuesIn(am_test::all_params()),
                         am_test::param_name);

}  // namespace
