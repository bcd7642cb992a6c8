// SPDX-License-Identifier: MIT
// Duplicate elimination and key/value combining at the source: hash caches drop every repeat
// of a (value, destination) pair and count the hits, also when handlers send through the same
// layer while it sends; direct-mapped caches may let repeats pass but never drop a value they
// have not seen; clear() forgets; the cache lasts across epochs. reduce_by_key folds values per
// key and destination (struct {key, value} and {first, second} messages, both caches, several
// operators), counts the folds, sends what it holds on flush() and before the epoch ends, also
// when handlers feed it (nothing they add while it evicts may be lost).
#include "typed/typed_support.hpp"

#include <map>
#include <set>

namespace {

using am_test::mix;
using am_test::spmd_test;

class typed_dedup : public spmd_test {};
class typed_reduce : public spmd_test {};

struct cache_item {
    std::uint64_t value;
    std::int32_t from;
    std::uint32_t tag;
};

struct kv {  // a key/value message with members key and value
    std::uint64_t key;
    std::uint64_t value;
};
struct pair_kv {  // the same with members first and second
    std::uint64_t first;
    std::uint64_t second;
};

std::uint64_t value_of(int from, int to) {
    return mix((static_cast<std::uint64_t>(from) << 32) | static_cast<std::uint32_t>(to));
}

// hash_cache: a value sent K times to one destination arrives once (K - 1 hits, also in the
// epoch's statistics), over a message type and over a coalescing layer; the same value sent to
// every destination arrives at each of them.
TEST_P(typed_dedup, hash_cache_drops_repeats) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  const std::uint64_t nn = static_cast<std::uint64_t>(n);
                  constexpr std::uint64_t K = 10;
                  std::map<std::pair<int, std::uint32_t>, std::uint64_t> got;  // (source, tag)
                  std::uint64_t bad = 0;
                  am::message_type<cache_item> type(ctx, [&](int source, const cache_item& v) {
                      const std::uint64_t want = v.tag == 2 ? 12345 : value_of(source, me) + v.tag;
                      if (v.from != source || v.value != want) ++bad;
                      ++got[{source, v.tag}];
                  });
                  auto buf = am::coalesce(type, {.bytes = 4 * sizeof(cache_item)});
                  auto direct = am::dedup(type, am::hash_cache{});
                  auto coalesced = am::dedup(buf, am::hash_cache{});
                  am::epoch e(ctx);
                  for (std::uint64_t k = 0; k < K; ++k) {
                      for (int d = 0; d < n; ++d) {
                          direct.send(cache_item{value_of(me, d), me, 0}, d);
                          coalesced.send(cache_item{value_of(me, d) + 1, me, 1}, d);
                          direct.send(cache_item{12345, me, 2}, d);  // one value, every destination
                      }
                  }
                  e.end();
                  EXPECT_EQ(direct.hits(), 2 * nn * (K - 1));
                  EXPECT_EQ(coalesced.hits(), nn * (K - 1));
                  EXPECT_EQ(e.stats().dedup_hits, 3 * nn * (K - 1));
                  EXPECT_EQ(e.stats().messages_sent, 3 * nn);
                  EXPECT_EQ(e.stats().messages_handled, 3 * nn);
                  for (int s = 0; s < n; ++s) {
                      for (std::uint32_t tag = 0; tag < 3; ++tag) {
                          EXPECT_EQ((got[{s, tag}]), 1u) << "from " << s << ", tag " << tag;
                      }
                  }
                  EXPECT_EQ(bad, 0u);
              }),
              0);
}

