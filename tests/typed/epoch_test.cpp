// SPDX-License-Identifier: MIT
// Epochs: the global sum `end(value)` returns, empty epochs (one, and a thousand in a row),
// the destructor ending an epoch, per-epoch statistics (exact counts in simple deterministic
// patterns, numbering, AM_STATS output), batches that reach a rank before it began their
// epoch (they wait, and their handlers run exactly once, only after the rank began it), and a
// schedule in which one reduction round balances with messages still in flight (neither
// detector may end there).
#include "typed/typed_support.hpp"

#include <cinttypes>

namespace {

using am_test::spmd_param;
using am_test::spmd_test;

class typed_epoch : public spmd_test {};
class typed_stats : public spmd_test {};
class typed_deferred : public spmd_test {};
class typed_detector : public spmd_test {};

using epoch_item = typed_test::item;

// end(value) sums over all ranks, with both detectors, also when the sum wraps around 2^64 and
// when the epoch carried traffic.
TEST_P(typed_epoch, end_value_is_global_sum) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const std::uint64_t n = static_cast<std::uint64_t>(ctx.size());
            const std::uint64_t me = static_cast<std::uint64_t>(ctx.rank());
            std::uint64_t got = 0;
            am::message_type<epoch_item> type(ctx, [&](const epoch_item&) { ++got; });
            for (int depth : {-1, 0, 1, 6}) {
                {
                    am::epoch e(ctx, {.depth = depth});
                    EXPECT_EQ(e.end((me + 1) * 1000003), n * (n + 1) / 2 * 1000003)
                        << "depth " << depth;
                }
                {
                    am::epoch e(ctx, {.depth = depth});
                    // Every rank adds 2^63 + rank: the sum is taken modulo 2^64.
                    const std::uint64_t big = (std::uint64_t{1} << 63) + me;
                    EXPECT_EQ(e.end(big), (n % 2) * (std::uint64_t{1} << 63) + n * (n - 1) / 2)
                        << "depth " << depth;
                }
                {
                    am::epoch e(ctx, {.depth = depth});
                    for (std::uint32_t i = 0; i < 10; ++i) {
                        type.send(epoch_item{i, ctx.rank(), i}, static_cast<int>((me + i) % n));
                    }
                    EXPECT_EQ(e.end(me == 0 ? 7 : 0), 7u) << "depth " << depth;
                }
                {
                    am::epoch e(ctx, {.depth = depth});
                    EXPECT_EQ(e.end(), 0u) << "depth " << depth;
                }
            }
            am::epoch sum(ctx);
            EXPECT_EQ(sum.end(got), 4 * 10 * n);
        }),
        0);
}

// An empty epoch ends (every rank calls end without sending anything): zero counts, one
// detector round when depth-limited, at least two with the general detector.
TEST_P(typed_epoch, empty_epoch) {
    ASSERT_EQ(run([](am::context& ctx) {
                  {
                      am::epoch e(ctx);
                      EXPECT_EQ(e.end(), 0u);
                      const am::epoch_stats& s = e.stats();
                      EXPECT_EQ(s.epoch, 1u);
                      EXPECT_EQ(s.messages_sent, 0u);
                      EXPECT_EQ(s.messages_handled, 0u);
                      EXPECT_EQ(s.batches_sent, 0u);
                      EXPECT_EQ(s.bytes_sent, 0u);
                      EXPECT_EQ(s.coalescing_ratio(), 0.0);
                      EXPECT_GE(s.waves, 2u);
                  }
                  am::epoch e(ctx, {.depth = 0});
                  EXPECT_EQ(e.end(1), static_cast<std::uint64_t>(ctx.size()));
                  EXPECT_EQ(e.stats().epoch, 2u);
                  EXPECT_EQ(e.stats().waves, 1u);
              }),
              0);
}

