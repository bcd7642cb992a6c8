// SPDX-License-Identifier: MIT
// Coalescing and handler forms: coalesced messages arrive exactly once with intact contents
// (per source and destination), `flush()` sends partial buffers, layers destroyed inside an
// epoch send what they hold, the buffer capacity and the batch counts of simple patterns are
// exact, uncoalesced sends have ratio 1, span sends arrive as one batch; the three handler
// signatures get the right values and source; over-aligned, one-byte and maximum-size message types
// work, and one byte more is refused.
#include "typed/typed_support.hpp"

#include <map>

namespace {

using am_test::mix;
using am_test::spmd_test;

class typed_coalesce : public spmd_test {};
class typed_batches : public spmd_test {};
class typed_forms : public spmd_test {};

using coalesce_item = typed_test::item;

// The epoch sent `messages` typed messages in `batches` core messages.
void expect_sent(const am::epoch& e, std::uint64_t messages, std::uint64_t batches) {
    EXPECT_EQ(e.stats().messages_sent, messages);
    EXPECT_EQ(e.stats().batches_sent, batches);
}

std::uint32_t count_of(int from, int to) {
    return 50 + static_cast<std::uint32_t>(from * 7 + to * 3) % 23;
}

// Every rank sends count_of(me, d) distinct items to every rank d through coalescing layers of
// several sizes (also two layers over one type in the same epoch); every item arrives exactly
// once, unchanged, at the right rank, from the right source.
TEST_P(typed_coalesce, exactly_once_intact) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  std::vector<std::vector<std::uint32_t>> seen(static_cast<std::size_t>(n));
                  std::uint64_t bad = 0;
                  am::message_type<coalesce_item> type(
                      ctx, [&](int source, const coalesce_item& v) {
                          if (v.from != source || v.index >= count_of(source, me) ||
                              v.value != typed_test::item_value(source, me, v.index)) {
                              ++bad;
                              return;
                          }
                          ++seen[static_cast<std::size_t>(source)][v.index];
                      });
                  for (std::size_t bytes :
                       {sizeof(coalesce_item), 7 * sizeof(coalesce_item), std::size_t{16} << 10}) {
                      const std::size_t b = std::min(bytes, ctx.max_medium());
                      auto small = am::coalesce(type, {.bytes = b});
                      auto other = am::coalesce(type, {.bytes = 3 * sizeof(coalesce_item)});
                      for (int s = 0; s < n; ++s) {
                          seen[static_cast<std::size_t>(s)].assign(count_of(s, me), 0);
                      }
                      am::epoch e(ctx);
                      for (std::uint32_t i = 0; i < 80; ++i) {
                          for (int d = 0; d < n; ++d) {
                              if (i >= count_of(me, d)) continue;
                              const coalesce_item v{typed_test::item_value(me, d, i), me, i};
                              if (i % 5 == 4) {
                                  other.send(v, d);
                              } else {
                                  small.send(v, d);
                              }
                          }
                      }
                      e.end();
                      for (int s = 0; s < n; ++s) {
                          const auto& got = seen[static_cast<std::size_t>(s)];
                          const auto once = std::count(got.begin(), got.end(), 1u);
                          EXPECT_EQ(static_cast<std::size_t>(once), got.size())
                              << "from " << s << " with " << b << "-byte buffers";
                      }
                  }
                  EXPECT_EQ(bad, 0u);
              }),
              0);
}

