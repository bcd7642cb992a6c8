// SPDX-License-Identifier: MIT
// A single-threaded context (no thread_multiple, no progress thread) belongs to the rank's own
// thread: another thread's first send, poll, wait, barrier or registration throws
// errc::bad_context, naming the call and the rank and saying how to allow it, and sends
// nothing. Without the check such a thread raced the rank's own on unlocked rings: messages
// were lost ("dropped an invalid message") and the job hung. With thread_multiple the same
// calls work.
#include "support/expect.hpp"

#include <atomic>
#include <thread>

namespace {

using am_test::expect_error;
using am_test::spmd_test;

class thread_check : public spmd_test {};

std::vector<std::string> refusal(const char* call, int rank) {
    return {call, "rank " + std::to_string(rank) + ":", "thread other than the rank's own",
            "AM_THREAD_MULTIPLE=1", "config::thread_multiple"};
}

// Every rank's second thread tries each kind of call once, while the rank's own thread waits
// in join(); then the rank's own thread sends one short and one medium message to its right
// neighbour. Each rank handles exactly those two: the refused calls sent nothing.
TEST_P(thread_check, other_thread_is_refused) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank(), right = (me + 1) % n;
        std::atomic<int> got{0};
        auto ping = ctx.handler([&](am::token&) { got.fetch_add(1); });
        auto data = ctx.handler([&](am::token&, std::span<const std::byte>) { got.fetch_add(1); });
        ctx.barrier();
        const std::byte payload[16] = {};
        std::thread other([&] {
            expect_error([&] { ctx.request(right, ping); }, am::errc::bad_context,
                         refusal("am::context::request", me));
            expect_error([&] { ctx.request(right, data, am::bytes(payload)); },
                         am::errc::bad_context, refusal("am::context::request", me));
            expect_error([&] { (void)ctx.poll(); }, am::errc::bad_context,
                         refusal("am::context::poll", me));
            expect_error([&] { ctx.wait([] { return true; }); }, am::errc::bad_context,
                         refusal("am::context::wait", me));
            expect_error([&] { ctx.barrier(); }, am::errc::bad_context,
                         refusal("am::context::barrier", me));
            expect_error([&] { (void)ctx.handler([](am::token&, int) {}); }, am::errc::bad_context,
                         refusal("am::context::handler", me));
        });
        other.join();
        ctx.request(right, ping);
        ctx.request(right, data, am::bytes(payload));
        ctx.quiesce();
        EXPECT_EQ(got.load(), 2) << "rank " << me;
        EXPECT_EQ(ctx.stats().bad_headers, 0u) << "rank " << me;
    });
    ASSERT_EQ(rc, 0);
}

// With thread_multiple the second thread may send and poll: its messages arrive.
TEST_P(thread_check, thread_multiple_allows_other_thread) {
    const int rc = run(
        [](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank(), right = (me + 1) % n;
            std::atomic<int> got{0};
            auto ping = ctx.handler([&](am::token&) { got.fetch_add(1); });
            ctx.barrier();
            std::thread other([&] {
                ctx.request(right, ping);
                (void)ctx.poll();
            });
            other.join();
            ctx.request(right, ping);
            ctx.quiesce();
            EXPECT_EQ(got.load(), 2) << "rank " << me;
        },
        [](am::config& cfg) { cfg.thread_multiple = true; });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(thread_check, am_test::all_params());

}  // namespace
