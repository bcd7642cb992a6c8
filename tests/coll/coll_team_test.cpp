// SPDX-License-Identifier: MIT
// Teams of am::coll: split by color and key (reversed keys, ties, one color for all, a team of
// one per rank, team::undefined for some ranks), nested splits, rank translation both ways,
// collectives on two teams interleaved (outstanding _nb on one while blocking on the other),
// disjoint teams running different collectives at the same time; and the nonblocking forms:
// many outstanding calls of every kind completed in reverse order, and futures' then.
#include "coll/coll_support.hpp"
#include "support/expect.hpp"

#include <algorithm>
#include <optional>
#include <span>

namespace {

using am_test::expect_error;
using am_test::spmd_test;
using coll_test::draw;

class coll_team : public spmd_test {};
class coll_nb : public spmd_test {};
/// Tests that show bugs (they fail): not on mpi, where one failing test fails the whole job's
/// run of every test.
class coll_optimistic : public spmd_test {};

/// The world ranks of `t`'s members, in team order, as `t` says.
std::vector<int> members_of(const am::team& t) {
    std::vector<int> v;
    for (int i = 0; i < t.size(); ++i) v.push_back(t.world_rank(i));
    return v;
}

/// Checks `t` (this rank a member) against `want`, the world ranks in team order: size, rank,
/// translation both ways (-1 for others and out of range, bad_rank past the end), and that a
/// collective sees the same order.
void check_team(const am::team& t, const std::vector<int>& want, int n, int me) {
    ASSERT_TRUE(t.valid());
    ASSERT_EQ(t.size(), static_cast<int>(want.size()));
    EXPECT_EQ(members_of(t), want);
    const auto at = std::find(want.begin(), want.end(), me);
    ASSERT_NE(at, want.end());
    EXPECT_EQ(t.rank(), static_cast<int>(at - want.begin()));
    for (int w = -1; w <= n; ++w) {
        const auto it = std::find(want.begin(), want.end(), w);
        EXPECT_EQ(t.team_rank(w), it == want.end() ? -1 : static_cast<int>(it - want.begin()))
            << "world rank " << w;
    }
    for (const int bad : {-1, t.size()}) {
        expect_error([&] { (void)t.world_rank(bad); }, am::errc::bad_rank,
                     {"am::coll::team::world_rank", "rank " + std::to_string(me),
                      "team rank " + std::to_string(bad), t.name()});
    }
    EXPECT_EQ(am::coll::allgather(t, me), want);
    const auto cat =
        am::coll::allreduce(t, std::to_string(me) + ",",
                            [](const std::string& a, const std::string& b) { return a + b; });
    std::string order;
    for (const int w : want) order += std::to_string(w) + ",";
    EXPECT_EQ(cat, order);
}

// Colors me % 3, keys -me: each team holds its color's ranks in decreasing order.
TEST_P(coll_team, split_reversed_keys) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const int n = w.size(), me = w.rank();
                  EXPECT_TRUE(w == am::coll::world(ctx));
                  EXPECT_EQ(w.name(), "world");
                  check_team(
                      w,
                      [n] {
                          std::vector<int> all(static_cast<std::size_t>(n));
                          for (int r = 0; r < n; ++r) all[static_cast<std::size_t>(r)] = r;
                          return all;
                      }(),
                      n, me);
                  const am::team t = w.split(me % 3, -me);
                  std::vector<int> want;
                  for (int r = n - 1; r >= 0; --r) {
                      if (r % 3 == me % 3) want.push_back(r);
                  }
                  EXPECT_EQ(t.name(), "split #1 of world (color " + std::to_string(me % 3) + ")");
                  check_team(t, want, n, me);
                  EXPECT_FALSE(t == w);
                  // A second split of world is split #2, whatever the first gave.
                  const am::team again = w.split(0, 0);
                  EXPECT_EQ(again.name(), "split #2 of world (color 0)");
                  std::vector<int> all(static_cast<std::size_t>(n));
                  for (int r = 0; r < n; ++r) all[static_cast<std::size_t>(r)] = r;
                  check_team(again, all, n, me);
              }),
              0);
}

// One color for all with keys that tie: ordered by (key, rank in the parent).
TEST_P(coll_team, split_one_color_ties) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const int n = w.size(), me = w.rank();
                  const auto key = [](int r) { return static_cast<int>(draw(91, 0, r) % 3); };
                  const am::team t = w.split(7, key(me));
                  std::vector<std::pair<int, int>> order;
                  for (int r = 0; r < n; ++r) order.emplace_back(key(r), r);
                  std::sort(order.begin(), order.end());
                  std::vector<int> want;
                  for (const auto& [k, r] : order) want.push_back(r);
                  check_team(t, want, n, me);
              }),
              0);
}

