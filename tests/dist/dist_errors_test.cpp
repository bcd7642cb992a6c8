// SPDX-License-Identifier: MIT
// Misuse of am::async and am::dist. Refused at the call, before anything is sent (the job goes
// on, and later calls still arrive): a destination rank outside the job or team
// (errc::bad_rank), arguments above the payload limit (errc::too_large, config::max_payload
// set small), an array index outside the array (errc::bad_rank), a container created or a
// dist::barrier called from a handler (errc::bad_context). And failures of the job, read from the
// test process (threads and shm only): a visitor or async callable that throws fails the job,
// naming the key or index, the rank and the visitor.
#include "support/expect.hpp"
#include "support/spmd.hpp"

#include <am/dist.hpp>

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace {

using am_test::expect_error;
using am_test::spmd_test;

class dist_errors : public spmd_test {};

constexpr int dist_err_max_ranks = 8;
std::atomic<std::uint64_t> dist_err_calls[dist_err_max_ranks];

struct dist_err_count {
    void operator()(am::context& ctx, std::uint64_t x) const { dist_err_calls[ctx.rank()] += x; }
};

TEST_P(dist_errors, bad_rank_refused_before_sending) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            ASSERT_LE(ctx.size(), dist_err_max_ranks);
            const int n = ctx.size(), me = ctx.rank();
            const am::team w = am::coll::world(ctx);
            dist_err_calls[me] = 0;
            am::coll::barrier(w);
            for (const int bad : {-1, n, n + 3}) {
                SCOPED_TRACE("rank " + std::to_string(bad));
                expect_error([&] { am::async(ctx, bad, dist_err_count{}, std::uint64_t{100}); },
                             am::errc::bad_rank,
                             {"am::async", "rank " + std::to_string(me),
                              "destination rank " + std::to_string(bad)});
                expect_error([&] { am::dist::async(w, bad, dist_err_count{}, std::uint64_t{100}); },
                             am::errc::bad_rank, {});
            }
            // Nothing was sent: only the good calls count.
            am::async(ctx, (me + 1) % n, dist_err_count{}, std::uint64_t{1});
            ctx.quiesce();
            EXPECT_EQ(dist_err_calls[me].load(), 1u);
            am::dist::map<std::uint64_t, std::uint64_t> m(w);
            m.insert(1, 1);
            EXPECT_EQ(m.size(), 1u);
        }),
        0);
}

TEST_P(dist_errors, too_large_refused_and_nothing_lost) {
    ASSERT_EQ(
        run(
            [](am::context& ctx) {
                ASSERT_LE(ctx.size(), dist_err_max_ranks);
                const int n = ctx.size(), me = ctx.rank();
                const am::team w = am::coll::world(ctx);
                dist_err_calls[me] = 0;
                am::coll::barrier(w);
                const std::vector<std::uint64_t> big(1000);  // 8000 bytes > 4096
                const int to = (me + 1) % n;
                am::async(ctx, to, dist_err_count{}, std::uint64_t{1});  // before: kept
                expect_error(
                    [&] {
                        am::async(
                            ctx, to,
                            [](am::context& c, std::vector<std::uint64_t> v) {
                                dist_err_calls[c.rank()] += 1000000 + v.size();
                            },
                            big);
                    },
                    am::errc::too_large,
                    {"am::async", "rank " + std::to_string(me), "AM_MAX_PAYLOAD", "4096 bytes",
                     "nothing was sent"});
                am::async(ctx, to, dist_err_count{}, std::uint64_t{10});  // after: arrives
                // A large call that fits (but exceeds a message when max_medium < 4 KiB).
                am::async(ctx, to, dist_err_count{}, std::uint64_t{100});
                ctx.quiesce();
                EXPECT_EQ(dist_err_calls[me].load(), 111u);
                // The containers: a too-large value is refused, the rest of the map stays.
                am::dist::map<std::uint64_t, std::string> m(w);
                m.insert_or_assign(static_cast<std::uint64_t>(me), "small");
                expect_error(
                    [&] {
                        m.insert_or_assign(static_cast<std::uint64_t>(me) + 100,
                                           std::string(5000, 'x'));
                    },
                    am::errc::too_large, {"am::dist::map::insert_or_assign", "AM_MAX_PAYLOAD"});
                m.insert_or_assign(static_cast<std::uint64_t>(me) + 200, std::string(3000, 'y'));
                EXPECT_EQ(m.size(), static_cast<std::size_t>(2 * n));
                const auto all = m.gather(0);
                for (const auto& [k, v] : all) {
                    EXPECT_TRUE(k < 100 ? v == "small" : v == std::string(3000, 'y'))
                        << "key " << k;
                    EXPECT_LT(k, 300u);
                    EXPECT_FALSE(k >= 100 && k < 200) << "a refused value arrived";
                }
            },
            [](am::config& cfg) { cfg.max_payload = 4096; }),
        0);
}

