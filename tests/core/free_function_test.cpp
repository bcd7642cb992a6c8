// SPDX-License-Identifier: MIT
// Handlers registered as functions, `ctx.handler<&fn>()` (the form DESIGN.md shows first):
// all three categories, their names in statistics and in the handshake's mismatch report.
// Its own binary, so that a compile error here does not hide the rest of the suite.
#include "support/expect.hpp"

namespace {

using am_test::spmd_test;

// Functions reach their rank's state through a thread_local set by the rank (ranks are threads
// or processes; no progress thread here, so handlers run on the rank's thread).
struct rank_state {
    am::counter* done = nullptr;
    std::uint64_t short_sum = 0, medium_bytes = 0, long_bytes = 0;
    std::span<std::byte> segment;
};
thread_local rank_state* t_state = nullptr;

void on_short(am::token& t, std::uint64_t v, std::uint32_t from) {
    EXPECT_EQ(from, static_cast<std::uint32_t>(t.source()));
    t_state->short_sum += v;
    t_state->done->add();
}

void on_medium(am::token& t, std::span<const std::byte> p, std::uint64_t seed) {
    EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(p.size(), seed))) << t.source();
    t_state->medium_bytes += p.size();
    t_state->done->add();
}

void on_long(am::token&, std::span<std::byte> p, std::uint64_t off, std::uint64_t seed) {
    EXPECT_EQ(p.data(), t_state->segment.data() + off);
    EXPECT_TRUE(std::ranges::equal(p, am_test::pattern(p.size(), seed)));
    t_state->long_bytes += p.size();
    t_state->done->add();
}

void on_ping(am::token& t) noexcept {
    t_state->done->add(), (void)t;
}

class free_function : public spmd_test {};

TEST_P(free_function, all_categories) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::counter done(ctx);
        rank_state state;
        state.done = &done;
        state.segment = ctx.segment();
        t_state = &state;
        auto s = ctx.handler<&on_short>();
        auto m = ctx.handler<&on_medium>();
        auto l = ctx.handler<&on_long>();
        auto p = ctx.handler<&on_ping>();
        ctx.barrier();
        for (int d = 0; d < n; ++d) {
            ctx.request(d, s, std::uint64_t{1} << me % 60, static_cast<std::uint32_t>(me));
            const auto buf = am_test::pattern(100, static_cast<std::uint64_t>(me));
            ctx.request(d, m, am::bytes(buf), static_cast<std::uint64_t>(me));
            const std::size_t off = static_cast<std::size_t>(me) * 100;
            ctx.request(d, l, am::bytes(buf), off, std::uint64_t{off},
                        static_cast<std::uint64_t>(me));
            ctx.request(d, p);
        }
        done.wait(4 * static_cast<std::uint64_t>(n));
        std::uint64_t want = 0;
        for (int src = 0; src < n; ++src) want += std::uint64_t{1} << src % 60;
        EXPECT_EQ(state.short_sum, want);
        EXPECT_EQ(state.medium_bytes, 100 * static_cast<std::uint64_t>(n));
        EXPECT_EQ(state.long_bytes, 100 * static_cast<std::uint64_t>(n));
        const am::stats st = ctx.stats();
        const std::size_t b = st.library_handlers;
        ASSERT_EQ(st.handlers.size(), b + 4u);
        // Named after the function, qualified by its namespace.
        EXPECT_EQ(st.handlers[b].name, "{anonymous}::on_short");
        EXPECT_EQ(st.handlers[b + 1].name, "{anonymous}::on_medium");
        EXPECT_EQ(st.handlers[b + 2].name, "{anonymous}::on_long");
        EXPECT_EQ(st.handlers[b + 3].name, "{anonymous}::on_ping");
        // The library's own function handlers are named the same way.
        ASSERT_GT(b, 0u);
        bool rma_flag = false;
        for (std::size_t i = 0; i < b; ++i)
            rma_flag = rma_flag || st.handlers[i].name == "am::rma::flag";
        EXPECT_TRUE(rma_flag) << "no library handler is named am::rma::flag";
        ctx.barrier();
        t_state = nullptr;
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(free_function, am_test::all_params());

class free_function_handshake : public spmd_test {};

TEST_P(free_function_handshake, mismatch_names_both_functions) {
    const int rc = run([](am::context& ctx) {
        am_test::expect_mismatch(ctx,
                                 [](am::context& c) {
                                     (void)c.handler<&on_ping>();
                                     if (c.rank() == c.size() - 1) {
                                         (void)c.handler<&on_long>();
                                         (void)c.handler<&on_short>();
                                     } else {
                                         (void)c.handler<&on_short>();
                                         (void)c.handler<&on_long>();
                                     }
                                 },
                                 "1", {"on_short", "on_long"});
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(free_function_handshake, am_test::multi_rank_params());

}  // namespace