// Every rank its own color: teams of one, on which every collective works.
TEST_P(coll_team, teams_of_one) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const int n = w.size(), me = w.rank();
                  const am::team t = w.split(me, 0);
                  check_team(t, {me}, n, me);
                  am::coll::barrier(t);
                  EXPECT_EQ(am::coll::broadcast(t, me, 0), me);
                  EXPECT_EQ(am::coll::reduce(t, me, am::coll::sum{}, 0), std::optional<int>(me));
                  EXPECT_EQ(am::coll::allreduce(t, me, am::coll::max{}), me);
                  EXPECT_EQ(am::coll::inclusive_scan(t, me, am::coll::sum{}), me);
                  EXPECT_EQ(am::coll::exclusive_scan(t, me, am::coll::sum{}), std::nullopt);
                  EXPECT_EQ(am::coll::exclusive_scan(t, me, am::coll::sum{}, -5), -5);
                  EXPECT_EQ(am::coll::gather(t, me, 0), std::vector<int>{me});
                  const std::vector<int> three{me, me, me};
                  EXPECT_EQ(am::coll::allgatherv(t, std::span<const int>(three)),
                            std::vector<std::vector<int>>{three});
                  EXPECT_EQ(am::coll::gatherv(t, std::span<const int>(three), 0),
                            std::vector<std::vector<int>>{three});
                  EXPECT_EQ(am::coll::alltoall(t, std::span<const int>(three)), three);
                  EXPECT_EQ(am::coll::alltoallv(t, std::vector<std::vector<int>>{three}),
                            std::vector<std::vector<int>>{three});
                  const am::team inner = t.split(0, 0);
                  check_team(inner, {me}, n, me);
                  // The world still works after n different teams ran the same sequence.
                  EXPECT_EQ(am::coll::allreduce(w, 1, am::coll::sum{}), n);
              }),
              0);
}

// team::undefined for every third rank: those get an invalid team; the others one team.
TEST_P(coll_team, split_undefined) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const int n = w.size(), me = w.rank();
                  const bool out = me % 3 == 1;
                  const am::team t = w.split(out ? am::team::undefined : 0, me);
                  EXPECT_EQ(t.valid(), !out);
                  if (out) {
                      EXPECT_EQ(t.name(), "(no team)");
                      EXPECT_FALSE(t == w);
                  } else {
                      std::vector<int> want;
                      for (int r = 0; r < n; ++r) {
                          if (r % 3 != 1) want.push_back(r);
                      }
                      check_team(t, want, n, me);
                  }
                  // All ranks undefined: nobody has a team, and the next split still works.
                  EXPECT_FALSE(w.split(am::team::undefined, 0).valid());
                  EXPECT_EQ(w.split(0, 0).size(), n);
              }),
              0);
}

// A split of a split: halves by parity, then each half by its own ranks' parity, keys reversed.
TEST_P(coll_team, nested_split) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const int n = w.size(), me = w.rank();
                  const am::team half = w.split(me % 2, me);
                  std::vector<int> hw;
                  for (int r = me % 2; r < n; r += 2) hw.push_back(r);
                  check_team(half, hw, n, me);
                  const int hr = half.rank();
                  const am::team quarter = half.split(hr % 2, -hr);
                  std::vector<int> qw;
                  for (int i = static_cast<int>(hw.size()) - 1; i >= 0; --i) {
                      if (i % 2 == hr % 2) qw.push_back(hw[static_cast<std::size_t>(i)]);
                  }
                  EXPECT_EQ(quarter.name(), "split #1 of split #1 of world (color " +
                                                std::to_string(me % 2) + ") (color " +
                                                std::to_string(hr % 2) + ")");
                  check_team(quarter, qw, n, me);
                  // Collectives on all three, in turns.
                  for (int round = 0; round < 3; ++round) {
                      EXPECT_EQ(am::coll::allreduce(quarter, 1, am::coll::sum{}),
                                static_cast<int>(qw.size()));
                      EXPECT_EQ(am::coll::broadcast(half, me, 0), hw[0]);
                      EXPECT_EQ(am::coll::allreduce(w, 1, am::coll::sum{}), n);
                  }
              }),
              0);
}