// flush() sends a partial buffer at once: nothing arrives while the items sit in the buffer,
// everything arrives after flush() (before the epoch ends), in one batch; a second flush()
// sends nothing.
TEST_P(typed_batches, flush_sends_partial_buffer) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  const int right = (me + 1) % n, left = (me + n - 1) % n;
                  std::uint64_t got = 0, bad = 0;
                  am::message_type<coalesce_item> type(ctx,
                                                       [&](int source, const coalesce_item& v) {
                                                           if (source != left || v.from != left)
                                                               ++bad;
                                                           ++got;
                                                       });
                  auto buf = am::coalesce(type, {.bytes = 8 * sizeof(coalesce_item)});
                  am::epoch e(ctx);
                  for (std::uint32_t i = 0; i < 3; ++i) buf.send(coalesce_item{i, me, i}, right);
                  ctx.barrier();  // every rank has buffered its 3 items, none is full
                  for (int i = 0; i < 10; ++i) (void)ctx.poll();
                  EXPECT_EQ(got, 0u) << "a partial buffer was sent before flush()";
                  ctx.barrier();
                  buf.flush();
                  ctx.wait([&] { return got == 3; });  // the left neighbour flushed too
                  buf.flush();
                  e.end();
                  EXPECT_EQ(got, 3u);
                  EXPECT_EQ(bad, 0u);
                  expect_sent(e, 3u, 1u);
              }),
              0);
}

// capacity() is bytes / sizeof(T); a single-destination pattern of N = k · capacity items
// leaves in exactly k batches of capacity items (ratio exactly capacity), k · capacity + 3 in
// k + 1 batches, the last of 3 items (sent by the epoch's end).
TEST_P(typed_coalesce, exact_batch_counts) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const auto [n, me, right] = typed_test::ring_of(ctx);
            std::map<std::size_t, std::uint64_t> sizes;  // batch size -> batches
            std::uint64_t got = 0;
            am::message_type<coalesce_item> type(ctx,
                                                 [&](int, std::span<const coalesce_item> batch) {
                                                     ++sizes[batch.size()];
                                                     got += batch.size();
                                                 });
            EXPECT_EQ(am::coalesce(type, {.bytes = sizeof(coalesce_item)}).capacity(), 1u);
            EXPECT_EQ(am::coalesce(type, {.bytes = 100}).capacity(), 100 / sizeof(coalesce_item));
            EXPECT_EQ(am::coalesce(type, {.bytes = ctx.max_medium()}).capacity(),
                      ctx.max_medium() / sizeof(coalesce_item));
            EXPECT_EQ(type.max_batch(), ctx.max_medium() / sizeof(coalesce_item));
            EXPECT_EQ(
                am::coalesce(type).capacity(),
                am::detail::default_coalesce_bytes(n, ctx.max_medium()) / sizeof(coalesce_item));
            for (std::size_t cap : {std::size_t{1}, std::size_t{6}, std::size_t{64}}) {
                auto buf = am::coalesce(type, {.bytes = cap * sizeof(coalesce_item) + 5});
                EXPECT_EQ(buf.capacity(), cap);
                for (std::size_t extra : {std::size_t{0}, std::size_t{3}}) {
                    if (extra >= cap) continue;
                    const std::size_t k = 5, total = k * cap + extra;
                    sizes.clear();
                    got = 0;
                    am::epoch e(ctx);
                    for (std::size_t i = 0; i < total; ++i) {
                        buf.send(coalesce_item{i, me, static_cast<std::uint32_t>(i)}, right);
                    }
                    e.end();
                    const am::epoch_stats& s = e.stats();
                    const std::string where =
                        "capacity " + std::to_string(cap) + ", " + std::to_string(total);
                    EXPECT_EQ(s.messages_sent, total) << where;
                    EXPECT_EQ(s.batches_sent, k + (extra != 0 ? 1 : 0)) << where;
                    EXPECT_EQ(s.bytes_sent, total * sizeof(coalesce_item)) << where;
                    if (extra == 0) {
                        EXPECT_EQ(s.coalescing_ratio(), static_cast<double>(cap)) << where;
                    }
                    EXPECT_EQ(got, total) << where;
                    std::map<std::size_t, std::uint64_t> want{{cap, k}};
                    if (extra != 0) want[extra] = 1;
                    EXPECT_EQ(sizes, want) << where;
                }
            }
        }),
        0);
}