// direct_mapped_cache with one entry: every new value evicts the last, so only immediate
// repeats are dropped (exactly); with a few entries and many values, every distinct value
// arrives at least once, and arrivals plus hits equal sends.
TEST_P(typed_dedup, direct_mapped_never_drops_unseen) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            const int right = (me + 1) % n, left = (me + n - 1) % n;
            std::vector<std::uint64_t> arrivals;
            std::uint64_t bad = 0;
            am::message_type<cache_item> type(ctx, [&](int source, const cache_item& v) {
                if (source != left || v.from != left) ++bad;
                arrivals.push_back(v.value);
            });
            {
                auto one = am::dedup(type, am::direct_mapped_cache{.entries = 1});
                am::epoch e(ctx);
                for (std::uint64_t v : {1, 1, 2, 2, 1, 1, 1, 3, 2}) {
                    one.send(cache_item{v, me, 0}, right);
                }
                e.end();
                EXPECT_EQ(one.hits(), 4u);
                EXPECT_EQ(e.stats().dedup_hits, 4u);
                std::multiset<std::uint64_t> want{1, 2, 1, 3, 2};
                EXPECT_EQ(std::multiset<std::uint64_t>(arrivals.begin(), arrivals.end()), want);
            }
            arrivals.clear();
            auto few = am::dedup(type, am::direct_mapped_cache{.entries = 8});
            constexpr std::uint64_t distinct = 500;
            am::epoch e(ctx);
            for (int pass = 0; pass < 3; ++pass) {
                for (std::uint64_t i = 0; i < distinct; ++i) {
                    few.send(
                        cache_item{mix(i * 7 + static_cast<std::uint64_t>(pass % 2)) % distinct, me,
                                   0},
                        right);
                }
            }
            e.end();
            std::set<std::uint64_t> sent_values;
            for (int pass = 0; pass < 2; ++pass) {
                for (std::uint64_t i = 0; i < distinct; ++i) {
                    sent_values.insert(mix(i * 7 + static_cast<std::uint64_t>(pass)) % distinct);
                }
            }
            const std::set<std::uint64_t> arrived(arrivals.begin(), arrivals.end());
            EXPECT_EQ(arrived, sent_values);
            EXPECT_EQ(e.stats().messages_sent + few.hits(), 3 * distinct);
            EXPECT_EQ(arrivals.size(), e.stats().messages_handled);
            EXPECT_EQ(e.stats().dedup_hits, few.hits());
            EXPECT_EQ(bad, 0u);
        }),
        0);
}

// clear() forgets the values seen (both caches); the cache is kept across epochs until then.
TEST_P(typed_dedup, clear_forgets_and_cache_outlives_epochs) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const auto [n, me, right] = typed_test::ring_of(ctx);
                  std::uint64_t got = 0;
                  am::message_type<cache_item> type(ctx, [&](const cache_item&) { ++got; });
                  auto hashed = am::dedup(type, am::hash_cache{});
                  auto mapped = am::dedup(type, am::direct_mapped_cache{});
                  const auto epoch_sending = [&](std::uint64_t value, int times) {
                      got = 0;
                      am::epoch e(ctx);
                      for (int i = 0; i < times; ++i) {
                          hashed.send(cache_item{value, me, 0}, right);
                          mapped.send(cache_item{value, me, 1}, right);
                      }
                      e.end();
                      return e.stats();
                  };
                  am::epoch_stats s = epoch_sending(7, 3);
                  EXPECT_EQ(got, 2u);
                  EXPECT_EQ(s.dedup_hits, 4u);
                  s = epoch_sending(7, 2);  // seen in the last epoch: dropped
                  EXPECT_EQ(got, 0u);
                  EXPECT_EQ(s.dedup_hits, 4u);
                  EXPECT_EQ(s.messages_sent, 0u);
                  hashed.clear();
                  mapped.clear();
                  s = epoch_sending(7, 2);  // forgotten: sent once more
                  EXPECT_EQ(got, 2u);
                  EXPECT_EQ(s.dedup_hits, 2u);
                  EXPECT_EQ(hashed.hits(), 2u + 2u + 1u);
                  EXPECT_EQ(mapped.hits(), 2u + 2u + 1u);
              }),
              0);
}

// A full hash_cache is emptied and starts again: with room for 2, after a, b, c the value a
// passes again.
TEST_P(typed_dedup, full_hash_cache_starts_again) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int me = ctx.rank();
                  std::vector<std::uint64_t> arrivals;
                  am::message_type<cache_item> type(
                      ctx, [&](const cache_item& v) { arrivals.push_back(v.value); });
                  auto small = am::dedup(type, am::hash_cache{.max_entries = 2});
                  am::epoch e(ctx);
                  for (std::uint64_t v : {1, 1, 2, 3, 1}) small.send(cache_item{v, me, 0}, me);
                  e.end();
                  EXPECT_EQ(small.hits(), 1u);
                  EXPECT_EQ((std::multiset<std::uint64_t>(arrivals.begin(), arrivals.end())),
                            (std::multiset<std::uint64_t>{1, 2, 3, 1}));
              }),
              0);
}