// Teams interleaved: an outstanding _nb on one team while blocking calls run on another, and
// disjoint teams running different collectives at the same time.
TEST_P(coll_team, interleaved_teams) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            const int n = w.size(), me = w.rank();
            const am::team a = w.split(0, -me);  // everyone, reversed
            const am::team b = w.split(me % 2, me);
            const int bn = (n + 1 - me % 2) / 2;
            for (int round = 0; round < 3; ++round) {
                auto fa = am::coll::allreduce_nb(a, me, am::coll::sum{});
                auto fw = am::coll::allgather_nb(w, me + round);
                EXPECT_EQ(am::coll::allreduce(b, 1, am::coll::sum{}), bn);
                EXPECT_EQ(am::coll::broadcast(b, me, b.size() - 1), b.world_rank(bn - 1));
                am::coll::barrier(b);
                auto fb = am::coll::exclusive_scan_nb(b, 1, am::coll::sum{});
                EXPECT_EQ(am::coll::inclusive_scan(a, 1, am::coll::sum{}), a.rank() + 1);
                EXPECT_EQ(fa.get(), n * (n - 1) / 2);
                EXPECT_EQ(fb.get(), b.rank() == 0 ? std::nullopt : std::optional<int>(b.rank()));
                const auto all = fw.get();
                ASSERT_EQ(all.size(), static_cast<std::size_t>(n));
                for (int r = 0; r < n; ++r) EXPECT_EQ(all[r], r + round);
            }
            // Different collectives on disjoint teams at once: even ranks broadcast and
            // allgather, odd ranks exchange and reduce.
            for (int round = 0; round < 3; ++round) {
                if (me % 2 == 0) {
                    EXPECT_EQ(am::coll::broadcast(b, std::string(5, 'e'), 0), "eeeee");
                    EXPECT_EQ(am::coll::allgather(b, me).size(), static_cast<std::size_t>(bn));
                } else {
                    std::vector<std::vector<int>> out(static_cast<std::size_t>(bn),
                                                      std::vector<int>{me});
                    const auto in = am::coll::alltoallv(b, out);
                    for (int i = 0; i < bn; ++i) {
                        EXPECT_EQ(in[i], std::vector<int>{b.world_rank(i)});
                    }
                    const auto red = am::coll::reduce(b, me, am::coll::min{}, bn - 1);
                    EXPECT_EQ(red.has_value(), b.rank() == bn - 1);
                    if (red) {
                        EXPECT_EQ(*red, 1);
                    }
                }
                am::coll::barrier(w);
            }
        }),
        0);
}

// Copies of a team share it (and its count of collectives): calls through either match.
TEST_P(coll_team, copies_share_the_team) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const am::team t = w.split(0, 0);
                  am::team c = t;
                  EXPECT_TRUE(c == t);
                  for (int i = 0; i < 4; ++i) {
                      const am::team& use = (i + w.rank()) % 2 == 0 ? t : c;
                      EXPECT_EQ(am::coll::allreduce(use, i, am::coll::sum{}), i * w.size());
                  }
              }),
              0);
}

// --------------------------------------------------------------------------- nonblocking

