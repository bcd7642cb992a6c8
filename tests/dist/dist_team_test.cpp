// SPDX-License-Identifier: MIT
// am::dist on split teams: containers on two halves and on odd/even ranks at once (each member
// checks its team's container against the sequential reference of its team's members),
// dist::async and dist_object addressed by team rank, teams of one rank, and a dist::barrier of
// one team that returns while the other team's members are still busy (it must not wait for
// them: they wait for a message the first team sends after its barrier).
#include "support/spmd.hpp"

#include <am/dist.hpp>

#include <atomic>
#include <chrono>
#include <map>
#include <vector>

namespace {

using am_test::mix;
using am_test::spmd_test;

class dist_team : public spmd_test {};

constexpr int dist_team_max_ranks = 8;
std::atomic<int> dist_team_flag[dist_team_max_ranks];
std::atomic<int> dist_team_bad[dist_team_max_ranks];

TEST_P(dist_team, containers_on_two_splits_at_once) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            const am::team w = am::coll::world(ctx);
            const int half_color = me < (n + 1) / 2 ? 0 : 1;
            const am::team half = w.split(half_color, me);
            const am::team parity = w.split(me % 2, -me);  // numbered in reverse
            am::dist::map<std::uint64_t, std::uint64_t> hm(half);
            am::dist::counting_set<std::uint64_t> pc(parity);
            am::dist::map<std::uint64_t, std::uint64_t> wm(w);
            std::map<std::uint64_t, std::uint64_t> want_h, want_w;
            std::map<std::uint64_t, std::uint64_t> want_p;
            constexpr int ops = 150;
            for (int r = 0; r < n; ++r) {
                const bool same_half = (r < (n + 1) / 2 ? 0 : 1) == half_color;
                const bool same_parity = r % 2 == me % 2;
                for (int j = 0; j < ops; ++j) {
                    const std::uint64_t d = mix(static_cast<std::uint64_t>(r * 100003 + j));
                    const std::uint64_t k = d % 23, x = (d >> 20) % 1000;
                    // The same keys on all three containers: each keeps its own.
                    if (r == me) {
                        hm.async_visit(
                            k, [](std::uint64_t, std::uint64_t& v, std::uint64_t y) { v += y; }, x);
                        pc.add(k, x);
                        wm.async_visit(
                            k,
                            [](std::uint64_t, std::uint64_t& v, std::uint64_t y) { v ^= y * 31; },
                            x + 1);
                    }
                    if (same_half) want_h[k] += x;
                    if (same_parity) want_p[k] += x;
                    want_w[k] ^= (x + 1) * 31;
                }
            }
            EXPECT_EQ(hm.team().size(), half.size());
            hm.for_all(
                [&](std::uint64_t k, std::uint64_t&) { EXPECT_EQ(hm.owner(k), half.rank()); });
            pc.for_all(
                [&](std::uint64_t k, std::uint64_t) { EXPECT_EQ(pc.owner(k), parity.rank()); });
            const auto gh = hm.gather(0);
            if (half.rank() == 0) {
                EXPECT_TRUE(
                    (std::map<std::uint64_t, std::uint64_t>(gh.begin(), gh.end()) == want_h))
                    << "the half team's map differs";
            }
            const auto gp = pc.gather(parity.size() - 1);
            if (parity.rank() == parity.size() - 1) {
                EXPECT_TRUE(
                    (std::map<std::uint64_t, std::uint64_t>(gp.begin(), gp.end()) == want_p))
                    << "the parity team's counts differ";
            }
            for (std::uint64_t k = 0; k < 23; ++k) EXPECT_EQ(pc.count(k), want_p[k]);
            const auto gw = wm.gather(0);
            if (me == 0) {
                EXPECT_TRUE(
                    (std::map<std::uint64_t, std::uint64_t>(gw.begin(), gw.end()) == want_w))
                    << "the world map differs";
            }
            EXPECT_EQ(hm.size(), want_h.size());
            EXPECT_EQ(wm.size(), want_w.size());
        }),
        0);
}