// A coalescing layer or a combiner destroyed inside an epoch while it holds messages sends
// them first: they are handled when the epoch ends.
TEST_P(typed_batches, destroyed_layers_send_held_messages) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const auto [n, me, right] = typed_test::ring_of(ctx);
                  struct kv {
                      std::uint64_t key, value;
                  };
                  std::uint64_t got = 0, sum = 0, sums = 0;
                  am::message_type<coalesce_item> type(ctx, [&](const coalesce_item&) { ++got; });
                  am::message_type<kv> kvs(ctx, [&](const kv& m) {
                      sum += m.value;
                      ++sums;
                  });
                  am::epoch e(ctx);
                  {
                      auto buf = am::coalesce(type, {.bytes = 8 * sizeof(coalesce_item)});
                      for (std::uint32_t i = 0; i < 3; ++i)
                          buf.send(coalesce_item{i, me, i}, right);
                  }
                  {
                      auto red = am::reduce_by_key(
                          kvs, [](std::uint64_t a, std::uint64_t b) { return a + b; },
                          am::hash_cache{});
                      red.send(kv{1, 2}, right);
                      red.send(kv{1, 3}, right);
                  }
                  e.end();
                  EXPECT_EQ(got, 3u);
                  EXPECT_EQ(sums, 1u);
                  EXPECT_EQ(sum, 5u);
                  expect_sent(e, 4u, 2u);
              }),
              0);
}

// Uncoalesced sends: one core message per typed message, ratio exactly 1.
TEST_P(typed_batches, uncoalesced_ratio_one) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  std::uint64_t got = 0, batches = 0;
                  am::message_type<coalesce_item> type(
                      ctx, [&](int, std::span<const coalesce_item> batch) {
                          ++batches;
                          got += batch.size();
                      });
                  am::epoch e(ctx);
                  for (std::uint32_t i = 0; i < 37; ++i) {
                      type.send(coalesce_item{i, me, i},
                                static_cast<int>(mix(static_cast<std::uint64_t>(me) * 100 + i) %
                                                 static_cast<std::uint64_t>(n)));
                  }
                  e.end();
                  expect_sent(e, 37u, 37u);
                  EXPECT_EQ(e.stats().coalescing_ratio(), 1.0);
                  EXPECT_EQ(got, batches);  // every batch carried one message
                  EXPECT_EQ(e.stats().messages_handled, got);
                  am::epoch sum(ctx);
                  EXPECT_EQ(sum.end(got), 37u * static_cast<std::uint64_t>(n));
              }),
              0);
}

// send(span) sends its values as one batch (the span handler sees it whole, in order); an
// empty span sends nothing; a span of max_batch() values is one batch.
TEST_P(typed_batches, span_sends) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  std::map<std::size_t, std::uint64_t> sizes;
                  std::uint64_t bad = 0;
                  am::message_type<coalesce_item> type(
                      ctx, [&](int source, std::span<const coalesce_item> batch) {
                          ++sizes[batch.size()];
                          for (std::size_t i = 0; i < batch.size(); ++i) {
                              if (batch[i].from != source || batch[i].index != i ||
                                  batch[i].value != typed_test::item_value(
                                                        source, me, static_cast<std::uint32_t>(i)))
                                  ++bad;
                          }
                      });
                  const std::size_t max = type.max_batch();
                  std::vector<std::vector<coalesce_item>> spans(static_cast<std::size_t>(n));
                  am::epoch e(ctx);
                  for (int d = 0; d < n; ++d) {
                      auto& v = spans[static_cast<std::size_t>(d)];
                      for (std::uint32_t i = 0; i < max; ++i)
                          v.push_back({typed_test::item_value(me, d, i), me, i});
                      const std::span<const coalesce_item> all(v);
                      type.send(all.first(1), d);
                      type.send(all.first(7), d);
                      type.send(all, d);
                      type.send(all.first(0), d);
                  }
                  e.end();
                  const std::uint64_t nn = static_cast<std::uint64_t>(n);
                  EXPECT_EQ(e.stats().batches_sent, 3 * nn);
                  EXPECT_EQ(e.stats().messages_sent, (1 + 7 + max) * nn);
                  EXPECT_EQ(e.stats().messages_handled, (1 + 7 + max) * nn);
                  const std::map<std::size_t, std::uint64_t> want{{1, nn}, {7, nn}, {max, nn}};
                  EXPECT_EQ(sizes, want);
                  EXPECT_EQ(bad, 0u);
              }),
              0);
}

