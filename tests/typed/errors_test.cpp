// SPDX-License-Identifier: MIT
// Over 500 lines on purpose: one file per layer's semantic suite keeps its fixtures and helpers
// in one place; each TEST is independent.
// Misuse of the typed layer: each throws am::error with the right code and a what() naming the
// call and the rank; the throwing call sends nothing (later epochs count nothing extra) and the
// layer stays usable. Sends outside an epoch, bad destinations through every sender, sends
// deeper than an epoch's declared depth (caught in the handler, and uncaught: the job fails),
// nested epochs, a second end(), depths out of range, coalescing buffers of bad sizes, spans
// over the batch limit, and message types, epochs and end() in handlers.
#include "typed/typed_support.hpp"

#include <climits>
#include <functional>
#include <string>

namespace {

using am_test::expect_error;
using am_test::spmd_param;
using am_test::spmd_test;

class typed_errors : public spmd_test {};
class typed_errors_job : public spmd_test {};

using errors_item = typed_test::item;
struct errors_kv {
    std::uint64_t key;
    std::uint64_t value;
};
const auto errors_plus = [](std::uint64_t a, std::uint64_t b) { return a + b; };

std::string rank_of(const am::context& ctx) {
    return "rank " + std::to_string(ctx.rank()) + ":";
}

// Outside an epoch (before the first one and after one ended) every send is refused with
// errc::bad_context and sends nothing: the next epoch handles nothing.
TEST_P(typed_errors, send_outside_epoch) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const auto [n, me, right] = typed_test::ring_of(ctx);
                  std::uint64_t got = 0, sums = 0;
                  am::message_type<errors_item> type(ctx, [&](const errors_item&) { ++got; });
                  am::message_type<errors_kv> kvs(ctx, [&](const errors_kv&) { ++sums; });
                  auto buf = am::coalesce(type, {.bytes = 4 * sizeof(errors_item)});
                  auto red = am::reduce_by_key(kvs, errors_plus, am::hash_cache{});
                  auto once = am::dedup(type, am::hash_cache{});
                  const errors_item v{1, me, 0};
                  const auto refused = [&](const char* when) {
                      SCOPED_TRACE(when);
                      const std::vector<std::string> parts = {"am::message_type::send",
                                                              rank_of(ctx), "no epoch is open"};
                      expect_error([&] { type.send(v, right); }, am::errc::bad_context, parts);
                      expect_error([&] { type.send(std::span<const errors_item>(&v, 1), right); },
                                   am::errc::bad_context, parts);
                      expect_error(
                          [&] {
                              red.send(errors_kv{1, 1}, right);
                          },
                          am::errc::bad_context,
                          {"am::reducer::send", rank_of(ctx), "no epoch is open"});
                  };
                  refused("before the first epoch");
                  {
                      am::epoch e(ctx);
                      for (int i = 0; i < 3; ++i) buf.send(v, right);
                      red.send(errors_kv{1, 1}, right);
                  }
                  EXPECT_EQ(got, 3u);
                  EXPECT_EQ(sums, 1u);
                  refused("after an epoch");
                  expect_error([&] { buf.send(v, right); }, am::errc::bad_context,
                               {"am::coalesced::send", rank_of(ctx), "no epoch is open"});
                  // A duplicate the cache would drop is refused too, and not counted.
                  {
                      am::epoch e(ctx);
                      once.send(v, right);
                      once.send(v, right);
                  }
                  EXPECT_EQ(once.hits(), 1u);
                  EXPECT_EQ(got, 4u);
                  expect_error([&] { once.send(v, right); }, am::errc::bad_context,
                               {"am::dedup::send", rank_of(ctx), "no epoch is open"});
                  EXPECT_EQ(once.hits(), 1u);
                  am::epoch e(ctx);
                  const std::uint64_t all = e.end(got + sums);
                  EXPECT_EQ(e.stats().messages_sent, 0u);
                  EXPECT_EQ(e.stats().messages_handled, 0u);
                  EXPECT_EQ(all, 5u * static_cast<std::uint64_t>(n));
              }),
              0);
}