// A hash cache is exact also when handlers send through the same layer while a send of the
// rank's code waits for room (tiny rings): every rank sends the values 0 .. N-1 to its right
// neighbour, and its handler forwards each value it receives to the right neighbour as well, so
// each (value, destination) is sent twice and must arrive once.
TEST_P(typed_dedup, hash_cache_exact_with_handlers_sending) {
    ASSERT_EQ(
        run(
            [](am::context& ctx) {
                const auto [n, me, right] = typed_test::ring_of(ctx);
                constexpr std::uint64_t N = 3000;
                std::vector<std::uint32_t> seen(N, 0);
                std::uint64_t bad = 0;
                am::dedup_layer<am::message_type<std::uint64_t>, am::hash_cache>* once = nullptr;
                am::message_type<std::uint64_t> type(ctx, [&](std::uint64_t v) {
                    if (v >= N) {
                        ++bad;
                        return;
                    }
                    ++seen[v];
                    once->send(v, right);
                });
                auto layer = am::dedup(type, am::hash_cache{});
                once = &layer;
                am::epoch e(ctx);
                for (std::uint64_t v = 0; v < N; ++v) layer.send(v, right);
                e.end();
                EXPECT_EQ(bad, 0u);
                EXPECT_EQ(static_cast<std::size_t>(std::count(seen.begin(), seen.end(), 1u)), N)
                    << "values arriving more (or less) than once";
                EXPECT_EQ(layer.hits(), N);
                EXPECT_EQ(e.stats().messages_sent, N);
            },
            [](am::config& cfg) { cfg.ring_bytes = 1024; }),
        0);
}

// Expected per-key sums of the pattern below at rank `me`, by (source, key).
using sums = std::map<std::pair<int, std::uint64_t>, std::uint64_t>;
constexpr std::uint64_t keys = 17, per_rank = 500;
std::uint64_t key_at(int from, std::uint64_t i) {
    return (i * 7 + static_cast<std::uint64_t>(from)) % keys;
}
std::uint64_t value_at(int from, std::uint64_t i) {
    return mix(static_cast<std::uint64_t>(from) * 100000 + i) % 1000;
}
int dest_of(std::uint64_t key, int n) {
    return static_cast<int>(key % static_cast<std::uint64_t>(n));
}
template <class Op>
sums expected_at(int me, int n, Op op) {
    sums s;
    for (int from = 0; from < n; ++from) {
        for (std::uint64_t i = 0; i < per_rank; ++i) {
            const std::uint64_t k = key_at(from, i);
            if (dest_of(k, n) != me) continue;
            auto [it, fresh] = s.try_emplace({from, k}, value_at(from, i));
            if (!fresh) it->second = op(it->second, value_at(from, i));
        }
    }
    return s;
}

// Each rank sends 500 <key, value> messages over 17 keys, each key to one rank, through a
// combiner; the receivers fold what arrives with the same operator and must get exactly the
// fold of everything sent. A hash cache with room for every key sends one message per key and
// destination (the folds
// are counted exactly); a small direct-mapped cache evicts, and still every value is folded in.
template <class Msg, class Sender, class Cache, class Op>
void reduce_pattern(am::context& ctx, Cache cache, Op op) {
    const int n = ctx.size(), me = ctx.rank();
    sums got;
    std::uint64_t arrived = 0;
    const auto key = [](const Msg& m) -> std::uint64_t {
        if constexpr (requires { m.key; }) {
            return m.key;
        } else {
            return m.first;
        }
    };
    const auto val = [](const Msg& m) -> std::uint64_t {
        if constexpr (requires { m.value; }) {
            return m.value;
        } else {
            return m.second;
        }
    };
    am::message_type<Msg> type(ctx, [&](int source, const Msg& m) {
        ++arrived;
        auto [it, fresh] = got.try_emplace({source, key(m)}, val(m));
        if (!fresh) it->second = op(it->second, val(m));
    });
    auto buf = am::coalesce(type, {.bytes = 5 * sizeof(Msg)});
    Sender* below = nullptr;
    if constexpr (std::is_same_v<Sender, am::coalesced<Msg>>) {
        below = &buf;
    } else {
        below = &type;
    }
    bool exact = false;
    if constexpr (std::is_same_v<Cache, am::hash_cache>) exact = cache.max_entries >= keys;
    auto combiner = am::reduce_by_key(*below, op, cache);
    for (int round = 0; round < 2; ++round) {
        got.clear();
        arrived = 0;
        const std::uint64_t combined_before = combiner.combined();
        am::epoch e(ctx);
        for (std::uint64_t i = 0; i < per_rank; ++i) {
            const std::uint64_t k = key_at(me, i);
            combiner.send(Msg{k, value_at(me, i)}, dest_of(k, n));
        }
        e.end();
        EXPECT_EQ(got, expected_at(me, n, op)) << "round " << round;
        const std::uint64_t folds = combiner.combined() - combined_before;
        EXPECT_EQ(e.stats().combined, folds);
        EXPECT_EQ(e.stats().messages_sent + folds, per_rank);
        if (exact) {  // a hash cache with room for every key: one message per key
            EXPECT_EQ(e.stats().messages_sent, keys);
            EXPECT_EQ(folds, per_rank - keys);
            std::uint64_t mine = 0;  // keys of this rank, from every rank
            for (std::uint64_t k = 0; k < keys; ++k) mine += dest_of(k, n) == me ? 1 : 0;
            EXPECT_EQ(arrived, mine * static_cast<std::uint64_t>(n));
        } else {
            EXPECT_GE(e.stats().messages_sent, keys);
        }
    }
}

