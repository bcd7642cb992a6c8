// SPDX-License-Identifier: MIT
// am::promise / am::future (include/am/future.hpp): set and get (values, void, move-only),
// exceptions, broken promises, the errors of a second get / set / get_future, waits from rank
// code for values set by other ranks' messages, `then` chains (including continuations that
// block on an RPC), when_all over a vector and over a pack, make_ready_future.
#include "oam/oam_support.hpp"

#include <atomic>
#include <memory>
#include <stdexcept>
#include <string>
#include <tuple>
#include <type_traits>
#include <variant>
#include <vector>

namespace {

using namespace am_oam_test;

class oam_future : public oam_test {};

std::uint64_t add_rank(am::context& ctx, std::uint64_t x) {
    return x + static_cast<std::uint64_t>(ctx.rank());
}

// Expects `f()` to throw exception type E whose what() contains `text`.
template <class E, class F>
void expect_throw(F&& f, const std::string& text) {
    try {
        f();
        ADD_FAILURE() << "nothing thrown";
    } catch (const E& e) {
        EXPECT_TRUE(am_test::contains(e.what(), text)) << e.what();
    } catch (const std::exception& e) {
        ADD_FAILURE() << "unexpected exception: " << e.what();
    }
}

TEST_P(oam_future, set_and_get) {
    run_ok([](am::context& ctx) {
        const int me = ctx.rank();
        am::promise<int> p(ctx);
        am::future<int> f = p.get_future();
        EXPECT_TRUE(f.valid());
        EXPECT_FALSE(f.ready());
        p.set_value(41 + me);
        EXPECT_TRUE(f.ready());
        f.wait();
        EXPECT_TRUE(f.valid()) << "wait() took the value";
        EXPECT_EQ(f.get(), 41 + me);
        EXPECT_FALSE(f.valid());

        am::promise<void> pv(ctx);
        am::future<void> fv = pv.get_future();
        EXPECT_FALSE(fv.ready());
        pv.set_value();
        fv.get();

        am::promise<std::unique_ptr<int>> pu(ctx);
        am::future<std::unique_ptr<int>> fu = pu.get_future();
        pu.set_value(std::make_unique<int>(me + 5));
        const std::unique_ptr<int> u = fu.get();
        ASSERT_NE(u, nullptr);
        EXPECT_EQ(*u, me + 5);

        am::promise<std::string> ps(ctx);
        am::future<std::string> fs = ps.get_future();
        ps.set_value(std::string(1000, 'x') + std::to_string(me));
        EXPECT_EQ(fs.get(), std::string(1000, 'x') + std::to_string(me));

        // A moved promise keeps its state; the moved-from one breaks nothing.
        am::promise<int> a(ctx);
        am::future<int> fa = a.get_future();
        am::promise<int> b = std::move(a);
        b.set_value(3);
        EXPECT_EQ(fa.get(), 3);
        // Assigning over a promise abandons its state.
        am::promise<int> c(ctx);
        am::future<int> fc = c.get_future();
        c = am::promise<int>(ctx);
        EXPECT_TRUE(fc.ready());
        expect_error([&] { (void)fc.get(); }, am::errc::broken_promise, {});
        c.set_value(1);  // the new state is usable
        EXPECT_EQ(c.get_future().get(), 1);
    });
}

TEST_P(oam_future, misuse) {
    run_ok([](am::context& ctx) {
        am::promise<int> p(ctx);
        am::future<int> f = p.get_future();
        expect_error([&] { (void)p.get_future(); }, am::errc::invalid_argument,
                     {"am::promise::get_future"});
        p.set_value(1);
        expect_error([&] { p.set_value(2); }, am::errc::invalid_argument,
                     {"am::promise::set_value"});
        expect_error([&] { p.set_exception(std::make_exception_ptr(std::runtime_error("x"))); },
                     am::errc::invalid_argument, {"am::promise::set_exception"});
        EXPECT_EQ(f.get(), 1) << "a refused set_value changed the value";
        expect_error([&] { (void)f.get(); }, am::errc::invalid_argument, {"am::future::get"});
        expect_error([&] { f.wait(); }, am::errc::invalid_argument, {"am::future::wait"});
        expect_error([&] { (void)f.ready(); }, am::errc::invalid_argument, {"am::future::ready"});
        expect_error([&] { (void)f.then([](int v) { return v; }); }, am::errc::invalid_argument,
                     {"am::future::then"});
        am::future<int> none;
        EXPECT_FALSE(none.valid());
        expect_error([&] { (void)none.get(); }, am::errc::invalid_argument, {"am::future::get"});
        std::vector<am::future<int>> with_invalid(1);
        expect_error([&] { (void)am::when_all(ctx, with_invalid); }, am::errc::invalid_argument,
                     {"am::when_all"});
    });
}

TEST_P(oam_future, exceptions_and_broken_promises) {
    run_ok([](am::context& ctx) {
        am::promise<int> p(ctx);
        am::future<int> f = p.get_future();
        p.set_exception(std::make_exception_ptr(std::out_of_range("nope 5")));
        EXPECT_TRUE(f.ready());
        expect_throw<std::out_of_range>([&] { (void)f.get(); }, "nope 5");
        EXPECT_FALSE(f.valid());

        am::future<std::string> g;
        {
            am::promise<std::string> q(ctx);
            g = q.get_future();
        }
        EXPECT_TRUE(g.ready());
        expect_error([&] { (void)g.get(); }, am::errc::broken_promise, {});

        am::future<void> v;
        {
            am::promise<void> q(ctx);
            v = q.get_future();
        }
        expect_error([&] { v.get(); }, am::errc::broken_promise, {});
    });
}

// Rank code waits (get, wait) for values set by handlers of messages from the left neighbour.
void waits_from_rank_code(am::context& ctx) {
    const int me = ctx.rank(), from = left_of(ctx);
    am::promise<int> p(ctx);
    am::future<int> f = p.get_future();
    am::promise<std::string> q(ctx);
    am::future<std::string> g = q.get_future();
    auto set_int = ctx.handler([&](am::token&, int v) { p.set_value(v); });
    auto set_text = am::optimistic_handler(
        ctx, [&](am::token&, int v) { q.set_value("from " + std::to_string(v)); });
    ctx.barrier();
    ctx.request(right_of(ctx), set_int, me * 10 + 1);
    ctx.request(right_of(ctx), set_text, me);
    EXPECT_EQ(f.get(), from * 10 + 1);
    g.wait();
    EXPECT_TRUE(g.ready());
    EXPECT_EQ(g.get(), "from " + std::to_string(from));
    // RPC results from several ranks, waited for one by one.
    register_rpcs<&add_rank>(ctx);
    const int n = ctx.size(), k_max = n < 8 ? n : 8;
    std::vector<am::future<std::uint64_t>> calls;
    for (int k = 0; k < k_max; ++k) {
        calls.push_back(am::rpc<&add_rank>(ctx, (me + k) % n, static_cast<std::uint64_t>(k)));
    }
    for (int k = k_max - 1; k >= 0; --k) {
        EXPECT_EQ(calls[static_cast<std::size_t>(k)].get(),
                  static_cast<std::uint64_t>(k + (me + k) % n));
    }
    ctx.quiesce();
}

AM_OAM_TEST_BOTH(oam_future, waits_from_rank_code, waits_from_rank_code)

void then_chains(am::context& ctx) {
    const int me = ctx.rank(), n = ctx.size();
    register_rpcs<&add_rank>(ctx);

    am::promise<int> p(ctx);
    am::future<std::string> f = p.get_future()
                                    .then([](int v) { return v * 2; })
                                    .then([](int v) { return std::to_string(v); })
                                    .then([](std::string s) { return s + "!"; });
    EXPECT_FALSE(f.ready());
    p.set_value(21 + me);
    EXPECT_EQ(f.get(), std::to_string(2 * (21 + me)) + "!");

    // On a ready future.
    auto g = am::make_ready_future(ctx, 5).then([](int v) { return v + 1; });
    EXPECT_EQ(g.get(), 6);

    // void on either side.
    std::atomic<int> steps{0};
    am::promise<void> pv(ctx);
    am::future<int> fv = pv.get_future().then([&] { ++steps; }).then([&] { return ++steps * 10; });
    pv.set_value();
    EXPECT_EQ(fv.get(), 20);
    EXPECT_EQ(steps.load(), 2);

    // An exception skips the later steps and reaches the end of the chain.
    std::atomic<int> skipped_ran{0};
    auto fe = am::make_ready_future(ctx, 1)
                  .then([](int) -> int { throw std::runtime_error("step failed"); })
                  .then([&](int v) {
                      ++skipped_ran;
                      return v;
                  });
    expect_throw<std::runtime_error>([&] { (void)fe.get(); }, "step failed");
    EXPECT_EQ(skipped_ran.load(), 0);
    // A broken promise's error goes down the chain too.
    am::future<int> fb;
    {
        am::promise<int> q(ctx);
        fb = q.get_future().then([](int v) { return v; });
    }
    expect_error([&] { (void)fb.get(); }, am::errc::broken_promise, {});

    // A continuation that blocks: it calls an RPC and waits for it (it runs as an optimistic
    // handler of this rank).
    const am::oam_stats before = am::optimistic_stats(ctx);
    const int r1 = right_of(ctx), r2 = (me + 2) % n;
    auto fr = am::rpc<&add_rank>(ctx, r1, std::uint64_t{5}).then([&ctx, r2](std::uint64_t v) {
        return am::rpc<&add_rank>(ctx, r2, v * 2).get();
    });
    EXPECT_EQ(fr.get(), static_cast<std::uint64_t>((5 + r1) * 2 + r2));
    const auto d = gained(before, am::optimistic_stats(ctx));
    EXPECT_GE(d.blocked, 1u) << "the continuation did not block on its RPC";
    ctx.quiesce();
}

AM_OAM_TEST_BOTH(oam_future, then_chains, then_chains)

TEST_P(oam_future, when_all_vector) {
    run_ok([](am::context& ctx) {
        const int me = ctx.rank(), n = ctx.size();
        std::vector<am::promise<int>> ps;
        for (int i = 0; i < 5; ++i) ps.emplace_back(ctx);
        std::vector<am::future<int>> fs;
        for (auto& p : ps) fs.push_back(p.get_future());
        am::future<std::vector<int>> all = am::when_all(ctx, fs);
        EXPECT_TRUE(fs.empty());
        EXPECT_FALSE(all.ready());
        for (int i = 4; i >= 1; --i) ps[static_cast<std::size_t>(i)].set_value(i * i + me);
        ctx.poll();
        EXPECT_FALSE(all.ready()) << "ready with one value missing";
        ps[0].set_value(me);
        EXPECT_EQ(all.get(), (std::vector<int>{me, 1 + me, 4 + me, 9 + me, 16 + me}));

        std::vector<am::future<int>> none;
        auto empty = am::when_all(ctx, none);
        EXPECT_TRUE(empty.get().empty());

        std::vector<am::promise<void>> vps;
        for (int i = 0; i < 3; ++i) vps.emplace_back(ctx);
        std::vector<am::future<void>> vfs;
        for (auto& p : vps) vfs.push_back(p.get_future());
        am::future<void> vall = am::when_all(ctx, vfs);
        for (auto& p : vps) p.set_value();
        vall.get();

        // The first exception in order, whatever order they came in.
        std::vector<am::promise<int>> eps;
        for (int i = 0; i < 3; ++i) eps.emplace_back(ctx);
        std::vector<am::future<int>> efs;
        for (auto& p : eps) efs.push_back(p.get_future());
        auto eall = am::when_all(ctx, efs);
        eps[2].set_exception(std::make_exception_ptr(std::runtime_error("third")));
        eps[1].set_exception(std::make_exception_ptr(std::runtime_error("second")));
        eps[0].set_value(0);
        expect_throw<std::runtime_error>([&] { (void)eall.get(); }, "second");

        // RPC results from up to 8 ranks.
        register_rpcs<&add_rank>(ctx);
        const int k_max = n < 8 ? n : 8;
        std::vector<am::future<std::uint64_t>> calls;
        for (int k = 0; k < k_max; ++k) {
            calls.push_back(am::rpc<&add_rank>(ctx, (me + k) % n, std::uint64_t{100}));
        }
        const std::vector<std::uint64_t> got = am::when_all(ctx, calls).get();
        ASSERT_EQ(got.size(), static_cast<std::size_t>(k_max));
        for (int k = 0; k < k_max; ++k) {
            EXPECT_EQ(got[static_cast<std::size_t>(k)],
                      static_cast<std::uint64_t>(100 + (me + k) % n));
        }
        ctx.quiesce();
    });
}

TEST_P(oam_future, when_all_variadic) {
    run_ok([](am::context& ctx) {
        const int me = ctx.rank();
        am::promise<int> a(ctx);
        am::promise<std::string> b(ctx);
        am::promise<void> c(ctx);
        am::future<int> fa = a.get_future();
        am::future<std::string> fb = b.get_future();
        am::future<void> fc = c.get_future();
        auto all = am::when_all(ctx, fa, fb, fc);
        static_assert(std::is_same_v<decltype(all),
                                     am::future<std::tuple<int, std::string, std::monostate>>>);
        EXPECT_FALSE(fa.valid());
        EXPECT_FALSE(fb.valid());
        EXPECT_FALSE(fc.valid());
        c.set_value();
        b.set_value("bee" + std::to_string(me));
        ctx.poll();
        EXPECT_FALSE(all.ready());
        a.set_value(me);
        const auto [x, y, z] = all.get();
        EXPECT_EQ(x, me);
        EXPECT_EQ(y, "bee" + std::to_string(me));
        (void)z;

        am::promise<int> e1(ctx);
        am::promise<double> e2(ctx);
        am::future<int> fe1 = e1.get_future();
        am::future<double> fe2 = e2.get_future();
        auto eall = am::when_all(ctx, fe1, fe2);
        e2.set_exception(std::make_exception_ptr(std::logic_error("second of two")));
        e1.set_value(1);
        expect_throw<std::logic_error>([&] { (void)eall.get(); }, "second of two");

        // RPCs to two ranks.
        register_rpcs<&add_rank>(ctx);
        const int r = right_of(ctx);
        am::future<std::uint64_t> r1 = am::rpc<&add_rank>(ctx, r, std::uint64_t{1});
        am::future<std::uint64_t> r2 = am::rpc<&add_rank>(ctx, me, std::uint64_t{2});
        const auto [v1, v2] = am::when_all(ctx, r1, r2).get();
        EXPECT_EQ(v1, static_cast<std::uint64_t>(1 + r));
        EXPECT_EQ(v2, static_cast<std::uint64_t>(2 + me));
        ctx.quiesce();
    });
}

TEST_P(oam_future, make_ready_future) {
    run_ok([](am::context& ctx) {
        auto f = am::make_ready_future(ctx, 3);
        static_assert(std::is_same_v<decltype(f), am::future<int>>);
        EXPECT_TRUE(f.ready());
        EXPECT_EQ(f.get(), 3);
        const std::string text = "ready " + std::to_string(ctx.rank());
        auto g = am::make_ready_future(ctx, text);
        static_assert(std::is_same_v<decltype(g), am::future<std::string>>);
        EXPECT_TRUE(g.ready());
        EXPECT_EQ(g.get(), text);
        expect_error([&] { (void)g.get(); }, am::errc::invalid_argument, {"am::future::get"});
    });
}

AM_INSTANTIATE(oam_future, am_test::all_params());

}  // namespace