// A coalescing layer that has never sent anything refuses a send outside an epoch too
// (errc::bad_context), and nothing reaches the next epoch. The epoch timeout turns a hang of
// the next epoch (a buffered message of no epoch) into a failure.
TEST_P(typed_errors, fresh_coalescer_outside_epoch) {
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      const int me = ctx.rank(), right = (me + 1) % ctx.size();
                      std::uint64_t got = 0;
                      am::message_type<errors_item> type(ctx, [&](const errors_item&) { ++got; });
                      auto buf = am::coalesce(type, {.bytes = 4 * sizeof(errors_item)});
                      expect_error(
                          [&] {
                              buf.send(errors_item{1, me, 0}, right);
                          },
                          am::errc::bad_context,
                          {"am::coalesced::send", rank_of(ctx), "no epoch is open"});
                      am::epoch e(ctx);
                      e.end();
                      EXPECT_EQ(e.stats().messages_sent, 0u);
                      EXPECT_EQ(got, 0u);
                  },
                  [](am::config& cfg) { cfg.epoch_timeout = 30; }),
              0);
}

// A bad destination is refused with errc::bad_rank by every sender, naming the rank and the
// range; nothing is sent, and messages sent before and after all arrive.
TEST_P(typed_errors, bad_rank_every_sender) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const auto [n, me, right] = typed_test::ring_of(ctx);
            std::uint64_t got = 0, sums = 0;
            am::message_type<errors_item> type(ctx, [&](const errors_item&) { ++got; });
            am::message_type<errors_kv> kvs(ctx, [&](const errors_kv&) { ++sums; });
            auto buf = am::coalesce(type, {.bytes = 4 * sizeof(errors_item)});
            auto kv_buf = am::coalesce(kvs, {.bytes = 4 * sizeof(errors_kv)});
            auto once_hash = am::dedup(type, am::hash_cache{});
            auto once_mapped = am::dedup(buf, am::direct_mapped_cache{});
            auto red_hash = am::reduce_by_key(kvs, errors_plus, am::hash_cache{});
            auto red_mapped = am::reduce_by_key(kv_buf, errors_plus, am::direct_mapped_cache{});
            const std::string range = "[0, " + std::to_string(n) + ")";
            am::epoch e(ctx);
            type.send(errors_item{0, me, 0}, right);
            std::uint64_t value = 1;
            for (int bad : {-1, n, n + 1, INT_MIN, INT_MAX}) {
                SCOPED_TRACE("destination " + std::to_string(bad));
                const std::string dest = "destination " + std::to_string(bad);
                const std::vector<std::string> direct = {"am::message_type::send", rank_of(ctx),
                                                         dest, range};
                const std::vector<std::string> coalesced = {"am::coalesced::send", rank_of(ctx),
                                                            dest, range};
                ++value;
                const errors_item v{value, me, 0};
                expect_error([&] { type.send(v, bad); }, am::errc::bad_rank, direct);
                expect_error([&] { type.send(std::span<const errors_item>(&v, 1), bad); },
                             am::errc::bad_rank, direct);
                expect_error([&] { buf.send(v, bad); }, am::errc::bad_rank, coalesced);
                // Layers over a sender report through it (its call is named).
                expect_error([&] { once_hash.send(v, bad); }, am::errc::bad_rank, direct);
                expect_error([&] { once_mapped.send(v, bad); }, am::errc::bad_rank, coalesced);
                expect_error(
                    [&] {
                        red_hash.send(errors_kv{value, 1}, bad);
                    },
                    am::errc::bad_rank, direct);
                expect_error(
                    [&] {
                        red_mapped.send(errors_kv{value, 1}, bad);
                    },
                    am::errc::bad_rank, coalesced);
            }
            buf.send(errors_item{1, me, 1}, right);
            once_hash.send(errors_item{2, me, 2}, right);
            once_mapped.send(errors_item{3, me, 3}, right);
            red_hash.send(errors_kv{1, 1}, right);
            red_mapped.send(errors_kv{2, 1}, right);
            e.end();
            EXPECT_EQ(got, 4u);
            EXPECT_EQ(sums, 2u);
            EXPECT_EQ(e.stats().messages_sent, 6u);
            EXPECT_EQ(e.stats().dedup_hits, 0u);
            EXPECT_EQ(e.stats().combined, 0u);
        }),
        0);
}

