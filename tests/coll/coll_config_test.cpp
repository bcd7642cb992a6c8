// SPDX-License-Identifier: MIT
// am::coll under other configurations: small rings (every collective message in many
// fragments, sends that wait for room while handling what arrives), a progress thread per rank
// (handlers of collective messages on another thread: the layer locks its state), and both.
#include "coll/coll_support.hpp"

#include <numeric>
#include <span>

namespace {

using am_test::spmd_test;
using coll_test::draw;

class coll_config : public spmd_test {};

/// Large and small collectives of several kinds, many of them outstanding at once.
void coll_workload(am::context& ctx) {
    const am::team w = am::coll::world(ctx);
    const int n = w.size(), me = w.rank();
    const am::team half = w.split(me % 2, -me);
    for (int round = 0; round < 3; ++round) {
        std::vector<std::uint64_t> in(20000), sum(in.size());
        for (std::size_t i = 0; i < in.size(); ++i) in[i] = draw(101, round, me, i) >> 8;
        std::vector<std::uint64_t> want(in.size(), 0);
        for (int r = 0; r < n; ++r) {
            for (std::size_t i = 0; i < in.size(); ++i) want[i] += draw(101, round, r, i) >> 8;
        }
        am::coll::allreduce(w, std::span<const std::uint64_t>(in), std::span<std::uint64_t>(sum),
                            am::coll::sum{});
        EXPECT_TRUE(sum == want) << "round " << round;
        const int root = (round + 1) % n;
        const auto big = am_test::pattern(100000, draw(102, round, root));
        auto data = me == root ? big : std::vector<std::byte>(big.size());
        am::coll::broadcast(w, std::span<std::byte>(data), root);
        EXPECT_TRUE(data == big);
        std::vector<std::vector<std::uint32_t>> out;
        for (int to = 0; to < n; ++to) {
            out.emplace_back(500 * static_cast<std::size_t>((me + to) % 3),
                             static_cast<std::uint32_t>(me * 1000 + to));
        }
        const auto got = am::coll::alltoallv(w, out);
        for (int from = 0; from < n; ++from) {
            EXPECT_EQ(got[from],
                      std::vector<std::uint32_t>(500 * static_cast<std::size_t>((from + me) % 3),
                                                 static_cast<std::uint32_t>(from * 1000 + me)));
        }
        std::vector<am::future<int>> fs;
        for (int i = 0; i < 8; ++i) {
            fs.push_back(am::coll::allreduce_nb(i % 2 == 0 ? w : half, i, am::coll::sum{}));
        }
        for (int i = 7; i >= 0; --i) {
            EXPECT_EQ(fs[static_cast<std::size_t>(i)].get(), i * (i % 2 == 0 ? n : half.size()));
        }
        const auto names =
            am::coll::allgather(half, std::string(3000, static_cast<char>('a' + me % 26)));
        ASSERT_EQ(names.size(), static_cast<std::size_t>(half.size()));
        for (int i = 0; i < half.size(); ++i) {
            EXPECT_EQ(names[i],
                      std::string(3000, static_cast<char>('a' + half.world_rank(i) % 26)));
        }
        am::coll::barrier(w);
    }
}

TEST_P(coll_config, small_rings) {
    ASSERT_EQ(run(coll_workload, [](am::config& cfg) { cfg.ring_bytes = 4096; }), 0);
}

TEST_P(coll_config, progress_thread) {
    ASSERT_EQ(run(coll_workload, [](am::config& cfg) { cfg.progress_thread = true; }), 0);
}

TEST_P(coll_config, progress_thread_small_rings) {
    ASSERT_EQ(run(coll_workload,
                  [](am::config& cfg) {
                      cfg.progress_thread = true;
                      cfg.ring_bytes = 4096;
                  }),
              0);
}

AM_INSTANTIATE(coll_config, am_test::make_params({1, 2, 3, 5}, {2, 3}));

}  // namespace
