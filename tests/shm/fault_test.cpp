// SPDX-License-Identifier: MIT
// Faults on the shm transport (ranks are forked processes): a rank killed by SIGKILL, a rank
// that exits early, a rank that throws, a rank that ignores the failure. Each time am::run
// returns non-zero within 5 s, the surviving ranks stop with an error naming the failed rank,
// and the job's shared memory never had a name in /dev/shm (nor is any am-* object left).
#include "support/spmd.hpp"

#include <csignal>
#include <cstdlib>

namespace {

using am_test::spmd_test;
using clock_type = std::chrono::steady_clock;
using namespace std::chrono_literals;

struct board {
    std::atomic<int> saw_abort{0};
    std::atomic<int> wrong{0};
    am_test::fixed_string<512> sample;
    am_test::fixed_string<256> region;  // the job region's path in maps, seen from rank 0
};

class fault : public spmd_test {
  protected:
    void SetUp() override { _before = am_test::shm_entries(); }

    // Runs `fn` on every rank after recording the region's name; returns the status.
    int run_job(const std::function<void(am::context&)>& fn) {
        _t0 = clock_type::now();
        const int rc = run([&](am::context& ctx) {
            if (ctx.rank() == 0) _board->region.set(am_test::mapped_region_path());
            fn(ctx);
        });
        _elapsed = clock_type::now() - _t0;
        return rc;
    }

    // Waits for a message that never comes and records what the wait threw (then rethrows).
    void wait_for_abort(am::context& ctx, const std::vector<std::string>& parts) {
        am::counter never(ctx);
        try {
            never.wait(1);
        } catch (const am::error& e) {
            bool ok = e.code() == am::errc::aborted;
            for (const std::string& p : parts) ok = ok && am_test::contains(e.what(), p);
            ++(ok ? _board->saw_abort : _board->wrong);
            if (!ok) _board->sample.set(e.what());
            throw;
        }
    }

    // The common verdict: failed status, in bounded time, survivors told, nothing leaked.
    void expect_clean_failure(int rc, int survivors, std::chrono::seconds limit = 5s) {
        EXPECT_NE(rc, 0);
        EXPECT_LT(_elapsed, limit)
            << "the job took " << std::chrono::duration<double>(_elapsed).count() << " s";
        EXPECT_EQ(_board->saw_abort.load(), survivors) << _board->sample.str();
        EXPECT_EQ(_board->wrong.load(), 0) << _board->sample.str();
        const std::string region = _board->region.str();
        EXPECT_FALSE(region.empty()) << "rank 0 did not see its job region in /proc/self/maps";
        // The region is a memfd: it never has a name that could be left behind.
        EXPECT_EQ(region.rfind("/memfd:am-", 0), 0u) << region << " is not a memfd";
        const auto extra = am_test::new_shm_entries(_before);
        EXPECT_TRUE(extra.empty()) << "new /dev/shm entry left: " << *extra.begin();
    }

    am_test::shared<board> _board;
    std::set<std::string> _before;
    clock_type::time_point _t0;
    clock_type::duration _elapsed{};
};

TEST_P(fault, killed_rank) {
    const int rc = run_job([&](am::context& ctx) {
        ctx.barrier();
        if (ctx.rank() == 2) std::raise(SIGKILL);
        wait_for_abort(ctx, {"job aborted", "rank 2", "killed by signal 9"});
    });
    expect_clean_failure(rc, ranks() - 1);
}

TEST_P(fault, killed_rank_during_barrier) {
    const int rc = run_job([&](am::context& ctx) {
        if (ctx.rank() == 2) std::raise(SIGKILL);
        try {
            ctx.barrier();
        } catch (const am::error& e) {
            const bool ok = e.code() == am::errc::aborted && am_test::contains(e.what(), "rank 2");
            ++(ok ? _board->saw_abort : _board->wrong);
            if (!ok) _board->sample.set(e.what());
            throw;
        }
        ++_board->wrong;
        _board->sample.set("barrier returned although rank 2 was dead");
    });
    expect_clean_failure(rc, ranks() - 1);
}

TEST_P(fault, early_exit) {
    const int rc = run_job([&](am::context& ctx) {
        ctx.barrier();
        if (ctx.rank() == 2) std::_Exit(0);  // status 0, but before finishing am::run
        wait_for_abort(ctx, {"rank 2", "before finishing am::run"});
    });
    expect_clean_failure(rc, ranks() - 1);
}

TEST_P(fault, rank_throws) {
    ::testing::internal::CaptureStderr();
    const int rc = run_job([&](am::context& ctx) {
        ctx.barrier();
        if (ctx.rank() == 2) throw std::runtime_error("rank two gives up");
        wait_for_abort(ctx, {"rank 2", "rank two gives up"});
    });
    const std::string err = ::testing::internal::GetCapturedStderr();
    expect_clean_failure(rc, ranks() - 1);
    EXPECT_TRUE(am_test::contains(err, "rank 2")) << err;
    EXPECT_TRUE(am_test::contains(err, "rank two gives up")) << err;
}

// Rank 1 computes without ever polling, so it never learns of the failure: the launcher must
// kill it after its grace period (3 s), with the whole job done within 10 s.
TEST_P(fault, straggler_is_killed) {
    const int rc = run_job([&](am::context& ctx) {
        ctx.barrier();
        if (ctx.rank() == 2) std::raise(SIGKILL);
        if (ctx.rank() == 1) {
            const auto until = clock_type::now() + 60s;
            while (clock_type::now() < until) std::this_thread::sleep_for(10ms);
            return;
        }
        wait_for_abort(ctx, {"rank 2", "killed by signal 9"});
    });
    expect_clean_failure(rc, ranks() - 2, 10s);
    EXPECT_GE(_elapsed, 2s) << "the straggler was not given its grace period";
}

INSTANTIATE_TEST_SUITE_P(am, fault,
                         ::testing::Values(am_test::spmd_param{am::transport_kind::shm, 4}),
                         am_test::param_name);

}  // namespace