// A dedup layer must not remember a value whose send was refused: it was never sent. A second
// send to the same bad rank is refused again (errc::bad_rank, not a silent "duplicate"), and a
// value refused outside an epoch is delivered when sent inside one.
TEST_P(typed_errors, dedup_forgets_refused_sends) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank(), right = (me + 1) % n;
                  std::uint64_t got = 0;
                  am::message_type<errors_item> type(ctx, [&](const errors_item&) { ++got; });
                  auto hashed = am::dedup(type, am::hash_cache{});
                  auto mapped = am::dedup(type, am::direct_mapped_cache{});
                  const errors_item v{42, me, 0}, w{43, me, 0};
                  expect_error([&] { hashed.send(v, right); }, am::errc::bad_context,
                               {"am::message_type::send", rank_of(ctx), "no epoch is open"});
                  expect_error([&] { mapped.send(w, right); }, am::errc::bad_context,
                               {"am::message_type::send", rank_of(ctx), "no epoch is open"});
                  am::epoch e(ctx);
                  for (int attempt = 0; attempt < 2; ++attempt) {
                      SCOPED_TRACE("attempt " + std::to_string(attempt));
                      expect_error([&] { hashed.send(v, n); }, am::errc::bad_rank,
                                   {"am::message_type::send", rank_of(ctx)});
                      expect_error([&] { mapped.send(w, n); }, am::errc::bad_rank,
                                   {"am::message_type::send", rank_of(ctx)});
                  }
                  hashed.send(v, right);  // refused before: this is its first send
                  mapped.send(w, right);
                  e.end();
                  EXPECT_EQ(got, 2u);
                  EXPECT_EQ(hashed.hits(), 0u);
                  EXPECT_EQ(mapped.hits(), 0u);
                  EXPECT_EQ(e.stats().dedup_hits, 0u);
              }),
              0);
}

// A handler sending deeper than the epoch's declared depth gets errc::bad_context naming the
// call, the rank and the depths (caught in the handler here); the refused call sends nothing.
// Depth 0: handlers send nothing; depth 1: handlers of handlers send nothing. Copies a faulty
// layer lets through are marked (index >= 100), counted and not forwarded.
void depth_exceeded(am::context& ctx, bool coalesced) {
    const int n = ctx.size(), me = ctx.rank(), right = (me + 1) % n;
    const char* call = coalesced ? "am::coalesced::send" : "am::message_type::send";
    std::uint64_t got_a = 0, got_b = 0, refusals = 0, leaked = 0;
    int depth = 0;
    const auto refused = [&](auto&& send, unsigned level) {
        try {
            send();
            ADD_FAILURE() << call << " at level " << level << " in an epoch of depth " << depth
                          << " was accepted";
        } catch (const am::error& e) {
            ++refusals;
            const std::string what = e.what();
            EXPECT_EQ(e.code(), am::errc::bad_context) << what;
            for (const std::string& part :
                 {std::string(call), rank_of(ctx), "nested " + std::to_string(level) + " deep",
                  "exceeds the depth " + std::to_string(depth)}) {
                EXPECT_TRUE(am_test::contains(what, part)) << "\"" << part << "\" not in: " << what;
            }
        }
    };
    struct senders {
        am::message_type<errors_item>* type = nullptr;
        am::coalesced<errors_item>* buf = nullptr;
    } to_a, to_b;
    const auto send = [&](const senders& s, const errors_item& v) {
        if (coalesced) {
            s.buf->send(v, right);
        } else {
            s.type->send(v, right);
        }
    };
    const auto copy = [](errors_item v) {
        v.index += 100;
        return v;
    };
    am::message_type<errors_item> a(ctx, [&](const errors_item& v) {
        if (v.index >= 100) {
            ++leaked;
            return;
        }
        ++got_a;
        if (depth == 0) {
            refused([&] { send(to_a, copy(v)); }, 1);
        } else {
            send(to_b, v);  // level 1: allowed
        }
    });
    am::message_type<errors_item> b(ctx, [&](const errors_item& v) {
        if (v.index >= 100) {
            ++leaked;
            return;
        }
        ++got_b;
        refused([&] { send(to_a, copy(v)); }, 2);
    });
    auto a_buf = am::coalesce(a, {.bytes = 4 * sizeof(errors_item)});
    auto b_buf = am::coalesce(b, {.bytes = 4 * sizeof(errors_item)});
    to_a = {&a, &a_buf}, to_b = {&b, &b_buf};
    for (int d : {0, 1}) {
        depth = d;
        got_a = got_b = refusals = leaked = 0;
        am::epoch e(ctx, {.depth = d});
        for (std::uint32_t i = 0; i < 3; ++i) a.send(errors_item{i, me, i}, right);
        e.end();
        EXPECT_EQ(got_a, 3u) << "depth " << d;
        EXPECT_EQ(got_b, d == 0 ? 0u : 3u) << "depth " << d;
        EXPECT_EQ(refusals, 3u) << "depth " << d;
        EXPECT_EQ(leaked, 0u) << "depth " << d;
        EXPECT_EQ(e.stats().messages_sent, d == 0 ? 3u : 6u) << "depth " << d;
    }
}

