// SPDX-License-Identifier: MIT
// Routed coalescing (am::routed): every message arrives exactly once, unchanged, with its
// original sender as source, for several group sizes (also ones that leave a partial last
// group); the same traffic through a routed and a direct coalescing layer gives every rank the
// same messages, also when handlers send through the layer again (under the general and the
// depth-limited detectors); a routed send that the declared depth cannot hold is refused at
// the sender; the rank keeps group + groups buffers, fewer than a direct layer's P.
#include "typed/typed_support.hpp"

#include <algorithm>
#include <map>

namespace {

using am_test::expect_error;
using am_test::mix;
using am_test::spmd_test;

class typed_route : public spmd_test {};

using route_item = typed_test::item;

std::uint32_t route_count_of(int from, int to) {
    return 20 + static_cast<std::uint32_t>(from * 7 + to * 3) % 23;
}

// What a rank received in one epoch: per source, how often each index arrived, and the bad.
struct received {
    std::vector<std::vector<std::uint32_t>> seen;
    std::uint64_t bad = 0;
};

// Every rank sends count_of(me, d) items to every d through `send`; checks exactly-once.
template <class Send>
void all_to_all(am::context& ctx, received& r, Send&& send, const std::string& what) {
    const int n = ctx.size(), me = ctx.rank();
    r.seen.assign(static_cast<std::size_t>(n), {});
    for (int s = 0; s < n; ++s)
        r.seen[static_cast<std::size_t>(s)].assign(route_count_of(s, me), 0);
    {
        am::epoch e(ctx);
        for (std::uint32_t i = 0; i < 45; ++i) {
            for (int d = 0; d < n; ++d) {
                if (i < route_count_of(me, d))
                    send(route_item{typed_test::item_value(me, d, i), me, i}, d);
            }
        }
    }
    for (int s = 0; s < n; ++s) {
        const auto& got = r.seen[static_cast<std::size_t>(s)];
        EXPECT_EQ(static_cast<std::size_t>(std::count(got.begin(), got.end(), 1u)), got.size())
            << "from " << s << ", " << what;
    }
    EXPECT_EQ(r.bad, 0u) << what;
}

TEST_P(typed_route, exactly_once_with_source_like_direct) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            received r;
            am::message_type<route_item> type(ctx, [&](int source, const route_item& v) {
                if (v.from != source || v.index >= route_count_of(source, me) ||
                    v.value != typed_test::item_value(source, me, v.index)) {
                    ++r.bad;
                    return;
                }
                ++r.seen[static_cast<std::size_t>(source)][v.index];
            });
            auto direct = am::coalesce(type);
            all_to_all(
                ctx, r, [&](const route_item& v, int d) { direct.send(v, d); }, "direct");
            const auto reference = r.seen;
            // Default group, no grouping, pairs, triples (partial last groups at n = 2,
            // 4, 64), and one group of all ranks; small buffers make many batches.
            for (const int g : {0, 1, 2, 3, n}) {
                for (const std::size_t bytes : {std::size_t{0}, 3 * sizeof(route_item) + 24}) {
                    auto via = am::coalesce_routed(type, {.group = g, .bytes = bytes});
                    const std::string what = "group " + std::to_string(g) + " (" +
                                             std::to_string(via.group()) + "), " +
                                             std::to_string(bytes) + " bytes";
                    all_to_all(
                        ctx, r, [&](const route_item& v, int d) { via.send(v, d); }, what);
                    EXPECT_EQ(r.seen, reference) << what;
                    EXPECT_FALSE(via.holds()) << what;
                }
            }
        }),
        0);
}

// Chains: a handler sends what it received on through the same layer until its ttl runs out,
// so routed messages nest below routed messages. Routed and direct runs of the same traffic
// must hand every rank the same messages.
struct link {
    std::uint64_t id;
    std::uint32_t ttl;
    std::int32_t from;
};

struct chain_result {
    std::uint64_t handled = 0, sum = 0;
    bool operator==(const chain_result&) const = default;
};

int next_of(const link& l, int n) {
    return static_cast<int>(mix(l.id ^ (std::uint64_t{l.ttl} << 50)) %
                            static_cast<std::uint64_t>(n));
}

template <class Layer>
chain_result run_chains(am::context& ctx, am::message_type<link>& type, Layer& layer,
                        chain_result& r, std::uint32_t ttl, int depth) {
    const int n = ctx.size(), me = ctx.rank();
    r = {};
    {
        am::epoch e(ctx, {.depth = depth});
        for (std::uint64_t i = 0; i < 30; ++i) {
            const link l{(static_cast<std::uint64_t>(me) << 32) | i, ttl, me};
            layer.send(l, next_of(l, n));
        }
    }
    (void)type;
    return r;
}