TEST_P(dist_errors, array_index_out_of_range) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int me = ctx.rank();
                  am::dist::array<std::uint64_t> a(ctx, 10);
                  for (const std::uint64_t bad :
                       {std::uint64_t{10}, std::uint64_t{11}, ~std::uint64_t{0}}) {
                      const std::vector<std::string> parts = {"rank " + std::to_string(me),
                                                              "index " + std::to_string(bad),
                                                              "outside the array of 10 elements"};
                      auto p = parts;
                      p.emplace_back("am::dist::array::set");
                      expect_error([&] { a.set(bad, 1); }, am::errc::bad_rank, p);
                      p.back() = "am::dist::array::async_visit";
                      expect_error(
                          [&] { a.async_visit(bad, [](std::uint64_t, std::uint64_t& v) { ++v; }); },
                          am::errc::bad_rank, p);
                  }
                  a.async_visit(9, [](std::uint64_t, std::uint64_t& v) { ++v; });
                  const auto all = a.gather(0);
                  if (me == 0) {
                      std::vector<std::uint64_t> want(10);
                      want[9] = static_cast<std::uint64_t>(ctx.size());
                      EXPECT_EQ(all, want);
                  }
              }),
              0);
}

// In a handler: creating a container and a dist::barrier are refused (errc::bad_context); the
// code the refusal carried is kept in the dist_object's value.
struct dist_err_in_handler {
    void operator()(am::dist::dist_object<std::vector<int>>& o, std::vector<int>& v) const {
        const auto code_of = [](auto&& f) {
            try {
                f();
            } catch (const am::error& e) {
                return static_cast<int>(e.code());
            } catch (...) {
                return -2;
            }
            return -1;
        };
        v.push_back(code_of([&] { am::dist::set<int> s(o.team()); }));
        v.push_back(code_of([&] { am::dist::map<int, int> m(o.team().ctx()); }));
        v.push_back(code_of([&] { am::dist::barrier(o.team()); }));
    }
};

TEST_P(dist_errors, containers_and_barrier_refused_in_handlers) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  const am::team w = am::coll::world(ctx);
                  am::dist::dist_object<std::vector<int>> o(w);
                  o.async((me + 1) % n, dist_err_in_handler{});
                  o.barrier();
                  const int bc = static_cast<int>(am::errc::bad_context);
                  EXPECT_EQ(o.local(), (std::vector<int>{bc, bc, bc}));
                  // The object numbering stayed in step: a new container works everywhere.
                  am::dist::set<int> s(w);
                  s.insert(me);
                  EXPECT_EQ(s.size(), static_cast<std::size_t>(n));
              }),
              0);
}

AM_INSTANTIATE(dist_errors, am_test::make_params({1, 2, 3, 5}, {2, 3}));

// ------------------------------------------------------------------------ failing jobs

/// What each rank threw.
struct dist_err_board {
    static constexpr int max_ranks = dist_err_max_ranks;
    std::atomic<int> code[max_ranks] = {};  // 0: nothing recorded, -1: returned
    am_test::fixed_string<2048> what[max_ranks];
};

