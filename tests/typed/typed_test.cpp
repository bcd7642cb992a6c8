// SPDX-License-Identifier: MIT
// Typed messages and epochs: every message sent in an epoch, nested ones too, has been handled
// on every rank when the epoch ends; exact counts checked with the epoch's global sum.
#include "support/spmd.hpp"

#include <am/typed.hpp>

#include <atomic>
#include <functional>

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

// Ranks that end an epoch with different detectors are told so in the first round, instead of
// reading each other's counts as something else.
class typed_multi : public spmd_test {};

TEST_P(typed_multi, depth_mismatch_is_detected) {
    testing::internal::CaptureStderr();
    const int status = run([](am::context& ctx) {
        am::epoch epoch(ctx, {.depth = ctx.rank() == 0 ? -1 : 0});
        epoch.end();
    });
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(status, 0);
    EXPECT_NE(err.find("different epoch_options::depth"), std::string::npos) << err;
}

// A combining layer fed by handlers on the progress thread while the rank's thread ends the
// epoch (and flushes the layer): every value arrives, summed per key.
TEST_P(typed, reducer_with_progress_thread) {
    struct kv {
        std::uint64_t key, value;
    };
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      const int n = ctx.size();
                      std::atomic<std::uint64_t> total{0};
                      am::reducer<am::message_type<kv>, std::plus<>, am::hash_cache>* red = nullptr;
                      am::message_type<kv> sums(ctx, [&](const kv& m) { total += m.value; });
                      am::message_type<std::uint64_t> seeds(ctx, [&](const std::uint64_t& i) {
                          for (std::uint64_t j = 0; j < 20; ++j) {
                              red->send(kv{j % 7, i + j}, static_cast<int>((i + j) % n));
                          }
                      });
                      auto r = am::reduce_by_key(sums, std::plus<>{}, am::hash_cache{16});
                      red = &r;
                      std::uint64_t expected = 0;
                      for (std::uint64_t i = 0; i < 200; ++i) {
                          for (std::uint64_t j = 0; j < 20; ++j) expected += i + j;
                      }
                      {
                          am::epoch epoch(ctx);
                          for (std::uint64_t i = 0; i < 200; ++i) {
                              seeds.send(i, static_cast<int>(i % n));
                          }
                      }
                      am::epoch sum(ctx);
                      EXPECT_EQ(sum.end(total.load()), expected * static_cast<std::uint64_t>(n));
                  },
                  [](am::config& cfg) { cfg.progress_thread = true; }),
              0);
}

INSTANTIATE_TEST_SUITE_P(all, typed, ::testing::ValuesIn(am_test::all_params()),
                         am_test::param_name);
// The failure is read from stderr, which on mpi this process sees for its rank only (and a
// failed mpi job aborts): threads and shm.
INSTANTIATE_TEST_SUITE_P(multi, typed_multi,
                         ::testing::ValuesIn(am_test::without_mpi(am_test::multi_rank_params())),
                         am_test::param_name);

}  // namespace