// A thousand empty epochs in a row, alternating the detectors: each ends with the right sum and
// number (a rank that runs ahead into the next epoch must not confuse the reductions).
TEST_P(typed_epoch, thousand_empty_epochs) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const std::uint64_t n = static_cast<std::uint64_t>(ctx.size());
                  const std::uint64_t me = static_cast<std::uint64_t>(ctx.rank());
                  for (std::uint64_t i = 1; i <= 1000; ++i) {
                      am::epoch e(ctx, {.depth = i % 2 == 0 ? 0 : -1});
                      const std::uint64_t sum = e.end(me + i);
                      if (sum != n * (n - 1) / 2 + n * i || e.stats().epoch != i) {
                          ADD_FAILURE()
                              << "epoch " << i << ": sum " << sum << ", number " << e.stats().epoch;
                          break;
                      }
                  }
              }),
              0);
}

// The destructor ends an epoch whose end() was not called: everything sent in it has been
// handled when the scope is left.
TEST_P(typed_epoch, destructor_ends_epoch) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  std::uint64_t got = 0;
                  am::message_type<epoch_item> type(ctx, [&](int source, const epoch_item& v) {
                      EXPECT_EQ(v.from, source);
                      ++got;
                  });
                  auto buf = am::coalesce(type, {.bytes = 4 * sizeof(epoch_item)});
                  for (int round = 1; round <= 3; ++round) {
                      got = 0;
                      {
                          am::epoch e(ctx);
                          for (int d = 0; d < n; ++d) {
                              for (std::uint32_t i = 0; i < 5; ++i)
                                  buf.send(epoch_item{i, me, i}, d);
                          }
                      }  // ends here
                      EXPECT_EQ(got, 5u * static_cast<std::uint64_t>(n)) << "round " << round;
                  }
              }),
              0);
}

// Exact statistics of a deterministic pattern: each rank sends to its right neighbour `singles`
// messages one by one, `full` full coalescing buffers, and one span; the epoch numbers count
// up; dedup and combining counts are per epoch, not cumulative.
TEST_P(typed_stats, exact_counts_per_epoch) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const auto [n, me, right] = typed_test::ring_of(ctx);
            std::uint64_t got = 0;
            am::message_type<epoch_item> type(ctx, [&](const epoch_item&) { ++got; });
            constexpr std::size_t cap = 5;
            auto buf = am::coalesce(type, {.bytes = cap * sizeof(epoch_item)});
            auto once = am::dedup(type, am::hash_cache{});
            struct pair_kv {  // a key/value message with members first and second
                std::uint64_t first, second;
            };
            am::message_type<pair_kv> sums(ctx, [&](const pair_kv&) { ++got; });
            auto combine = am::reduce_by_key(
                sums, [](std::uint64_t a, std::uint64_t b) { return a + b; }, am::hash_cache{});
            for (std::uint64_t round = 1; round <= 3; ++round) {
                const std::uint64_t singles = round, full = round + 1, span = 2 * round;
                got = 0;
                am::epoch e(ctx);
                for (std::uint64_t i = 0; i < singles; ++i) {
                    type.send(epoch_item{i, me, 0}, right);
                }
                for (std::uint64_t i = 0; i < full * cap; ++i)
                    buf.send(epoch_item{i, me, 1}, right);
                std::vector<epoch_item> v(span, epoch_item{7, me, 2});
                type.send(std::span<const epoch_item>(v), right);
                // round duplicates dropped (a new value each epoch: the cache is kept
                // across epochs); round + 1 values folded into one
                for (std::uint64_t i = 0; i <= round; ++i) {
                    once.send(epoch_item{99, me, static_cast<std::uint32_t>(100 + round)}, right);
                }
                for (std::uint64_t i = 0; i <= round + 1; ++i) {
                    combine.send(pair_kv{5, i}, right);
                }
                e.end();
                const std::uint64_t messages = singles + full * cap + span + 1 + 1;
                const std::uint64_t batches = singles + full + 1 + 1 + 1;
                const am::epoch_stats& s = e.stats();
                EXPECT_EQ(s.epoch, round);
                EXPECT_EQ(s.messages_sent, messages);
                EXPECT_EQ(s.messages_handled, messages);
                EXPECT_EQ(got, messages);
                EXPECT_EQ(s.batches_sent, batches);
                EXPECT_EQ(s.bytes_sent, (messages - 1) * sizeof(epoch_item) + sizeof(pair_kv));
                EXPECT_EQ(s.dedup_hits, round);
                EXPECT_EQ(s.combined, round + 1);
                EXPECT_DOUBLE_EQ(s.coalescing_ratio(),
                                 static_cast<double>(messages) / static_cast<double>(batches));
                EXPECT_GE(s.waves, 2u);
                EXPECT_GE(s.seconds, 0.0);
                const std::string line = s.to_string();
                char head[128];
                std::snprintf(head, sizeof head,
                              "epoch %" PRIu64 ": sent %" PRIu64 " in %" PRIu64 " batches", round,
                              messages, batches);
                EXPECT_TRUE(am_test::contains(line, head)) << line;
                EXPECT_TRUE(am_test::contains(line, "dedup hits " + std::to_string(round))) << line;
                EXPECT_TRUE(am_test::contains(line, "combined " + std::to_string(round + 1)))
                    << line;
            }
            EXPECT_EQ(once.hits(), 1u + 2u + 3u);
            EXPECT_EQ(combine.combined(), 2u + 3u + 4u);
        }),
        0);
}