TEST_P(typed_errors, depth_exceeded_coalesced) {
    ASSERT_EQ(run([](am::context& ctx) { depth_exceeded(ctx, true); }), 0);
}
TEST_P(typed_errors, depth_exceeded_message_type) {
    ASSERT_EQ(run([](am::context& ctx) { depth_exceeded(ctx, false); }), 0);
}

// A combiner fed by a handler deeper than the declared depth refuses the send there (like
// every other sender), rather than failing the rank's end() when it flushes.
TEST_P(typed_errors, depth_exceeded_into_reducer) {
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      const int n = ctx.size(), me = ctx.rank(), right = (me + 1) % n;
                      std::uint64_t got = 0, refusals = 0, sums = 0;
                      am::message_type<errors_kv> kvs(ctx, [&](const errors_kv&) { ++sums; });
                      auto red = am::reduce_by_key(kvs, errors_plus, am::hash_cache{});
                      am::message_type<errors_item> type(ctx, [&](const errors_item& v) {
                          ++got;
                          try {
                              red.send(errors_kv{v.value, 1}, right);
                          } catch (const am::error& e) {
                              ++refusals;
                              EXPECT_EQ(e.code(), am::errc::bad_context) << e.what();
                              EXPECT_TRUE(am_test::contains(e.what(), "depth")) << e.what();
                          }
                      });
                      am::epoch e(ctx, {.depth = 0});
                      type.send(errors_item{1, me, 0}, right);
                      ctx.wait([&] { return got == 1; });  // the handler ran before end()
                      try {
                          e.end();
                      } catch (const am::error& err) {
                          ADD_FAILURE() << "end() threw: " << err.what();
                      }
                      EXPECT_EQ(refusals, 1u);
                      EXPECT_EQ(sums, 0u);
                  },
                  [](am::config& cfg) { cfg.epoch_timeout = 45; }),
              0);
}

