// SPDX-License-Identifier: MIT
// am::async and am::dist::async: a plain function (am::async<&f>), lambdas with and without
// am::context& first, calls to self, chains of calls made by calls, arguments far larger than
// a message (1 MB) mixed with small ones, arguments copied before async returns, and completion by
// ctx.quiesce() and by am::dist::barrier. State reached by the callables lives in process-global
// tables indexed by the rank that runs them (with threads all ranks share the process; with shm and
// mpi each process writes its own rank's slots).
#include "support/spmd.hpp"

#include <am/dist.hpp>

#include <atomic>
#include <numeric>
#include <string>
#include <vector>

namespace {

using am_test::mix;
using am_test::spmd_test;

constexpr int dist_async_max_ranks = 8;
// Per running rank: a sum of what arrived, the calls run, and bad arrivals seen.
std::atomic<std::uint64_t> dist_async_sum[dist_async_max_ranks];
std::atomic<std::uint64_t> dist_async_calls[dist_async_max_ranks];
std::atomic<std::uint64_t> dist_async_bad[dist_async_max_ranks];

/// Clears this rank's slots, then waits for every rank to have done so.
void dist_async_reset(am::context& ctx) {
    const auto r = static_cast<std::size_t>(ctx.rank());
    dist_async_sum[r] = 0;
    dist_async_calls[r] = 0;
    dist_async_bad[r] = 0;
    am::coll::barrier(am::coll::world(ctx));
}

std::size_t dist_async_me(am::context& ctx) {
    return static_cast<std::size_t>(ctx.rank());
}

// A plain function, run as am::async<&dist_async_add>.
void dist_async_add(am::context& ctx, std::uint64_t x) {
    dist_async_sum[dist_async_me(ctx)] += x;
    ++dist_async_calls[dist_async_me(ctx)];
}
// A plain function without a context: the sender names the slot (its destination).
void dist_async_add_at(int slot, std::uint64_t x) {
    dist_async_sum[static_cast<std::size_t>(slot)] += x;
    ++dist_async_calls[static_cast<std::size_t>(slot)];
}

class dist_async : public spmd_test {};

TEST_P(dist_async, plain_functions_and_lambdas) {
    ASSERT_EQ(run([](am::context& ctx) {
                  ASSERT_LE(ctx.size(), dist_async_max_ranks);
                  const int n = ctx.size(), me = ctx.rank();
                  dist_async_reset(ctx);
                  constexpr int calls = 40;
                  for (int k = 0; k < calls; ++k) {
                      const int to = (me + k) % n;  // k = 0, n, ...: to self
                      const auto x = static_cast<std::uint64_t>(1000 * me + k);
                      switch (k % 4) {
                          case 0:
                              am::async<&dist_async_add>(ctx, to, x);
                              break;
                          case 1:
                              am::async<&dist_async_add_at>(ctx, to, to, x);
                              break;
                          case 2:
                              am::async(
                                  ctx, to,
                                  [](am::context& c, std::uint64_t v) {
                                      dist_async_sum[dist_async_me(c)] += v;
                                      ++dist_async_calls[dist_async_me(c)];
                                  },
                                  x);
                              break;
                          default:
                              am::async(
                                  ctx, to,
                                  [](int slot, const std::string& text, std::uint64_t v) {
                                      dist_async_sum[static_cast<std::size_t>(slot)] +=
                                          v + text.size();
                                      ++dist_async_calls[static_cast<std::size_t>(slot)];
                                  },
                                  to, std::string(static_cast<std::size_t>(k), 'q'), x);
                              break;
                      }
                  }
                  ctx.quiesce();
                  std::uint64_t want = 0, want_calls = 0;
                  for (int r = 0; r < n; ++r) {
                      for (int k = 0; k < calls; ++k) {
                          if ((r + k) % n != me) continue;
                          want += static_cast<std::uint64_t>(1000 * r + k) +
                                  (k % 4 == 3 ? static_cast<std::uint64_t>(k) : 0);
                          ++want_calls;
                      }
                  }
                  EXPECT_EQ(dist_async_calls[dist_async_me(ctx)].load(), want_calls);
                  EXPECT_EQ(dist_async_sum[dist_async_me(ctx)].load(), want);
              }),
              0);
}

// A call that makes the next one: `left` more hops, each to the next rank.
struct dist_async_hop {
    void operator()(am::context& ctx, std::uint64_t left, std::uint64_t token) const {
        dist_async_sum[dist_async_me(ctx)] += token;
        ++dist_async_calls[dist_async_me(ctx)];
        if (left > 0)
            am::async(ctx, (ctx.rank() + 1) % ctx.size(), dist_async_hop{}, left - 1, token);
    }
};
// A call that fans out to two calls until depth 0: 2^(depth+1) - 1 calls in all.
struct dist_async_tree {
    void operator()(am::context& ctx, int depth) const {
        ++dist_async_calls[dist_async_me(ctx)];
        if (depth == 0) return;
        const int n = ctx.size();
        am::async(ctx, (ctx.rank() + 1) % n, dist_async_tree{}, depth - 1);
        am::async(ctx, ctx.rank(), dist_async_tree{}, depth - 1);  // to self, from a call
    }
};

TEST_P(dist_async, chains_complete_by_quiesce_and_barrier) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            ASSERT_LE(ctx.size(), dist_async_max_ranks);
            const int n = ctx.size(), me = ctx.rank();
            const am::team w = am::coll::world(ctx);
            const std::uint64_t depth = 300;
            // quiesce: each rank starts a chain of depth+1 calls.
            dist_async_reset(ctx);
            am::async(ctx, (me + 1) % n, dist_async_hop{}, depth, std::uint64_t{1});
            ctx.quiesce();
            EXPECT_EQ(am::coll::allreduce(w, dist_async_calls[dist_async_me(ctx)].load(),
                                          am::coll::sum{}),
                      static_cast<std::uint64_t>(n) * (depth + 1));
            // Every chain passes every rank about equally: (depth + 1) calls per chain,
            // chain of rank r runs hop h on rank (r + 1 + h) % n.
            std::uint64_t mine = 0;
            for (int r = 0; r < n; ++r) {
                for (std::uint64_t h = 0; h <= depth; ++h) {
                    if ((static_cast<std::uint64_t>(r) + 1 + h) % static_cast<std::uint64_t>(n) ==
                        static_cast<std::uint64_t>(me))
                        ++mine;
                }
            }
            EXPECT_EQ(dist_async_calls[dist_async_me(ctx)].load(), mine);
            // dist::barrier(world) completes am::async calls (counted on the world).
            dist_async_reset(ctx);
            am::async(ctx, me, dist_async_tree{}, 7);
            am::dist::barrier(w);
            EXPECT_EQ(am::coll::allreduce(w, dist_async_calls[dist_async_me(ctx)].load(),
                                          am::coll::sum{}),
                      static_cast<std::uint64_t>(n) * 255);
            // Back to back: a second wave right after the first completes too.
            dist_async_reset(ctx);
            am::async(ctx, (me + 1) % n, dist_async_hop{}, std::uint64_t{20}, std::uint64_t{3});
            am::dist::barrier(w);
            am::async(ctx, (me + 1) % n, dist_async_hop{}, std::uint64_t{20}, std::uint64_t{5});
            ctx.quiesce();
            EXPECT_EQ(
                am::coll::allreduce(w, dist_async_sum[dist_async_me(ctx)].load(), am::coll::sum{}),
                static_cast<std::uint64_t>(n) * 21 * 8);
        }),
        0);
}