class dist_failing : public spmd_test {
  protected:
    /// Runs `fn` on every rank (then blocks until the job fails): at least one rank throws
    /// `code` naming every one of `parts` ("@me": that rank), every other one errc::aborted.
    void failed_job(const std::function<void(am::context&)>& fn, am::errc code,
                    const std::vector<std::string>& parts) const {
        am_test::shared<dist_err_board> b;
        const auto t0 = std::chrono::steady_clock::now();
        ::testing::internal::CaptureStderr();
        const int rc = run([&](am::context& ctx) {
            try {
                fn(ctx);
                am::counter never(ctx);
                never.wait(1);
                b->code[ctx.rank()] = -1;
            } catch (const am::error& e) {
                b->code[ctx.rank()] = static_cast<int>(e.code());
                b->what[ctx.rank()].set(e.what());
                throw;
            }
        });
        const std::string err = ::testing::internal::GetCapturedStderr();
        EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(),
                  30.0)
            << "hang guard";
        EXPECT_NE(rc, 0) << "the job did not fail";
        int raised = 0;
        std::string dump;
        for (int r = 0; r < ranks(); ++r) {
            dump += "\n  rank " + std::to_string(r) + ": " + std::to_string(b->code[r].load()) +
                    ": " + b->what[r].str();
        }
        for (int r = 0; r < ranks(); ++r) {
            const int c = b->code[r].load();
            if (c == static_cast<int>(code)) {
                ++raised;
                for (std::string p : parts) {
                    if (const auto at = p.find("@me"); at != std::string::npos) {
                        p.replace(at, 3, std::to_string(r));
                    }
                    EXPECT_TRUE(am_test::contains(b->what[r].str(), p))
                        << "\"" << p << "\" not in rank " << r << "'s error" << dump;
                }
            } else {
                EXPECT_EQ(c, static_cast<int>(am::errc::aborted)) << "rank " << r << dump;
            }
        }
        EXPECT_EQ(raised, 1) << "one rank ran the failing call" << dump;
        EXPECT_FALSE(err.empty()) << "the failure was not reported on stderr";
    }
};

struct dist_err_thrower {
    void operator()(const std::uint64_t&, std::uint64_t& v, std::uint64_t x) const {
        if (x == 7) throw std::runtime_error("seven is right out");
        v += x;
    }
};

TEST_P(dist_failing, map_visitor_throws) {
    // Key 4242's owner: the rank that runs the visitor and raises.
    failed_job(
        [](am::context& ctx) {
            am::dist::map<std::uint64_t, std::uint64_t> m(ctx);
            m.async_visit(4242, dist_err_thrower{}, std::uint64_t{1});
            m.barrier();
            if (ctx.rank() == ctx.size() - 1)
                m.async_visit(4242, dist_err_thrower{}, std::uint64_t{7});
            m.barrier();
        },
        am::errc::remote,
        {"am::dist::map::async_visit", "dist_err_thrower", "key 4242", "rank @me",
         "seven is right out"});
}

struct dist_err_array_thrower {
    void operator()(std::uint64_t i, std::string& e) const {
        if (i == 5) throw std::invalid_argument("no fives, element [" + e + "]");
    }
};

TEST_P(dist_failing, array_visitor_throws) {
    failed_job(
        [](am::context& ctx) {
            am::dist::array<std::string> a(ctx, 8, am::dist::layout::cyclic, "init");
            if (ctx.rank() == 0) a.async_visit(5, dist_err_array_thrower{});
            a.barrier();
        },
        am::errc::remote,
        {"am::dist::array::async_visit", "dist_err_array_thrower", "key 5", "rank @me",
         "no fives, element [init]"});
}

struct dist_err_async_thrower {
    void operator()(int x) const {
        if (x > 0) throw std::runtime_error("async callable failed");
    }
};

TEST_P(dist_failing, async_callable_throws) {
    failed_job(
        [](am::context& ctx) {
            const int n = ctx.size();
            if (ctx.rank() == 0) am::async(ctx, n - 1, dist_err_async_thrower{}, 1);
            ctx.quiesce();
        },
        am::errc::remote,
        {"am::async", "dist_err_async_thrower", "threw on rank @me", "sent by rank 0",
         "async callable failed"});
}

AM_INSTANTIATE(dist_failing, am_test::without_mpi(am_test::make_params({2, 3}, {2})));

}  // namespace