// The three handler forms get every value once, with the right source where they take one.
TEST_P(typed_forms, three_forms_and_source) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  std::vector<std::uint64_t> by_span(static_cast<std::size_t>(n)),
                      by_item(static_cast<std::size_t>(n)), by_value(static_cast<std::size_t>(n));
                  std::uint64_t bad = 0;
                  const auto ok = [&](const coalesce_item& v) {
                      return v.from >= 0 && v.from < n &&
                             v.value == typed_test::item_value(v.from, me, v.index);
                  };
                  am::message_type<coalesce_item> spans(
                      ctx, [&](int source, std::span<const coalesce_item> b) {
                          for (const coalesce_item& v : b) {
                              if (!ok(v) || v.from != source) ++bad;
                              ++by_span[static_cast<std::size_t>(source)];
                          }
                      });
                  am::message_type<coalesce_item> items(
                      ctx, [&](int source, const coalesce_item& v) {
                          if (!ok(v) || v.from != source) ++bad;
                          ++by_item[static_cast<std::size_t>(source)];
                      });
                  am::message_type<coalesce_item> values(ctx, [&](const coalesce_item& v) {
                      if (!ok(v)) {
                          ++bad;
                          return;
                      }
                      ++by_value[static_cast<std::size_t>(v.from)];
                  });
                  auto b1 = am::coalesce(spans, {.bytes = 4 * sizeof(coalesce_item)});
                  auto b2 = am::coalesce(items, {.bytes = 4 * sizeof(coalesce_item)});
                  auto b3 = am::coalesce(values, {.bytes = 4 * sizeof(coalesce_item)});
                  am::epoch e(ctx);
                  for (int d = 0; d < n; ++d) {
                      for (std::uint32_t i = 0; i < 10; ++i) {
                          const coalesce_item v{typed_test::item_value(me, d, i), me, i};
                          b1.send(v, d), b2.send(v, d), b3.send(v, d);
                          spans.send(v, d), items.send(v, d), values.send(v, d);
                      }
                  }
                  e.end();
                  for (int s = 0; s < n; ++s) {
                      const auto i = static_cast<std::size_t>(s);
                      EXPECT_EQ(by_span[i], 20u) << "from " << s;
                      EXPECT_EQ(by_item[i], 20u) << "from " << s;
                      EXPECT_EQ(by_value[i], 20u) << "from " << s;
                  }
                  EXPECT_EQ(bad, 0u);
              }),
              0);
}

