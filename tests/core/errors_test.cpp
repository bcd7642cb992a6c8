// SPDX-License-Identifier: MIT
// Bad input at the API boundary: each misuse throws am::error with the right code and a message
// naming the call, the rank and the limit; the throwing call sends nothing and messages
// accepted before it are all handled.
#include "support/expect.hpp"

#include <climits>

namespace {

using am_test::spmd_test;

class errors : public spmd_test {};

using am_test::expect_error;

std::string rank_of(const am::context& ctx) {
    return "rank " + std::to_string(ctx.rank()) + ":";
}

// Waits until this rank handled `handled` messages and `answered` replies; after the barrier
// (the job's traffic is over) both counts must be exact: nothing lost, nothing run twice.
void wait_exact(am::context& ctx, am::counter& got, std::uint64_t handled, am::counter& replies,
                std::uint64_t answered) {
    got.wait(handled);
    replies.wait(answered);
    ctx.barrier();
    EXPECT_EQ(got.value(), handled);
    EXPECT_EQ(replies.value(), answered);
}

TEST_P(errors, bad_rank) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::counter got(ctx);
        auto s = ctx.handler([&](am::token&, int) { got.add(); });
        auto m = ctx.handler([&](am::token&, std::span<const std::byte>) { got.add(); });
        auto l = ctx.handler([&](am::token&, std::span<std::byte>) { got.add(); });
        ctx.barrier();
        const int right = (me + 1) % n;
        const std::vector<std::byte> buf(8);
        for (int i = 0; i < 5; ++i) ctx.request(right, s, i);
        const std::string range = "[0, " + std::to_string(n) + ")";
        for (int bad : {-1, n, n + 1, INT_MIN, INT_MAX}) {
            const std::vector<std::string> parts = {"am::context::request", rank_of(ctx),
                                                    "destination " + std::to_string(bad), range};
            expect_error([&] { ctx.request(bad, s, 1); }, am::errc::bad_rank, parts);
            expect_error([&] { ctx.request(bad, m, am::bytes(buf)); }, am::errc::bad_rank, parts);
            expect_error([&] { ctx.request(bad, l, am::bytes(buf), 0); }, am::errc::bad_rank,
                         parts);
        }
        ctx.request(right, m, am::bytes(buf));
        ctx.request(right, l, am::bytes(buf), 0);
        got.wait(7);  // nothing accepted before the errors was lost
        ctx.barrier();
        EXPECT_EQ(got.value(), 7u);
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(errors, unregistered_handler) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::counter got(ctx), replies(ctx), misdirected(ctx);
        auto s = ctx.handler([&](am::token&, int) { got.add(); });
        auto m = ctx.handler([&](am::token&, std::span<const std::byte>) { misdirected.add(); });
        auto answer = ctx.handler([&](am::token&, int v) {
            EXPECT_EQ(v, 42);
            replies.add();
        });
        auto ask = ctx.handler([&, answer](am::token& t) {
            expect_error(
                [&] { t.reply(decltype(answer){}, 1); }, am::errc::bad_handler,
                {"am::token::reply", rank_of(ctx), "handler 4294967295", "not registered"});
            t.reply(answer, 42);  // the failed reply did not use up the token
        });
        ctx.barrier();
        const std::uint32_t count = ask.index + 1;  // table size: library's and program's handlers
        const int right = (me + 1) % n;
        for (int i = 0; i < 3; ++i) ctx.request(right, s, i);
        // The message counts the program's handlers and names the indices they occupy.
        const std::string table = " to " + std::to_string(ask.index) + ")";
        expect_error(
            [&] { ctx.request(right, decltype(s){}, 1); }, am::errc::bad_handler,
            {"am::context::request", rank_of(ctx), "handler 4294967295", "not registered", table});
        expect_error([&] { ctx.request(right, decltype(s){count}, 1); }, am::errc::bad_handler,
                     {"am::context::request", rank_of(ctx),
                      "handler " + std::to_string(count) + " ", table});
        expect_error([&] { ctx.request(right, decltype(s){count + 1000}, 1); },
                     am::errc::bad_handler, {"handler " + std::to_string(count + 1000), table});
        // A handle of the wrong category for the registered handler.
        expect_error(
            [&] { ctx.request(right, am::handler<am::category::short_am, int>{m.index}, 1); },
            am::errc::bad_handler,
            {"am::context::request", rank_of(ctx), "handler " + std::to_string(m.index), "medium"});
        for (int i = 0; i < 3; ++i) ctx.request(right, s, i);
        ctx.request(right, ask);
        wait_exact(ctx, got, 6, replies, 1);
        EXPECT_EQ(misdirected.value(), 0u);
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(errors, medium_too_large) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const std::size_t max = ctx.max_medium();
        am::counter got(ctx), replies(ctx);
        auto m = ctx.handler([&](am::token&, std::span<const std::byte> p) {
            EXPECT_LE(p.size(), max);
            got.add();
        });
        auto answer = ctx.handler([&](am::token&, std::span<const std::byte> p) {
            EXPECT_EQ(p.size(), max);
            replies.add();
        });
        auto ask = ctx.handler([&, answer](am::token& t) {
            const std::vector<std::byte> big(max + 1), ok(max);
            expect_error([&] { t.reply(answer, am::bytes(big)); }, am::errc::too_large,
                         {"am::token::reply", rank_of(ctx), std::to_string(max + 1),
                          "max_medium() = " + std::to_string(max)});
            t.reply(answer, am::bytes(ok));
        });
        ctx.barrier();
        const int right = (me + 1) % n;
        const std::vector<std::byte> ok(max), over(max + 1), huge(std::size_t{1} << 20);
        ctx.request(right, m, am::bytes(ok));
        for (const auto* bad : {&over, &huge}) {
            expect_error([&] { ctx.request(right, m, am::bytes(*bad)); }, am::errc::too_large,
                         {"am::context::request", rank_of(ctx), std::to_string(bad->size()),
                          "max_medium() = " + std::to_string(max)});
        }
        ctx.request(right, m, am::bytes(ok));
        ctx.request(right, ask);
        wait_exact(ctx, got, 2, replies, 1);
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(errors, long_outside_segment) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const std::span<std::byte> seg = ctx.segment();
        const std::size_t size = seg.size();
        constexpr std::size_t tail = 64;
        am_test::fill_pattern(seg.last(tail), 1234);  // must survive the rejected sends
        am::counter got(ctx), replies(ctx);
        auto l = ctx.handler([&](am::token&, std::span<std::byte> p) {
            EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(p.size(), 5)));
            got.add();
        });
        auto back = ctx.handler([&](am::token&, std::span<std::byte> p) {
            EXPECT_EQ(p.size(), 16u);
            replies.add();
        });
        auto ask = ctx.handler([&, back](am::token& t) {
            const auto buf = am_test::pattern(16, 5);
            expect_error([&] { t.reply(back, am::bytes(buf), size - 8); }, am::errc::out_of_segment,
                         {"am::token::reply", rank_of(ctx), std::to_string(size),
                          "rank " + std::to_string(t.source()) + "'s segment"});
            t.reply(back, am::bytes(buf), 64);
        });
        ctx.barrier();
        const int right = (me + 1) % n;
        const auto one = am_test::pattern(1, 5), eleven = am_test::pattern(11, 5);
        ctx.request(right, l, am::bytes(eleven), 0);
        struct bad_case {
            std::span<const std::byte> p;
            std::size_t offset;
        };
        const bad_case cases[] = {
            {{}, size + 1},                  // offset past the end
            {am::bytes(one), size},          // one byte past the end
            {am::bytes(eleven), size - 10},  // offset + length one past the end
            {am::bytes(eleven), SIZE_MAX},   // offset that would wrap around
        };
        for (const bad_case& c : cases) {
            expect_error([&] { ctx.request(right, l, c.p, c.offset); }, am::errc::out_of_segment,
                         {"am::context::request", rank_of(ctx), std::to_string(c.offset),
                          "rank " + std::to_string(right) + "'s segment of " +
                              std::to_string(size) + " bytes"});
        }
        ctx.request(right, l, am::bytes(eleven), size - 11);  // exactly at the end is fine
        ctx.request(right, ask);
        wait_exact(ctx, got, 2, replies, 1);
        const auto want = am_test::pattern(tail, 1234);  // but for the last 11 bytes, written
        EXPECT_TRUE(std::equal(want.begin(), want.end() - 11, seg.end() - tail))
            << "a rejected long send wrote into the segment";
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(errors, second_reply) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::counter replies(ctx), fence(ctx);
        int second_errors = 0;
        auto answer = ctx.handler([&](am::token&, int v) {
            EXPECT_EQ(v, 1) << "a second reply got through";
            replies.add();
        });
        auto fence_answer = ctx.handler([&](am::token&) { fence.add(); });
        auto ask = ctx.handler([&, answer](am::token& t) {
            t.reply(answer, 1);
            expect_error([&] { t.reply(answer, 2); }, am::errc::bad_reply,
                         {"am::token::reply", rank_of(ctx), "second reply",
                          "rank " + std::to_string(t.source()), "at most one"});
            ++second_errors;
        });
        auto fence_ask = ctx.handler([fence_answer](am::token& t) { t.reply(fence_answer); });
        ctx.barrier();
        const int right = (me + 1) % n;
        for (int i = 0; i < 3; ++i) ctx.request(right, ask);
        replies.wait(3);
        // Replies from `right` arrive in order: once the fence's reply is in, a stray second
        // reply would have been handled.
        ctx.request(right, fence_ask);
        fence.wait(1);
        EXPECT_EQ(replies.value(), 3u);
        ctx.barrier();
        EXPECT_EQ(second_errors, 3);
    });
    ASSERT_EQ(rc, 0);
}