// Epochs do not nest; a second end() is refused; depths outside [-1, 6] are refused. After each
// refusal the layer works on (the refused epoch does not count).
TEST_P(typed_errors, epoch_misuse) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const std::uint64_t n = static_cast<std::uint64_t>(ctx.size());
                  for (int bad : {-2, 7, 100, INT_MIN, INT_MAX}) {
                      expect_error(
                          [&] { am::epoch e(ctx, {.depth = bad}); }, am::errc::invalid_argument,
                          {"am::epoch", rank_of(ctx), "depth " + std::to_string(bad), "[-1, 6]"});
                  }
                  {
                      am::epoch e(ctx, {.depth = 6});
                      expect_error(
                          [&] { am::epoch inner(ctx); }, am::errc::bad_context,
                          {"am::epoch", rank_of(ctx), "epoch 1 is still open", "do not nest"});
                      EXPECT_EQ(e.end(1), n);
                      EXPECT_EQ(e.stats().epoch, 1u);
                      expect_error([&] { (void)e.end(1); }, am::errc::bad_context,
                                   {"am::epoch::end", rank_of(ctx), "already ended"});
                  }
                  am::epoch e(ctx);
                  EXPECT_EQ(e.end(2), 2 * n);
                  EXPECT_EQ(e.stats().epoch, 2u);
              }),
              0);
}

// Coalescing buffers must hold one message and at most max_medium() bytes (errc::too_large;
// 0 asks for the default);
// a span over max_batch() is refused (errc::too_large) and sends nothing.
TEST_P(typed_errors, sizes) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int me = ctx.rank();
                  std::uint64_t got = 0;
                  am::message_type<errors_item> type(ctx, [&](const errors_item&) { ++got; });
                  const std::size_t max = ctx.max_medium();
                  const std::string limit = "max_medium() = " + std::to_string(max);
                  for (std::size_t bytes :
                       {std::size_t{1}, sizeof(errors_item) - 1, max + 1, std::size_t{SIZE_MAX}}) {
                      SCOPED_TRACE("bytes " + std::to_string(bytes));
                      expect_error([&] { (void)am::coalesce(type, {.bytes = bytes}); },
                                   am::errc::too_large,
                                   {"am::coalesce", rank_of(ctx), std::to_string(bytes), limit});
                  }
                  EXPECT_EQ(am::coalesce(type, {.bytes = sizeof(errors_item)}).capacity(), 1u);
                  // 0, the default: 16 KiB, or max_medium() when that is smaller.
                  EXPECT_EQ(am::coalesce(type).capacity(),
                            std::min(std::size_t{16} << 10, max) / sizeof(errors_item));
                  EXPECT_EQ(am::coalesce(type, {.bytes = 0}).capacity(),
                            std::min(std::size_t{16} << 10, max) / sizeof(errors_item));
                  EXPECT_EQ(am::coalesce(type, {.bytes = max}).capacity(),
                            max / sizeof(errors_item));
                  std::vector<errors_item> v(type.max_batch() + 1, errors_item{1, me, 0});
                  am::epoch e(ctx);
                  expect_error([&] { type.send(std::span<const errors_item>(v), me); },
                               am::errc::too_large,
                               {"am::message_type::send", rank_of(ctx),
                                std::to_string(v.size()) + " messages", limit});
                  e.end();
                  EXPECT_EQ(e.stats().messages_sent, 0u);
                  EXPECT_EQ(got, 0u);
              }),
              0);
}

// A message to the right neighbour whose handler calls `refused`, which must fail with
// errc::bad_context naming `call`, the rank and `what`; in each of `rounds` epochs the handler
// runs once and the epoch numbers count on: the job goes on.
void errors_refused_in_handler(am::context& ctx, int rounds, const std::function<void()>& refused,
                               const std::string& call, const std::string& what) {
    const int me = ctx.rank(), right = (me + 1) % ctx.size();
    std::uint64_t got = 0;
    am::message_type<errors_item> type(ctx, [&](const errors_item&) {
        ++got;
        expect_error(refused, am::errc::bad_context, {call, rank_of(ctx), what});
    });
    for (int round = 1; round <= rounds; ++round) {
        got = 0;
        am::epoch e(ctx);
        type.send(errors_item{1, me, 0}, right);
        e.end();
        EXPECT_EQ(got, 1u);
        EXPECT_EQ(e.stats().epoch, static_cast<std::uint64_t>(round));
    }
}