// AM_STATS (config::print_stats) prints each rank's typed summary and a line per epoch.
TEST_P(typed_stats, print_stats_lines) {
    int rc = -1;
    const std::string out = typed_test::capture_stderr([&] {
        rc = run(
            [](am::context& ctx) {
                am::message_type<epoch_item> type(ctx, [](const epoch_item&) {});
                for (int round = 1; round <= 2; ++round) {
                    am::epoch e(ctx);
                    for (int i = 0; i < 5 * round; ++i) {
                        type.send(epoch_item{1, ctx.rank(), 0}, (ctx.rank() + 1) % ctx.size());
                    }
                }
            },
            [](am::config& cfg) { cfg.print_stats = true; });
    });
    ASSERT_EQ(rc, 0) << out;
    for (int r : visible_ranks()) {
        const std::string rank = "am: rank " + std::to_string(r);
        EXPECT_TRUE(am_test::contains(out, rank + " typed: 2 epochs; sent 15 messages in 15 "
                                                  "batches (coalescing ratio 1.0), handled 15"))
            << out;
        EXPECT_TRUE(am_test::contains(out, rank + "   epoch 1: sent 5 in 5 batches")) << out;
        EXPECT_TRUE(am_test::contains(out, rank + "   epoch 2: sent 10 in 10 batches")) << out;
    }
}

// Without print_stats nothing of the typed layer is printed.
TEST_P(typed_stats, no_stats_without_print_stats) {
    int rc = -1;
    const std::string out = typed_test::capture_stderr([&] {
        rc = run([](am::context& ctx) {
            am::message_type<epoch_item> type(ctx, [](const epoch_item&) {});
            am::epoch e(ctx);
            type.send(epoch_item{1, ctx.rank(), 0}, 0);
        });
    });
    ASSERT_EQ(rc, 0) << out;
    EXPECT_FALSE(am_test::contains(out, "typed:")) << out;
    EXPECT_FALSE(am_test::contains(out, "epoch 1:")) << out;
}