// Two of each kind outstanding on the world team, waited for in reverse order.
TEST_P(coll_nb, many_outstanding_reverse_order) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            const int n = w.size(), me = w.rank();
            for (int round = 0; round < coll_test::rounds(n); ++round) {
                const int root = (round + 1) % n;
                std::vector<std::uint64_t> span_data(70000, me == root ? 9u : 0u);
                std::vector<std::uint32_t> in(20000, static_cast<std::uint32_t>(me + 1)),
                    sum(in.size());
                const std::vector<int> mine(static_cast<std::size_t>(me % 3), me);
                std::vector<std::vector<std::string>> blocks;
                for (int j = 0; j < n; ++j) blocks.push_back({std::to_string(me * 100 + j)});
                auto f0 = am::coll::barrier_nb(w);
                auto f1 = am::coll::broadcast_nb(w, std::to_string(me), root);
                auto f2 = am::coll::broadcast_nb(w, std::span<std::uint64_t>(span_data), root);
                auto f3 = am::coll::reduce_nb(w, me, am::coll::max{}, root);
                auto f4 = am::coll::allreduce_nb(w, me, am::coll::sum{});
                auto f5 = am::coll::allreduce_nb(w, std::span<const std::uint32_t>(in),
                                                 std::span<std::uint32_t>(sum), am::coll::sum{});
                auto f6 = am::coll::inclusive_scan_nb(w, me, am::coll::sum{});
                auto f7 = am::coll::exclusive_scan_nb(
                    w, std::to_string(me),
                    [](const std::string& a, const std::string& b) { return a + b; });
                auto f8 = am::coll::gather_nb(w, me, root);
                auto f9 = am::coll::allgather_nb(w, std::to_string(me));
                auto f10 = am::coll::allgatherv_nb(w, std::span<const int>(mine));
                auto f11 = am::coll::alltoallv_nb(w, blocks);
                auto f12 = am::coll::barrier_nb(w);
                auto f13 = am::coll::allreduce_nb(w, 2 * me, am::coll::sum{});
                EXPECT_EQ(f13.get(), n * (n - 1));
                f12.get();
                const auto got11 = f11.get();
                for (int i = 0; i < n; ++i) {
                    EXPECT_EQ(got11[i], std::vector<std::string>{std::to_string(i * 100 + me)});
                }
                const auto got10 = f10.get();
                for (int i = 0; i < n; ++i) {
                    EXPECT_EQ(got10[i], std::vector<int>(static_cast<std::size_t>(i % 3), i));
                }
                const auto got9 = f9.get();
                std::string prefix;
                for (int i = 0; i < n; ++i) {
                    EXPECT_EQ(got9[i], std::to_string(i));
                    if (i < me) prefix += std::to_string(i);
                }
                const auto got8 = f8.get();
                EXPECT_EQ(got8.size(), me == root ? static_cast<std::size_t>(n) : 0u);
                for (std::size_t i = 0; i < got8.size(); ++i)
                    EXPECT_EQ(got8[i], static_cast<int>(i));
                EXPECT_EQ(f7.get(), me == 0 ? std::nullopt : std::optional<std::string>(prefix));
                EXPECT_EQ(f6.get(), me * (me + 1) / 2);
                f5.get();
                EXPECT_EQ(sum[19999], static_cast<std::uint32_t>(n * (n + 1) / 2));
                EXPECT_EQ(sum[0], static_cast<std::uint32_t>(n * (n + 1) / 2));
                EXPECT_EQ(f4.get(), n * (n - 1) / 2);
                EXPECT_EQ(f3.get(), me == root ? std::optional<int>(n - 1) : std::nullopt);
                f2.get();
                EXPECT_EQ(std::count(span_data.begin(), span_data.end(), 9u),
                          static_cast<std::ptrdiff_t>(span_data.size()));
                EXPECT_EQ(f1.get(), std::to_string(root));
                f0.get();
            }
        }),
        0);
}

// then: a continuation of a collective's future, chained, and one of a barrier's.
TEST_P(coll_nb, then_continuations) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const int n = w.size(), me = w.rank();
                  auto doubled = am::coll::allreduce_nb(w, me, am::coll::sum{})
                                     .then([](int s) { return 2 * s; })
                                     .then([](int s) { return std::to_string(s); });
                  EXPECT_EQ(doubled.get(), std::to_string(n * (n - 1)));
                  auto counted = am::coll::barrier_nb(w).then([] { return 7; });
                  EXPECT_EQ(counted.get(), 7);
                  auto sizes = am::coll::allgather_nb(w, me).then(
                      [](std::vector<int> all) { return all.size(); });
                  EXPECT_EQ(sizes.get(), static_cast<std::size_t>(n));
                  EXPECT_EQ(am::coll::allreduce(w, 1, am::coll::sum{}), n);
              }),
              0);
}

// <am/coll.hpp> says blocking collectives "refuse to run inside a plain handler
// (errc::bad_context) and block an optimistic one", and a then continuation runs as an
// optimistic handler (<am/future.hpp>): a blocking allreduce inside one blocks it as a thread
// until the collective completes.
TEST_P(coll_optimistic, blocking_collective_in_then_continuation) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const int n = w.size(), me = w.rank();
                  auto nested = am::coll::allgather_nb(w, me).then([&w](std::vector<int> all) {
                      return am::coll::allreduce(w, static_cast<int>(all.size()), am::coll::sum{});
                  });
                  EXPECT_EQ(nested.get(), n * n);
                  EXPECT_EQ(am::coll::allreduce(w, 1, am::coll::sum{}), n);
              }),
              0);
}

AM_INSTANTIATE(coll_team, coll_test::params());
AM_INSTANTIATE(coll_nb, coll_test::params());
AM_INSTANTIATE(coll_optimistic, am_test::without_mpi(coll_test::params()));

}  // namespace