// The rank function of reduce_pattern<Msg, Sender> with `cache` and `op`.
template <class Msg, class Sender, class Cache, class Op>
am_test::rank_fn reduce_job(Cache cache, Op op) {
    return [cache, op](am::context& ctx) { reduce_pattern<Msg, Sender>(ctx, cache, op); };
}

const auto plus = [](std::uint64_t a, std::uint64_t b) { return a + b; };
const auto maximum = [](std::uint64_t a, std::uint64_t b) { return a > b ? a : b; };

TEST_P(typed_reduce, struct_key_value_hash_cache_coalesced) {
    ASSERT_EQ(run(reduce_job<kv, am::coalesced<kv>>(am::hash_cache{}, plus)), 0);
}
TEST_P(typed_reduce, struct_key_value_direct_mapped_uncoalesced) {
    ASSERT_EQ(
        run(reduce_job<kv, am::message_type<kv>>(am::direct_mapped_cache{.entries = 4}, plus)), 0);
}
TEST_P(typed_reduce, first_second_hash_cache_uncoalesced) {
    ASSERT_EQ(run(reduce_job<pair_kv, am::message_type<pair_kv>>(am::hash_cache{}, plus)), 0);
}
TEST_P(typed_reduce, first_second_direct_mapped_coalesced_max) {
    ASSERT_EQ(run(reduce_job<pair_kv, am::coalesced<pair_kv>>(am::direct_mapped_cache{.entries = 8},
                                                              maximum)),
              0);
}
// A hash cache smaller than the keys: it is sent whenever full, sums stay exact.
TEST_P(typed_reduce, small_hash_cache) {
    ASSERT_EQ(run(reduce_job<kv, am::coalesced<kv>>(am::hash_cache{.max_entries = 3}, plus)), 0);
}

// Handlers feed a combiner (nested sends into a reducer): every item of the first type is
// forwarded as <key, 1> to the key's rank; the per-key counts are exact when the epoch ends,
// with the general detector and with depth 1.
TEST_P(typed_reduce, handlers_send_into_reducer) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  constexpr std::uint64_t per_dest = 30, nkeys = 11;
                  std::map<std::uint64_t, std::uint64_t> counts;
                  am::message_type<kv> totals(ctx, [&](const kv& m) { counts[m.key] += m.value; });
                  auto totals_buf = am::coalesce(totals, {.bytes = 3 * sizeof(kv)});
                  auto combiner = am::reduce_by_key(totals_buf, plus, am::hash_cache{});
                  am::message_type<cache_item> items(ctx, [&](const cache_item& v) {
                      const std::uint64_t k = v.value % nkeys;
                      combiner.send(kv{k, 1}, dest_of(k, n));
                  });
                  auto items_buf = am::coalesce(items, {.bytes = 4 * sizeof(cache_item)});
                  // Every rank sends values from * 31 + i, i < per_dest, to every rank.
                  std::map<std::uint64_t, std::uint64_t> want;
                  for (int from = 0; from < n; ++from) {
                      for (std::uint64_t i = 0; i < per_dest; ++i) {
                          const std::uint64_t k =
                              (static_cast<std::uint64_t>(from) * 31 + i) % nkeys;
                          if (dest_of(k, n) == me) want[k] += static_cast<std::uint64_t>(n);
                      }
                  }
                  for (int depth : {-1, 1}) {
                      counts.clear();
                      am::epoch e(ctx, {.depth = depth});
                      for (int d = 0; d < n; ++d) {
                          for (std::uint64_t i = 0; i < per_dest; ++i) {
                              items_buf.send(
                                  cache_item{static_cast<std::uint64_t>(me) * 31 + i, me, 0}, d);
                          }
                      }
                      e.end();
                      EXPECT_EQ(counts, want) << "depth " << depth;
                  }
              }),
              0);
}