// Rank 1 (the last rank) holds back: it polls until the core has delivered every message of
// the first epoch to it, with nothing created yet that its handler uses; the handler must not
// have run. Only then it creates the state and begins the epoch, and every message is
// handled exactly once, after that. Three epochs in a row, so also messages of epoch k + 1 that
// arrive while the rank still ends epoch k are covered.
TEST_P(typed_deferred, handlers_wait_for_their_epoch) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  const int late = n - 1;
                  constexpr std::uint32_t per_rank = 40;
                  struct seen_state {
                      std::vector<std::uint32_t> count;  // by from * per_rank + index
                      std::uint64_t epoch = 0;
                  };
                  std::unique_ptr<seen_state> state;  // created right before each epoch
                  std::uint64_t handled = 0, early = 0, wrong_epoch = 0, bad = 0;
                  am::message_type<epoch_item> type(ctx, [&](int source, const epoch_item& v) {
                      ++handled;
                      if (!state) {
                          ++early;
                          return;
                      }
                      if (v.value != state->epoch) ++wrong_epoch;
                      if (v.from != source || v.index >= per_rank) {
                          ++bad;
                          return;
                      }
                      ++state->count[static_cast<std::size_t>(v.from) * per_rank + v.index];
                  });
                  auto buf = am::coalesce(type, {.bytes = 3 * sizeof(epoch_item)});
                  // Core messages each other rank sends to the late one per epoch: half the
                  // items one by one, the other half in batches of 3.
                  constexpr std::uint64_t batches = per_rank / 2 + (per_rank / 2 + 2) / 3;
                  for (std::uint64_t epoch = 1; epoch <= 3; ++epoch) {
                      handled = 0;
                      if (me == late) {
                          // Everything the other ranks send in this epoch reaches this rank's
                          // core before it begins the epoch.
                          const std::uint64_t expect =
                              epoch * static_cast<std::uint64_t>(n - 1) * batches;
                          ctx.wait([&] { return typed_test::core_received(ctx, 0) >= expect; });
                          EXPECT_EQ(handled, 0u) << "epoch " << epoch << ": ran before begin";
                      }
                      state = std::make_unique<seen_state>();
                      state->count.assign(static_cast<std::size_t>(n) * per_rank, 0);
                      state->epoch = epoch;
                      am::epoch e(ctx);
                      if (me != late) {
                          for (std::uint32_t i = 0; i < per_rank; ++i) {
                              // Half coalesced, half one by one: both kinds of batch wait.
                              if (i % 2 == 0) {
                                  type.send(epoch_item{epoch, me, i}, late);
                              } else {
                                  buf.send(epoch_item{epoch, me, i}, late);
                              }
                          }
                      }
                      e.end();
                      if (me == late) {
                          for (int r = 0; r < n; ++r) {
                              for (std::uint32_t i = 0; i < per_rank; ++i) {
                                  const std::uint32_t c =
                                      state->count[static_cast<std::size_t>(r) * per_rank + i];
                                  EXPECT_EQ(c, r == late ? 0u : 1u)
                                      << "epoch " << epoch << ", from " << r << ", index " << i;
                              }
                          }
                          EXPECT_EQ(handled, static_cast<std::uint64_t>(n - 1) * per_rank);
                          EXPECT_EQ(e.stats().messages_handled,
                                    static_cast<std::uint64_t>(n - 1) * per_rank);
                      } else {
                          EXPECT_EQ(handled, 0u);
                      }
                      EXPECT_EQ(early, 0u);
                      EXPECT_EQ(wrong_epoch, 0u);
                      EXPECT_EQ(bad, 0u);
                      state.reset();  // handlers of the next epoch must not find it
                  }
              }),
              0);
}

// The late rank sleeps (without polling) before it begins each epoch, after creating nothing:
// messages wait in the rings or in the layer, and run once the rank began the epoch.
TEST_P(typed_deferred, sleeping_rank) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  std::atomic<std::uint32_t> began{0};
                  std::uint64_t handled = 0, early = 0;
                  am::message_type<epoch_item> type(ctx, [&](int, const epoch_item& v) {
                      if (v.value != began.load()) ++early;
                      ++handled;
                  });
                  for (std::uint32_t epoch = 1; epoch <= 3; ++epoch) {
                      handled = 0;
                      if (me == 1) std::this_thread::sleep_for(std::chrono::milliseconds(50));
                      began = epoch;
                      am::epoch e(ctx);
                      for (int d = 0; d < n; ++d) {
                          for (std::uint32_t i = 0; i < 10; ++i)
                              type.send(epoch_item{epoch, me, i}, d);
                      }
                      e.end();
                      EXPECT_EQ(handled, 10u * static_cast<std::uint64_t>(n));
                  }
                  EXPECT_EQ(early, 0u);
              }),
              0);
}

