// SPDX-License-Identifier: MIT
// Regression tests of bugs the suite found in am::async / am::dist, on threads and shm (on mpi
// one failing test fails the run of every test of its job):
//
// - one_senders_calls_run_in_order: calls from one rank to one destination run in the order
//   they were made. Two ranks send each other 100000 small calls carrying a sequence number;
//   a send that waited for room once let a newer batch overtake an older one.
// - disjoint_set_self_union_adds_the_item: async_union(a, a) adds a.
// - container_on_a_team_without_this_rank: creation throws errc::bad_context naming the
//   container.
#include "support/expect.hpp"
#include "support/spmd.hpp"

#include <am/dist.hpp>

#include <atomic>
#include <string>

namespace {

using am_test::spmd_test;

class dist_order : public spmd_test {};

std::atomic<std::uint64_t> dist_fail_next[2], dist_fail_bad[2], dist_fail_runs[2];

struct dist_fail_seq {
    void operator()(am::context& c, std::uint64_t seq) const {
        const auto r = static_cast<std::size_t>(c.rank());
        if (dist_fail_next[r].load() != seq) ++dist_fail_bad[r];
        dist_fail_next[r] = seq + 1;
        ++dist_fail_runs[r];
    }
};

TEST_P(dist_order, one_senders_calls_run_in_order) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int me = ctx.rank();
                  const auto m = static_cast<std::size_t>(me);
                  dist_fail_next[m] = 0;
                  dist_fail_bad[m] = 0;
                  dist_fail_runs[m] = 0;
                  am::coll::barrier(am::coll::world(ctx));
                  constexpr std::uint64_t calls = 100000;
                  for (std::uint64_t s = 0; s < calls; ++s) {
                      am::async(ctx, 1 - me, dist_fail_seq{}, s);
                  }
                  ctx.quiesce();
                  EXPECT_EQ(dist_fail_runs[m].load(), calls);
                  EXPECT_EQ(dist_fail_bad[m].load(), 0u)
                      << "calls from rank " << 1 - me << " ran out of the order they were made";
              }),
              0);
}

TEST_P(dist_order, disjoint_set_self_union_adds_the_item) {
    ASSERT_EQ(run([](am::context& ctx) {
                  am::dist::disjoint_set<std::uint64_t> ds(ctx);
                  if (ctx.rank() == 0) ds.async_union(5, 5);
                  EXPECT_EQ(ds.size(), 1u) << "async_union(5, 5) did not add 5";
                  EXPECT_EQ(ds.num_sets(), 1u);
              }),
              0);
}

TEST_P(dist_order, container_on_a_team_without_this_rank) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int me = ctx.rank();
                  const am::team w = am::coll::world(ctx);
                  const am::team none = w.split(me == 0 ? am::team::undefined : 0, me);
                  if (me == 0) {
                      am_test::expect_error([&] { am::dist::bag<int> b(none); },
                                            am::errc::bad_context, {"am::dist::bag", "rank 0"});
                  } else {
                      am::dist::bag<int> b(none);
                      b.insert(me);
                      EXPECT_EQ(b.size(), static_cast<std::size_t>(ctx.size() - 1));
                  }
              }),
              0);
}

AM_INSTANTIATE(dist_order, am_test::exact_params({2}, {2}, {}));

}  // namespace