TEST_P(typed_route, nested_chains_like_direct) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  chain_result r;
                  am::coalesced<link>* direct = nullptr;
                  am::routed<link>* via = nullptr;
                  std::uint64_t bad = 0;
                  am::message_type<link> type(ctx, [&](int source, const link& l) {
                      if (l.from != source) ++bad;
                      ++r.handled;
                      r.sum += mix(l.id ^ l.ttl) ^ static_cast<std::uint64_t>(me);
                      if (l.ttl == 0) return;
                      const link next{l.id, l.ttl - 1, me};
                      if (via != nullptr) {
                          via->send(next, next_of(next, n));
                      } else {
                          direct->send(next, next_of(next, n));
                      }
                  });
                  auto d = am::coalesce(type, {.bytes = 4 * sizeof(link)});
                  auto v = am::coalesce_routed(type, {.bytes = 4 * (sizeof(link) + 8)});
                  // General detector, long chains; depth-limited: a routed message sent at
                  // level l is forwarded at l + 1 and its handler sends at l + 2, so chains of
                  // 3 messages need depth 5 routed (2 direct).
                  for (const auto& [ttl, depth_direct, depth_routed] :
                       {std::tuple{6u, -1, -1}, std::tuple{2u, 2, 5}}) {
                      direct = &d;
                      via = nullptr;
                      const chain_result want = run_chains(ctx, type, d, r, ttl, depth_direct);
                      EXPECT_EQ(am::epoch(ctx).end(want.handled),
                                static_cast<std::uint64_t>(n) * 30 * (ttl + 1));
                      direct = nullptr;
                      via = &v;
                      const chain_result got = run_chains(ctx, type, v, r, ttl, depth_routed);
                      EXPECT_EQ(got, want) << "ttl " << ttl << ", depth " << depth_routed;
                  }
                  EXPECT_EQ(bad, 0u);
              }),
              0);
}

// With epoch_options::depth 0 the forward could not be sent: the sender is refused, nothing is
// appended, and the epoch ends; depth 1 takes one routed level.
TEST_P(typed_route, depth_refused_at_sender) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  std::uint64_t got = 0;
                  am::message_type<route_item> type(ctx, [&](const route_item&) { ++got; });
                  auto via = am::coalesce_routed(type);
                  const route_item v{1, me, 0};
                  {
                      am::epoch e(ctx, {.depth = 0});
                      expect_error([&] { via.send(v, (me + 1) % n); }, am::errc::bad_context,
                                   {"am::routed::send", "exceeds the depth 0"});
                      EXPECT_FALSE(via.holds());
                  }
                  EXPECT_EQ(got, 0u);
                  {
                      am::epoch e(ctx, {.depth = 1});
                      via.send(v, (me + 1) % n);
                  }
                  EXPECT_EQ(got, 1u);
                  expect_error([&] { via.send(v, n); }, am::errc::bad_rank, {"am::routed::send"});
              }),
              0);
}

// Buffers: group + groups per rank, created on first use; at 64 ranks 8 + 8 instead of 64.
// A direct layer holds two halves of its capacity for every rank from the start; a message
// type adds its per-peer counts (two slots × six 8-byte words per peer) to the layer's own.
TEST_P(typed_route, buffers_per_rank) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  const std::size_t before = am::typed_memory_bytes(ctx);
                  am::message_type<route_item> type(ctx, [](const route_item&) {});
                  EXPECT_GE(am::typed_memory_bytes(ctx), before + 96 * static_cast<std::size_t>(n));
                  auto direct = am::coalesce(type);
                  const std::size_t halves =
                      static_cast<std::size_t>(n) * 2 * direct.capacity() * sizeof(route_item);
                  EXPECT_GE(direct.buffer_bytes(), halves);
                  EXPECT_LE(direct.buffer_bytes(), halves + static_cast<std::size_t>(n) * 64);
                  auto via = am::coalesce_routed(type);
                  int g = 0;
                  while (g * g < n) ++g;
                  EXPECT_EQ(via.group(), g);
                  EXPECT_EQ(via.buffers(), static_cast<std::size_t>(g + (n + g - 1) / g));
                  const std::size_t empty = via.buffer_bytes();
                  {
                      am::epoch e(ctx);
                      for (int d = 0; d < n; ++d) {
                          direct.send(route_item{1, me, 0}, d);
                          via.send(route_item{1, me, 0}, d);
                      }
                  }
                  EXPECT_GT(via.buffer_bytes(), empty);
                  EXPECT_LE(via.buffer_bytes(),
                            empty + via.buffers() * via.capacity() * (sizeof(route_item) + 8));
                  if (n == 64) {
                      EXPECT_LT(4 * via.buffer_bytes(), direct.buffer_bytes());
                  }
              }),
              0);
}

AM_INSTANTIATE(typed_route, am_test::all_params());

}  // namespace