// A handler may not open an epoch (errc::bad_context); the job goes on.
TEST_P(typed_errors, epoch_in_handler) {
    ASSERT_EQ(run([](am::context& ctx) {
                  errors_refused_in_handler(
                      ctx, 2, [&] { am::epoch inner(ctx); }, "am::epoch", "opened in a handler");
              }),
              0);
}

// A handler may not create a message type (errc::bad_context); the refused type leaves nothing
// behind and the rank then creates and uses types.
TEST_P(typed_errors, message_type_in_handler) {
    ASSERT_EQ(run([](am::context& ctx) {
                  errors_refused_in_handler(
                      ctx, 1,
                      [&] { am::message_type<errors_kv> inner(ctx, [](const errors_kv&) {}); },
                      "am::message_type", "created in a handler");
                  const int right = (ctx.rank() + 1) % ctx.size();
                  std::uint64_t got2 = 0;
                  am::message_type<errors_kv> later(ctx, [&](const errors_kv&) { ++got2; });
                  am::epoch e2(ctx);
                  later.send(errors_kv{1, 1}, right);
                  e2.end();
                  EXPECT_EQ(got2, 1u);
              }),
              0);
}

// end() from a handler is refused (errc::bad_context) and leaves the epoch open: the rank's
// own end() then ends it normally, and later epochs work.
TEST_P(typed_errors, end_in_handler_leaves_epoch_open) {
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      const int me = ctx.rank(), right = (me + 1) % ctx.size();
                      const std::uint64_t n = static_cast<std::uint64_t>(ctx.size());
                      std::uint64_t got = 0;
                      am::epoch* open = nullptr;
                      am::message_type<errors_item> type(ctx, [&](const errors_item&) {
                          ++got;
                          expect_error([&] { (void)open->end(); }, am::errc::bad_context,
                                       {"am::epoch::end", rank_of(ctx), "from a handler"});
                      });
                      {
                          am::epoch e(ctx);
                          open = &e;
                          // Beginning an epoch may run a faster rank's batch at once: no rank
                          // sends before every rank's `open` is set.
                          ctx.barrier();
                          type.send(errors_item{1, me, 0}, right);
                          ctx.wait([&] { return got == 1; });
                          try {
                              EXPECT_EQ(e.end(1), n);
                          } catch (const am::error& err) {
                              ADD_FAILURE() << "the rank's end() threw: " << err.what();
                          }
                      }
                      try {
                          am::epoch e(ctx);
                          EXPECT_EQ(e.end(2), 2 * n);
                      } catch (const am::error& err) {
                          ADD_FAILURE() << "the next epoch threw: " << err.what();
                      }
                  },
                  [](am::config& cfg) { cfg.epoch_timeout = 45; }),
              0);
}

// Uncaught, a depth violation in a handler fails the job: am::run returns non-zero and the
// error, naming the call, the rank and the depth, is printed.
TEST_P(typed_errors_job, depth_exceeded_fails_job) {
    int rc = 0;
    const auto t0 = std::chrono::steady_clock::now();
    const std::string out = typed_test::capture_stderr([&] {
        rc = run([](am::context& ctx) {
            const int me = ctx.rank(), right = (me + 1) % ctx.size();
            am::coalesced<errors_item>* forward = nullptr;
            am::message_type<errors_item> type(ctx, [&](const errors_item& v) {
                if (v.value == 1) forward->send(errors_item{2, me, 0}, right);  // once, at level 1
            });
            auto buf = am::coalesce(type, {.bytes = 4 * sizeof(errors_item)});
            forward = &buf;
            am::epoch e(ctx, {.depth = 0});
            type.send(errors_item{1, me, 0}, right);
            e.end();
            ADD_FAILURE() << "rank " << me << ": the epoch ended";
        });
    });
    EXPECT_NE(rc, 0) << out;
    EXPECT_LT(typed_test::seconds_since(t0), 30.0) << "hang guard";
    EXPECT_TRUE(am_test::contains(out, "am::coalesced::send: rank ")) << out;
    EXPECT_TRUE(am_test::contains(out,
                                  "a message nested 1 deep exceeds the depth 0 declared "
                                  "for epoch 1 (epoch_options::depth)"))
        << out;
}