// A combiner fed both by the rank's code and by handlers (same thread, same layer): a handler
// that runs while the layer sends an evicted message (the send makes progress) adds to the
// cache, and nothing it adds may be lost. Every rank sends <k, 1> for K distinct keys to its
// right neighbour; each handler forwards a key k < K as <k + 10^6, 1>. Each rank must
// receive both K low and K high keys, each once. A one-entry direct-mapped cache evicts on
// every send; the hash cache is the reference.
template <class Cache>
void combiner_fed_by_handlers(am::context& ctx, Cache cache) {
    const auto [n, me, right] = typed_test::ring_of(ctx);
    constexpr std::uint64_t K = 2000, high_base = 1000000;
    std::uint64_t low = 0, high = 0, bad = 0;
    am::reducer<am::message_type<kv>, std::remove_cv_t<decltype(plus)>, Cache>* red = nullptr;
    am::message_type<kv> type(ctx, [&](const kv& m) {
        if (m.value != 1) ++bad;
        if (m.key >= high_base && m.key < high_base + K) {
            ++high;
        } else if (m.key < K) {
            ++low;
            red->send(kv{m.key + high_base, 1}, right);
        } else {
            ++bad;
        }
    });
    auto layer = am::reduce_by_key(type, plus, cache);
    red = &layer;
    am::epoch e(ctx);
    for (std::uint64_t k = 0; k < K; ++k) layer.send(kv{k, 1}, right);
    e.end();
    EXPECT_EQ(low, K);
    EXPECT_EQ(high, K) << "messages added by handlers were lost";
    EXPECT_EQ(bad, 0u);
    EXPECT_EQ(e.stats().messages_sent, 2 * K);
}

TEST_P(typed_reduce, direct_mapped_fed_by_handlers) {
    ASSERT_EQ(run([](am::context& ctx) {
                  combiner_fed_by_handlers(ctx, am::direct_mapped_cache{.entries = 1});
              }),
              0);
}
TEST_P(typed_reduce, hash_cache_fed_by_handlers) {
    ASSERT_EQ(run([](am::context& ctx) {
                  combiner_fed_by_handlers(ctx, am::hash_cache{.max_entries = 4});
              }),
              0);
}

// flush() sends what the combiner holds at once (the sum of three folded values arrives before
// the epoch ends, as one message); nothing arrives before.
TEST_P(typed_reduce, flush_sends_held_values) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const auto [n, me, right] = typed_test::ring_of(ctx);
                  std::uint64_t sum = 0, messages = 0;
                  am::message_type<kv> type(ctx, [&](const kv& m) {
                      sum += m.value;
                      ++messages;
                  });
                  auto combiner = am::reduce_by_key(type, plus, am::hash_cache{});
                  am::epoch e(ctx);
                  for (std::uint64_t v : {5, 6, 7}) combiner.send(kv{1, v}, right);
                  ctx.barrier();
                  for (int i = 0; i < 10; ++i) (void)ctx.poll();
                  EXPECT_EQ(messages, 0u) << "a held value was sent before flush()";
                  ctx.barrier();
                  combiner.flush();
                  ctx.wait([&] { return messages == 1; });
                  EXPECT_EQ(sum, 18u);
                  combiner.flush();  // nothing held: sends nothing
                  e.end();
                  EXPECT_EQ(messages, 1u);
                  EXPECT_EQ(e.stats().messages_sent, 1u);
                  EXPECT_EQ(e.stats().combined, 2u);
                  EXPECT_EQ(combiner.combined(), 2u);
              }),
              0);
}

AM_INSTANTIATE(typed_dedup, typed_test::light_params());
AM_INSTANTIATE(typed_reduce, typed_test::light_params());

}  // namespace
