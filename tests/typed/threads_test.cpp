// SPDX-License-Identifier: MIT
// Several threads per rank: with config::thread_multiple, four std::threads of each rank send
// through one coalescing layer (and one message type) at once inside an epoch, and every message
// arrives exactly once; the randomized nested traffic of typed_support.hpp with its initial
// messages sent by four threads, and with a progress thread (handlers, which forward, then run
// on it); a progress thread forwarding through a coalescing layer while the rank's thread
// flushes it with full rings; and a process that runs two thread_multiple jobs in a row.
#include "typed/typed_support.hpp"

namespace {

using am_test::mix;
using am_test::spmd_param;
using am_test::spmd_test;

class typed_progress : public spmd_test {};
class typed_threads : public spmd_test {
  protected:
    [[nodiscard]] bool is_threads() const { return transport() == am::transport_kind::threads; }
    // The randomized nested traffic of `opt` on 4 KiB rings, with a progress thread or not,
    // thread_multiple or not, and fault injection with seed `faults` (0: none); 0 when every
    // rank passed.
    [[nodiscard]] int run_threaded_traffic(const typed_test::traffic_options& opt,
                                           bool progress_thread, bool thread_multiple,
                                           std::uint64_t faults) const {
        return run(typed_test::traffic_job(opt), [&](am::config& cfg) {
            if (progress_thread) cfg.progress_thread = true;  // else as configured
            if (thread_multiple) cfg.thread_multiple = true;
            if (faults != 0) cfg.faults = faults;
            cfg.ring_bytes = 4096;
        });
    }
};

struct threads_item {
    std::uint64_t value;
    std::int32_t from;
    std::uint16_t thread;
    std::uint16_t index;
};

std::uint64_t threads_value_of(int from, int thread, int to, int i) {
    return mix((static_cast<std::uint64_t>(from) << 48) ^
               (static_cast<std::uint64_t>(thread) << 32) ^ (static_cast<std::uint64_t>(to) << 16) ^
               static_cast<std::uint64_t>(i));
}

constexpr int sender_threads = 4, per_dest = 150;

// Every rank's four threads send per_dest items each to every rank through one coalescing
// layer (odd indices directly through the message type); each item arrives exactly once with
// its contents, and the counts are exact when the epoch ends. Two epochs.
void threads_send(am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    // seen[from][thread][index]; handlers may run on the sending threads: atomics.
    std::vector<std::atomic<std::uint32_t>> seen(static_cast<std::size_t>(n) * sender_threads *
                                                 per_dest);
    std::atomic<std::uint64_t> bad{0}, got{0};
    am::message_type<threads_item> type(ctx, [&](int source, std::span<const threads_item> batch) {
        for (const threads_item& v : batch) {
            if (v.from != source || v.thread >= sender_threads || v.index >= per_dest ||
                v.value != threads_value_of(source, v.thread, me, v.index)) {
                bad.fetch_add(1);
                continue;
            }
            seen[(static_cast<std::size_t>(source) * sender_threads + v.thread) * per_dest +
                 v.index]
                .fetch_add(1);
            got.fetch_add(1);
        }
    });
    auto buf = am::coalesce(type, {.bytes = 5 * sizeof(threads_item)});
    for (int round = 0; round < 2; ++round) {
        for (auto& s : seen) s = 0;
        got = 0;
        am::epoch e(ctx);
        std::vector<std::thread> threads;
        for (int t = 0; t < sender_threads; ++t) {
            threads.emplace_back([&, t] {
                for (int i = 0; i < per_dest; ++i) {
                    for (int d = 0; d < n; ++d) {
                        const threads_item v{threads_value_of(me, t, d, i), me,
                                             static_cast<std::uint16_t>(t),
                                             static_cast<std::uint16_t>(i)};
                        if (i % 2 == 0) {
                            buf.send(v, d);
                        } else {
                            type.send(v, d);
                        }
                    }
                    if (i == per_dest / 2) buf.flush();  // this thread's buffers only
                }
            });
        }
        for (std::thread& t : threads) t.join();
        e.end();
        const std::uint64_t total =
            static_cast<std::uint64_t>(n) * sender_threads * static_cast<std::uint64_t>(per_dest);
        EXPECT_EQ(got.load(), total) << "round " << round;
        EXPECT_EQ(e.stats().messages_sent, total) << "round " << round;
        EXPECT_EQ(e.stats().messages_handled, total) << "round " << round;
        std::size_t once = 0;
        for (auto& s : seen) once += s.load() == 1 ? 1 : 0;
        EXPECT_EQ(once, seen.size()) << "round " << round;
    }
    EXPECT_EQ(bad.load(), 0u);
}

TEST_P(typed_threads, thread_multiple_senders_exactly_once) {
    ASSERT_EQ(run(threads_send, [](am::config& cfg) { cfg.thread_multiple = true; }), 0);
}

// The randomized nested traffic, its initial messages sent by four threads per rank, with
// small rings and (threads transport) fault injection.
TEST_P(typed_threads, thread_multiple_nested_traffic) {
    ASSERT_EQ(run_threaded_traffic(
                  {.seed = 51, .max_messages = 200, .coalesce_bytes = 64, .sender_threads = 4},
                  false, true, 51),
              0);
}

// The randomized nested traffic with a progress thread: handlers run on it and forward from it
// while the rank's thread sends and ends epochs.
TEST_P(typed_threads, progress_thread_nested_traffic) {
    const typed_test::watchdog guard("progress_thread_nested_traffic", 45);
    ASSERT_EQ(run_threaded_traffic({.seed = 61, .max_messages = 200, .coalesce_bytes = 64}, true,
                                   false, 61),
              0);
}

// Both: a progress thread and four sending threads.
TEST_P(typed_threads, progress_thread_and_sender_threads) {
    const typed_test::watchdog guard("progress_thread_and_sender_threads", 45);
    ASSERT_EQ(run_threaded_traffic(
                  {.seed = 71, .max_messages = 150, .coalesce_bytes = 48, .sender_threads = 4},
                  true, true, 0),
              0);
}

// One process runs the same thread_multiple job twice: the rank's own thread (on the threads
// transport rank 0 runs on the calling thread, which outlives the first job) sends through a
// coalescing layer in both; the second job's messages all arrive.
TEST_P(typed_threads, second_job_in_same_process) {
    const auto job = [](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        std::uint64_t got = 0;
        am::message_type<threads_item> type(ctx, [&](const threads_item&) { ++got; });
        auto buf = am::coalesce(type, {.bytes = 4 * sizeof(threads_item)});
        am::epoch e(ctx);
        for (int d = 0; d < n; ++d) {
            for (int i = 0; i < 10; ++i) {
                buf.send(threads_item{1, me, 0, static_cast<std::uint16_t>(i)}, d);
            }
        }
        e.end();
        EXPECT_EQ(got, 10u * static_cast<std::uint64_t>(n));
        EXPECT_EQ(e.stats().messages_sent, 10u * static_cast<std::uint64_t>(n));
    };
    for (int attempt = 1; attempt <= 2; ++attempt) {
        ASSERT_EQ(run(job, [](am::config& cfg) { cfg.thread_multiple = true; }), 0)
            << "job " << attempt;
    }
}

// A progress thread runs handlers that forward through a coalescing layer (into the progress
// thread's own buffers) while the rank's thread ends the epoch, which flushes every thread's
// buffers; the rings are tiny, so sends wait for room. Every epoch ends with exact counts.
// (A hang here is turned into a failure by the watchdog: the rank's thread flushing the
// progress thread's buffers waits for ring room while that thread, blocked on the same
// buffers, cannot poll.)
TEST_P(typed_progress, forwards_while_rank_flushes) {
    // 50 s: a whole run takes up to ~5 s under TSan on a loaded machine; CTest allows 60.
    const typed_test::watchdog guard("forwards_while_rank_flushes", 50);
    ASSERT_EQ(run(
                  [](am::context& ctx) {
                      const auto [n, me, right] = typed_test::ring_of(ctx);
                      constexpr std::uint16_t ttl = 8;
                      constexpr int per_epoch = 1000;
                      std::atomic<std::uint64_t> got{0};
                      am::coalesced<threads_item>* forward = nullptr;
                      am::message_type<threads_item> type(ctx, [&](const threads_item& v) {
                          got.fetch_add(1);
                          if (v.index > 0) {
                              forward->send(threads_item{v.value, me, 0,
                                                         static_cast<std::uint16_t>(v.index - 1)},
                                            right);
                          }
                      });
                      auto buf = am::coalesce(type, {.bytes = 2 * sizeof(threads_item)});
                      forward = &buf;
                      for (int round = 0; round < 20; ++round) {
                          got = 0;
                          am::epoch e(ctx);
                          for (int i = 0; i < per_epoch; ++i)
                              buf.send(threads_item{1, me, 0, ttl}, right);
                          e.end();
                          ASSERT_EQ(got.load(), per_epoch * (ttl + 1u)) << "round " << round;
                      }
                  },
                  [](am::config& cfg) {
                      cfg.progress_thread = true;
                      cfg.ring_bytes = 1024;
                  }),
              0);
}

AM_INSTANTIATE(typed_threads, (std::vector<spmd_param>{{am::transport_kind::threads, 1},
                                                       {am::transport_kind::threads, 2},
                                                       {am::transport_kind::threads, 4},
                                                       {am::transport_kind::shm, 2}}));

AM_INSTANTIATE(typed_progress, (std::vector<spmd_param>{{am::transport_kind::threads, 2},
                                                        {am::transport_kind::threads, 4}}));

}  // namespace