// An over-aligned type arrives intact and properly aligned for its handler (the ring aligns
// records to 8 bytes only), one by one, coalesced and in spans.
TEST_P(typed_forms, over_aligned_type) {
    struct alignas(32) wide {
        std::uint64_t a[5];
    };
    static_assert(alignof(wide) == 32 && sizeof(wide) == 64);
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  std::uint64_t got = 0, misaligned = 0, bad = 0;
                  const auto check = [&](int source, const wide& w) {
                      if (reinterpret_cast<std::uintptr_t>(&w) % 32 != 0) ++misaligned;
                      if (w.a[0] != static_cast<std::uint64_t>(source) || w.a[1] >= 30) ++bad;
                      for (unsigned k = 2; k < 5; ++k) {
                          if (w.a[k] != mix(w.a[0] * 1000 + w.a[1] * 10 + k)) ++bad;
                      }
                      ++got;
                  };
                  am::message_type<wide> one(ctx, [&](int s, const wide& w) { check(s, w); });
                  am::message_type<wide> many(ctx, [&](int s, std::span<const wide> b) {
                      if (reinterpret_cast<std::uintptr_t>(b.data()) % 32 != 0) ++misaligned;
                      for (const wide& w : b) check(s, w);
                  });
                  auto buf = am::coalesce(one, {.bytes = 3 * sizeof(wide)});
                  am::epoch e(ctx);
                  for (int d = 0; d < n; ++d) {
                      std::vector<wide> v(10);
                      for (std::uint64_t i = 0; i < 30; ++i) {
                          wide w{};
                          w.a[0] = static_cast<std::uint64_t>(me), w.a[1] = i;
                          for (int k = 2; k < 5; ++k) {
                              w.a[k] = mix(w.a[0] * 1000 + i * 10 + static_cast<unsigned>(k));
                          }
                          if (i < 10) {
                              one.send(w, d);
                          } else if (i < 20) {
                              buf.send(w, d);
                          } else {
                              v[i - 20] = w;
                          }
                      }
                      many.send(std::span<const wide>(v), d);
                  }
                  e.end();
                  EXPECT_EQ(got, 30u * static_cast<std::uint64_t>(n));
                  EXPECT_EQ(misaligned, 0u);
                  EXPECT_EQ(bad, 0u);
              }),
              0);
}

// A one-byte message type: every value arrives once per send, coalesced 7 to a batch.
TEST_P(typed_forms, one_byte_type) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            std::vector<std::array<std::uint32_t, 256>> hist(static_cast<std::size_t>(n));
            am::message_type<std::uint8_t> type(ctx, [&](int source, std::uint8_t v) {
                ++hist[static_cast<std::size_t>(source)][v];
            });
            auto buf = am::coalesce(type, {.bytes = 7});
            EXPECT_EQ(buf.capacity(), 7u);
            EXPECT_EQ(type.max_batch(), ctx.max_medium());
            am::epoch e(ctx);
            for (int d = 0; d < n; ++d) {
                for (int i = 0; i < 300; ++i) {
                    buf.send(static_cast<std::uint8_t>((i + me + d) % 256), d);
                }
            }
            e.end();
            EXPECT_EQ(e.stats().batches_sent, static_cast<std::uint64_t>(n) * ((300 + 6) / 7));
            EXPECT_EQ(e.stats().bytes_sent, 300u * static_cast<std::uint64_t>(n));
            for (int s = 0; s < n; ++s) {
                for (int v = 0; v < 256; ++v) {
                    // Values (i + s + me) % 256 for i < 300: 44 of them twice.
                    const int i = ((v - s - me) % 256 + 256) % 256;
                    const std::uint32_t want = i + 256 < 300 ? 2 : 1;
                    ASSERT_EQ(hist[static_cast<std::size_t>(s)][static_cast<std::size_t>(v)], want)
                        << "from " << s << ", value " << v;
                }
            }
        }),
        0);
}