// The fence of the reply-handler tests. Requests from one rank arrive in order: once the right
// neighbour has answered the fence request (sent after the first reply came back), anything
// the reply handler sent it has been handled; the fence's handler and, after the barrier, the
// test expect `never` (what must not have happened) still 0.
struct reply_fence {
    reply_fence(am::context& ctx, am::counter& never)
        : _never(never),
          _fence(ctx),
          _answer(ctx.handler([this](am::token&) { _fence.add(); })),
          _ask(ctx.handler([this](am::token& t) {
              EXPECT_EQ(_never.value(), 0u);
              t.reply(_answer);
          })) {}
    reply_fence(const reply_fence&) = delete;
    reply_fence& operator=(const reply_fence&) = delete;

    // Requests `first` at the right neighbour, waits for its reply (counted in `replies`), then
    // for the fence's, and ends with a barrier.
    void pass(am::context& ctx, am::handler<am::category::short_am> first, am::counter& replies) {
        const int right = (ctx.rank() + 1) % ctx.size();
        ctx.request(right, first);
        replies.wait(1);
        ctx.request(right, _ask);
        _fence.wait(1);
        ctx.barrier();
        EXPECT_EQ(_never.value(), 0u);
    }

  private:
    am::counter& _never;
    am::counter _fence;
    am::handler<am::category::short_am> _answer, _ask;
};