// Big: a checksum of a vector, compared with what the sender says it is.
struct dist_async_check_big {
    void operator()(am::context& ctx, std::vector<std::uint64_t> v, std::uint64_t want_sum,
                    std::uint64_t want_size) const {
        const std::uint64_t s = std::accumulate(v.begin(), v.end(), std::uint64_t{0});
        if (s != want_sum || v.size() != want_size) ++dist_async_bad[dist_async_me(ctx)];
        ++dist_async_calls[dist_async_me(ctx)];
    }
};
struct dist_async_small {
    void operator()(am::context& ctx, std::uint64_t x) const {
        dist_async_sum[dist_async_me(ctx)] += x;
        ++dist_async_calls[dist_async_me(ctx)];
    }
};

TEST_P(dist_async, large_arguments_mixed_with_small) {
    ASSERT_EQ(run([](am::context& ctx) {
                  ASSERT_LE(ctx.size(), dist_async_max_ranks);
                  const int n = ctx.size(), me = ctx.rank();
                  dist_async_reset(ctx);
                  constexpr std::size_t mb = (std::size_t{1} << 20) / sizeof(std::uint64_t);
                  ASSERT_LT(ctx.max_medium(), mb * sizeof(std::uint64_t));
                  std::vector<std::uint64_t> big(mb);
                  const int rounds = n <= 3 ? 3 : 1;
                  std::uint64_t small_sent = 0;
                  for (int k = 0; k < rounds; ++k) {
                      for (int d = 0; d < n; ++d) {
                          // Sizes about a message, far over, and tiny.
                          for (const std::size_t len :
                               {mb, ctx.max_medium() / 8 + 1, std::size_t{0}, std::size_t{3}}) {
                              std::vector<std::uint64_t> v(len);
                              for (std::size_t i = 0; i < len; ++i)
                                  v[i] = mix(i + static_cast<std::size_t>(me * 7 + k));
                              const std::uint64_t s =
                                  std::accumulate(v.begin(), v.end(), std::uint64_t{0});
                              am::async(ctx, d, dist_async_check_big{}, v, s,
                                        std::uint64_t{v.size()});
                              // Copied before async returned: changing it now changes nothing.
                              std::fill(v.begin(), v.end(), 0);
                              am::async(ctx, d, dist_async_small{}, std::uint64_t{1});
                              ++small_sent;
                          }
                      }
                  }
                  ctx.quiesce();
                  const std::uint64_t per_rank = static_cast<std::uint64_t>(rounds) * 4;
                  EXPECT_EQ(dist_async_bad[dist_async_me(ctx)].load(), 0u)
                      << "a large argument arrived changed";
                  EXPECT_EQ(dist_async_calls[dist_async_me(ctx)].load(),
                            2 * per_rank * static_cast<std::uint64_t>(n));
                  EXPECT_EQ(dist_async_sum[dist_async_me(ctx)].load(),
                            per_rank * static_cast<std::uint64_t>(n));
                  (void)small_sent;
                  (void)big;
              }),
              0);
}

AM_INSTANTIATE(dist_async, am_test::make_params({1, 2, 3, 5}, {2, 3}));

}  // namespace