constexpr std::size_t max = 4096;
struct big {
    std::uint8_t b[max];
};
struct too_big {
    std::uint8_t b[max + 1];
};
// A message type of exactly max_medium() bytes works (one per batch; a span of two is
// refused), beside a small type.
TEST_P(typed_forms, max_size_type) {
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      const int n = ctx.size(), me = ctx.rank();
                      ASSERT_EQ(ctx.max_medium(), max);
                      std::uint64_t got = 0, bad = 0;
                      am::message_type<big> type(ctx, [&](int source, const big& v) {
                          const auto want = am_test::pattern(
                              max, static_cast<std::uint64_t>(source) * 100 + v.b[0] % 4);
                          if (std::memcmp(v.b + 1, want.data() + 1, max - 1) != 0) ++bad;
                          ++got;
                      });
                      EXPECT_EQ(type.max_batch(), 1u);
                      auto buf = am::coalesce(type, {.bytes = max});
                      EXPECT_EQ(buf.capacity(), 1u);
                      std::uint64_t small_got = 0;
                      am::message_type<std::uint64_t> small(ctx,
                                                            [&](std::uint64_t) { ++small_got; });
                      am::epoch e(ctx);
                      for (int d = 0; d < n; ++d) {
                          for (std::uint64_t k = 0; k < 4; ++k) {
                              big v;
                              const auto p =
                                  am_test::pattern(max, static_cast<std::uint64_t>(me) * 100 + k);
                              std::memcpy(v.b, p.data(), max);
                              v.b[0] = static_cast<std::uint8_t>(k);
                              if (k % 2 == 0) {
                                  type.send(v, d);
                              } else {
                                  buf.send(v, d);
                              }
                              if (k == 0) {
                                  const big two[2] = {v, v};
                                  am_test::expect_error(
                                      [&] { type.send(std::span<const big>(two, 2), d); },
                                      am::errc::too_large,
                                      {"am::message_type::send", "rank " + std::to_string(me)});
                              }
                          }
                          small.send(1, d);
                      }
                      e.end();
                      EXPECT_EQ(got, 4u * static_cast<std::uint64_t>(n));
                      EXPECT_EQ(small_got, static_cast<std::uint64_t>(n));
                      EXPECT_EQ(bad, 0u);
                  },
                  [](am::config& cfg) { cfg.max_medium = max; }),
              0);
}

// A message type one byte over max_medium() is refused at construction with errc::too_large,
// naming the call, the rank and the limit; the job then still creates and uses types.
TEST_P(typed_forms, one_byte_over_max_refused) {
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      const int n = ctx.size(), me = ctx.rank();
                      am_test::expect_error(
                          [&] { (void)am::message_type<too_big>(ctx, [](const too_big&) {}); },
                          am::errc::too_large,
                          {"am::message_type", "rank " + std::to_string(me) + ":", "4097",
                           "max_medium() = 4096"});
                      std::uint64_t got = 0;
                      am::message_type<std::uint64_t> small(ctx, [&](std::uint64_t) { ++got; });
                      am::epoch e(ctx);
                      for (int d = 0; d < n; ++d) small.send(1, d);
                      e.end();
                      EXPECT_EQ(got, static_cast<std::uint64_t>(n));
                  },
                  [](am::config& cfg) { cfg.max_medium = max; }),
              0);
}

AM_INSTANTIATE(typed_coalesce, am_test::all_params());
AM_INSTANTIATE(typed_batches, typed_test::light_params());
AM_INSTANTIATE(typed_forms, typed_test::light_params());

}  // namespace

// The default buffer (bytes = 0) is 16 KiB up to 256 ranks, then 4 MiB / ranks per half (the
// two halves for every rank within 8 MiB per layer: issue 20's ≤ 16 MiB per rank at 1024), at
// least 1 KiB, never above max_medium().
TEST(typed_coalesce_default, bytes_shrink_beyond_256_ranks) {
    using am::detail::default_coalesce_bytes;
    constexpr std::size_t big = std::size_t{1} << 20;
    EXPECT_EQ(default_coalesce_bytes(1, big), 16384u);
    EXPECT_EQ(default_coalesce_bytes(256, big), 16384u);
    EXPECT_EQ(default_coalesce_bytes(512, big), 8192u);
    EXPECT_EQ(default_coalesce_bytes(1024, big), 4096u);
    EXPECT_EQ(default_coalesce_bytes(4096, big), 1024u);
    EXPECT_EQ(default_coalesce_bytes(65536, big), 1024u);
    EXPECT_EQ(default_coalesce_bytes(4, 8048), 8048u);  // max_medium() caps it
    EXPECT_EQ(default_coalesce_bytes(1024, 8048), 4096u);
    for (int p : {1024, 4096}) {  // both halves for every rank: at most 8 MiB
        EXPECT_LE(2 * default_coalesce_bytes(p, big) * static_cast<std::size_t>(p),
                  std::size_t{8} << 20);
    }
}