TEST_P(errors, reply_from_reply_handler) {
    const int rc = run([](am::context& ctx) {
        am::counter replies(ctx), bounced(ctx);
        am::handler<am::category::short_am> self{};
        auto answer = ctx.handler([&](am::token& t) {
            if (!t.is_request()) {
                expect_error([&] { t.reply(self); }, am::errc::bad_reply,
                             {"am::token::reply", rank_of(ctx), "reply handler"});
                replies.add();
            } else {
                bounced.add();  // would be reached by a reply that got through
            }
        });
        self = answer;
        auto ask = ctx.handler([answer](am::token& t) { t.reply(answer); });
        reply_fence fence(ctx, bounced);
        ctx.barrier();
        fence.pass(ctx, ask, replies);
        EXPECT_EQ(replies.value(), 1u);
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(errors, request_from_reply_handler) {
    const int rc = run([](am::context& ctx) {
        am::counter replies(ctx), forbidden(ctx);
        auto target = ctx.handler([&](am::token&, int) { forbidden.add(); });
        auto answer = ctx.handler([&, target](am::token& t) {
            const int right = (ctx.rank() + 1) % ctx.size();
            expect_error([&] { t.ctx().request(right, target, 1); }, am::errc::bad_context,
                         {"am::context::request", rank_of(ctx), "reply handler"});
            replies.add();
        });
        auto ask = ctx.handler([answer](am::token& t) { t.reply(answer); });
        reply_fence fence(ctx, forbidden);
        ctx.barrier();
        fence.pass(ctx, ask, replies);
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(errors, blocking_calls_in_handler) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::counter got(ctx), other(ctx);
        auto h = ctx.handler([&](am::token& t) {
            expect_error([&] { ctx.wait([] { return true; }); }, am::errc::bad_context,
                         {"am::context::wait", rank_of(ctx), "handler"});
            expect_error([&] { other.wait(0); }, am::errc::bad_context,
                         {"wait", rank_of(ctx), "handler"});
            expect_error([&] { t.ctx().barrier(); }, am::errc::bad_context,
                         {"am::context::barrier", rank_of(ctx), "handler"});
            expect_error([&] { t.ctx().quiesce(); }, am::errc::bad_context,
                         {"am::context::quiesce", rank_of(ctx), "handler"});
            EXPECT_EQ(ctx.poll(), 0u) << "handlers do not nest";
            got.add();
        });
        ctx.barrier();
        for (int i = 0; i < 4; ++i) ctx.request((me + i) % n, h);
        got.wait(4);
        ctx.barrier();
        EXPECT_EQ(got.value(), 4u);
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(errors, too_many_handlers) {
    const int rc = run([](am::context& ctx) {
        am::counter got(ctx);
        auto first = ctx.handler([&](am::token&) { got.add(); });
        std::uint32_t last = first.index;
        int registered = 1;
        bool threw = false;
        for (int i = 0; i < 5000 && !threw; ++i) {
            try {
                last = ctx.handler([&](am::token&) { got.add(); }).index;
                ++registered;
            } catch (const am::error& e) {
                threw = true;
                EXPECT_EQ(e.code(), am::errc::too_large) << e.what();
                EXPECT_TRUE(am_test::contains(e.what(), "am::context::handler")) << e.what();
                EXPECT_TRUE(am_test::contains(e.what(), rank_of(ctx))) << e.what();
                EXPECT_TRUE(am_test::contains(e.what(), "more than 1024 handlers")) << e.what();
            }
        }
        EXPECT_TRUE(threw) << "5000 handlers registered without complaint";
        // The documented limit is the program's own: the library's handlers do not count.
        EXPECT_EQ(registered, 1024);
        EXPECT_EQ(last - first.index, 1023u);
        ctx.barrier();  // the tables (as far as they go) match
        const am::handler<am::category::short_am> h_last{last};
        ctx.request((ctx.rank() + 1) % ctx.size(), first);
        ctx.request((ctx.rank() + 1) % ctx.size(), h_last);
        got.wait(2);
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(errors, am_test::all_params());

}  // namespace