// A schedule in which one reduction round's totals balance although messages are still in
// flight: rank 0 ends at once (it contributes before anything reaches it); rank 1 then sends m
// to rank 0, whose handler sends y1, y2 (level 1) to rank 2 while it waits for the reduction;
// rank 2 handles both before it ends, and its handler of y1 starts a chain of five messages
// (levels 2 to 6) bouncing between ranks 0 and 1. The first round sees sent {m, chain head} and
// handled {y1, y2}. The general detector must not trust a single round (it needs a second
// with the same sums), the depth-limited one must count per level (a handler's send is one
// level deeper than the message it handles). Either way the epoch must not end before the
// chain has been handled: every rank's count is exact right after end(), and no handler runs
// after it. `how` picks the handlers' sender: the message type, a coalescing layer, or the
// message type with thread_multiple; `depth` the detector.
void level_schedule(am::context& ctx, int how, int depth) {
    const int me = ctx.rank();
    struct msg {
        std::uint32_t kind;  // 0: m, 1: y, 2: chain
        std::uint32_t ttl;
    };
    std::atomic<std::uint64_t> handled{0}, y_seen{0}, after_end{0};
    std::atomic<bool> ended{false};
    am::message_type<msg>* type_ptr = nullptr;
    am::coalesced<msg>* buf_ptr = nullptr;
    const auto send = [&](const msg& m, int dest) {
        if (how == 1) {
            buf_ptr->send(m, dest);
        } else {
            type_ptr->send(m, dest);
        }
    };
    am::message_type<msg> type(ctx, [&](const msg& m) {
        if (ended.load()) after_end.fetch_add(1);
        handled.fetch_add(1);
        if (m.kind == 0) {
            send(msg{1, 0}, 2), send(msg{1, 1}, 2);
        } else if (m.kind == 1) {
            y_seen.fetch_add(1);
            if (m.ttl == 0) send(msg{2, 4}, 0);
        } else if (m.ttl > 0) {
            send(msg{2, m.ttl - 1}, me == 0 ? 1 : 0);
        }
    });
    auto buf = am::coalesce(type, {.bytes = 2 * sizeof(msg)});
    type_ptr = &type, buf_ptr = &buf;
    am::epoch e(ctx, {.depth = depth});
    if (me == 1) {
        std::this_thread::sleep_for(std::chrono::milliseconds(100));  // rank 0 ends first
        type.send(msg{0, 0}, 0);
    } else if (me == 2) {
        ctx.wait([&] { return y_seen.load() == 2; });
    }
    e.end();
    ended = true;
    // Rank 0 handles m and the chain's messages with ttl 4, 2, 0; rank 1 those with 3, 1.
    const std::uint64_t want[] = {4, 2, 2};
    EXPECT_EQ(handled.load(), me < 3 ? want[me] : 0u) << "rank " << me;
    am::epoch sum(ctx);
    EXPECT_EQ(sum.end(handled.load()), 8u);
    EXPECT_EQ(after_end.load(), 0u);
}

TEST_P(typed_detector, general_message_type) {
    ASSERT_EQ(run([](am::context& ctx) { level_schedule(ctx, 0, -1); }), 0);
}
TEST_P(typed_detector, general_coalesced) {
    ASSERT_EQ(run([](am::context& ctx) { level_schedule(ctx, 1, -1); }), 0);
}
TEST_P(typed_detector, depth_limited_message_type) {
    ASSERT_EQ(run([](am::context& ctx) { level_schedule(ctx, 0, 6); }), 0);
}
TEST_P(typed_detector, depth_limited_coalesced) {
    ASSERT_EQ(run([](am::context& ctx) { level_schedule(ctx, 1, 6); }), 0);
}
TEST_P(typed_detector, depth_limited_thread_multiple) {
    ASSERT_EQ(run([](am::context& ctx) { level_schedule(ctx, 2, 6); },
                  [](am::config& cfg) { cfg.thread_multiple = true; }),
              0);
}

AM_INSTANTIATE(typed_epoch, am_test::all_params());
AM_INSTANTIATE(typed_stats, typed_test::light_params());
AM_INSTANTIATE(typed_deferred, am_test::multi_rank_params());
// The schedule needs three ranks (a fourth only ends the epoch).
std::vector<spmd_param> detector_params() {
    return am_test::exact_params({3, 4}, {3}, {4});
}
AM_INSTANTIATE(typed_detector, detector_params());

}  // namespace