// Without thread_multiple a second thread of the rank may not send typed messages (nor open an
// epoch): refused before anything is counted, so the epoch still ends and handles only the
// rank's own message.
TEST_P(typed_errors, other_thread_is_refused) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank(), right = (me + 1) % n;
                  std::uint64_t got = 0;
                  am::message_type<errors_item> type(ctx, [&](const errors_item&) { ++got; });
                  const std::vector<std::string> parts = {rank_of(ctx), "AM_THREAD_MULTIPLE=1"};
                  const auto with = [&](const char* call) {
                      std::vector<std::string> p = parts;
                      p.emplace_back(call);
                      return p;
                  };
                  {
                      am::epoch e(ctx);
                      std::thread other([&] {
                          expect_error(
                              [&] {
                                  type.send(errors_item{1, me, 0}, right);
                              },
                              am::errc::bad_context, with("am::message_type::send"));
                      });
                      other.join();
                      type.send(errors_item{2, me, 0}, right);
                  }
                  std::thread other([&] {
                      expect_error([&] { am::epoch e(ctx); }, am::errc::bad_context,
                                   with("am::epoch"));
                  });
                  other.join();
                  EXPECT_EQ(got, 1u);
              }),
              0);
}

// Message types are created collectively: a rank that names one differently, or gives it a
// different handler, makes its creation fail on every rank with errc::handler_mismatch, naming
// rank 0 and that rank and what each created.
class typed_handshake : public spmd_test {};

TEST_P(typed_handshake, different_names) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int last = ctx.size() - 1;
                  const auto handler = [](const errors_item&) {};
                  am::message_type<errors_item> agreed(ctx, handler, "agreed");
                  const auto [first, other] = am_test::expect_mismatch_names(
                      [&] {
                          am::message_type<errors_item> type(
                              ctx, handler, ctx.rank() == last ? "visits" : "pings");
                      },
                      last);
                  EXPECT_TRUE(am_test::contains(first, "am::message_type \"pings\"")) << first;
                  EXPECT_TRUE(am_test::contains(other, "am::message_type \"visits\"")) << other;
              }),
              0);
}

// A value type whose name is long: the message types' names agree for hundreds of characters.
template <class T>
struct a_value_type_with_a_name_long_enough_that_three_of_them_make_a_long_name {
    T value;
};
using long_item = a_value_type_with_a_name_long_enough_that_three_of_them_make_a_long_name<
    a_value_type_with_a_name_long_enough_that_three_of_them_make_a_long_name<
        a_value_type_with_a_name_long_enough_that_three_of_them_make_a_long_name<errors_item>>>;

TEST_P(typed_handshake, different_handlers_print_their_difference) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int last = ctx.size() - 1;
                  const auto count = [](const long_item&) {};
                  const auto check = [](const long_item&) {};
                  am_test::expect_mismatch_names(
                      [&] {
                          if (ctx.rank() == last) {
                              am::message_type<long_item> type(ctx, check, "probe");
                          } else {
                              am::message_type<long_item> type(ctx, count, "probe");
                          }
                      },
                      last);
              }),
              0);
}

AM_INSTANTIATE(typed_errors, typed_test::light_params());
// At least two ranks; mpi at 2.
AM_INSTANTIATE(typed_handshake, ([] {
                   std::vector<spmd_param> v = typed_test::light_params();
                   std::erase_if(v, [](const spmd_param& p) { return p.ranks < 2; });
                   return v;
               }()));
// Jobs whose stderr the test reads: every rank in this process (not mpi).
AM_INSTANTIATE(typed_errors_job, (std::vector<spmd_param>{{am::transport_kind::threads, 2},
                                                          {am::transport_kind::threads, 4},
                                                          {am::transport_kind::shm, 2}}));

}  // namespace