TEST_P(dist_team, async_by_team_rank_and_singleton_teams) {
    ASSERT_EQ(run([](am::context& ctx) {
                  ASSERT_LE(ctx.size(), dist_team_max_ranks);
                  const int n = ctx.size(), me = ctx.rank();
                  const am::team w = am::coll::world(ctx);
                  const am::team rev = w.split(0, n - me);  // team rank = n - 1 - world rank
                  ASSERT_EQ(rev.rank(), n - 1 - me);
                  dist_team_bad[me] = 0;
                  dist_team_flag[me] = 0;
                  am::coll::barrier(w);
                  for (int tr = 0; tr < n; ++tr) {
                      am::dist::async(
                          rev, tr,
                          [](am::context& c, int world_rank) {
                              if (c.rank() != world_rank) ++dist_team_bad[c.rank()];
                              ++dist_team_flag[c.rank()];
                          },
                          rev.world_rank(tr));
                  }
                  am::dist::barrier(rev);
                  EXPECT_EQ(dist_team_bad[me].load(), 0) << "dist::async ran on the wrong rank";
                  EXPECT_EQ(dist_team_flag[me].load(), n);
                  // dist_object on the reversed team: a vector per member, addressed by team rank.
                  am::dist::dist_object<std::vector<int>> o(rev);
                  for (int tr = 0; tr < n; ++tr) {
                      o.async(
                          tr, [](std::vector<int>& v, int from) { v.push_back(from); }, me);
                  }
                  o.barrier();
                  std::vector<int> got = o.local();
                  std::sort(got.begin(), got.end());
                  std::vector<int> want(static_cast<std::size_t>(n));
                  for (int r = 0; r < n; ++r) want[static_cast<std::size_t>(r)] = r;
                  EXPECT_EQ(got, want);
                  // A team of one rank each: containers work alone.
                  const am::team alone = w.split(me, 0);
                  ASSERT_EQ(alone.size(), 1);
                  am::dist::set<std::uint64_t> s(alone);
                  am::dist::bag<int> b(alone);
                  for (std::uint64_t k = 0; k < 50; ++k) {
                      s.insert(k % 17 + static_cast<std::uint64_t>(me));
                      b.insert(static_cast<int>(k));
                  }
                  EXPECT_EQ(s.size(), 17u);
                  EXPECT_EQ(b.size(), 50u);
                  EXPECT_EQ(b.local_size(), 50u);
              }),
              0);
}

// Team A's members wait (polling) for a flag that team B's members set only after B's barrier
// has returned: if dist::barrier(B) waited for A, nothing would move.
// Two teams need two ranks: instantiated from 2 ranks up.
class dist_two_teams : public spmd_test {};

TEST_P(dist_two_teams, barrier_of_one_team_does_not_wait_for_the_other) {
    ASSERT_EQ(run([](am::context& ctx) {
                  ASSERT_LE(ctx.size(), dist_team_max_ranks);
                  const int n = ctx.size(), me = ctx.rank();
                  const am::team w = am::coll::world(ctx);
                  const int color = me < n / 2 ? 0 : 1;  // A: color 0, B: color 1
                  const am::team t = w.split(color, me);
                  dist_team_flag[me] = 0;
                  am::coll::barrier(w);
                  am::dist::map<std::uint64_t, std::uint64_t> m(t);
                  // Both teams have operations in flight on their own map.
                  for (std::uint64_t k = 0; k < 100; ++k) {
                      m.async_visit(k, [](std::uint64_t, std::uint64_t& v) { ++v; });
                  }
                  if (color == 1) {
                      for (int round = 0; round < 3; ++round) am::dist::barrier(t);
                      EXPECT_EQ(m.size(), 100u);
                      // Tell every member of A (a world-counted call).
                      for (int r = 0; r < n / 2; ++r) {
                          am::async(ctx, r, [](am::context& c) { ++dist_team_flag[c.rank()]; });
                      }
                  } else {
                      const auto until =
                          std::chrono::steady_clock::now() + std::chrono::seconds(20);
                      ctx.wait([&] {
                          return dist_team_flag[me].load() == n - n / 2 ||
                                 std::chrono::steady_clock::now() > until;
                      });
                      EXPECT_EQ(dist_team_flag[me].load(), n - n / 2)
                          << "team B's barrier waited for team A";
                      am::dist::barrier(t);
                  }
                  const auto all = m.gather(0);
                  if (t.rank() == 0) {
                      EXPECT_EQ(all.size(), 100u);
                      for (const auto& [k, v] : all) {
                          EXPECT_EQ(v, static_cast<std::uint64_t>(t.size())) << "key " << k;
                      }
                  }
                  ctx.quiesce();
              }),
              0);
}

AM_INSTANTIATE(dist_team, am_test::make_params({1, 2, 3, 5}, {2, 3}));
AM_INSTANTIATE(dist_two_teams, am_test::make_params({2, 3, 5}, {2, 3}));

}  // namespace
