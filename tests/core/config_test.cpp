// SPDX-License-Identifier: MIT
// Configuration: config::from_env parses the AM_* variables (and names the variable when it
// cannot), am::run(argc, argv, fn) takes ranks and transport from the environment, and the
// ring and segment sizes shape max_medium() and segment().
#include "support/spmd.hpp"

#include <cstdlib>

namespace {

using am_test::spmd_test;

// Sets environment variables for one test and restores them afterwards.
class env_guard {
  public:
    void set(const char* name, const char* value) {
        const char* old = std::getenv(name);
        _saved.push_back({name, old != nullptr, old ? old : ""});
        setenv(name, value, 1);
    }
    ~env_guard() {
        for (auto it = _saved.rbegin(); it != _saved.rend(); ++it) {
            if (it->had) {
                setenv(it->name.c_str(), it->value.c_str(), 1);
            } else {
                unsetenv(it->name.c_str());
            }
        }
    }

  private:
    struct saved {
        std::string name;
        bool had;
        std::string value;
    };
    std::vector<saved> _saved;
};

TEST(config, from_env_reads_every_variable) {
    env_guard env;
    env.set("AM_RANKS", "3");
    env.set("AM_TRANSPORT", "shm");
    env.set("AM_RING_BYTES", "64K");
    env.set("AM_SEGMENT_BYTES", "2M");
    env.set("AM_MAX_MEDIUM", "1000");
    env.set("AM_PROGRESS_THREAD", "1");
    env.set("AM_STATS", "1");
    env.set("AM_TRACE_MAX_EVENTS", "4M");
    const am::config c = am::config::from_env();
    EXPECT_EQ(c.ranks, 3);
    EXPECT_EQ(c.transport, am::transport_kind::shm);
    EXPECT_EQ(c.ring_bytes, std::size_t{64} << 10);
    EXPECT_EQ(c.segment_bytes, std::size_t{2} << 20);
    EXPECT_EQ(c.max_medium, 1000u);
    EXPECT_TRUE(c.progress_thread);
    EXPECT_TRUE(c.print_stats);
    EXPECT_EQ(c.trace_max_events, std::size_t{4} << 20);
}

TEST(config, defaults_without_environment) {
    env_guard env;
    for (const char* v :
         {"AM_RANKS", "AM_TRANSPORT", "AM_RING_BYTES", "AM_SEGMENT_BYTES", "AM_MAX_MEDIUM",
          "AM_PROGRESS_THREAD", "AM_STATS", "AM_TRACE_MAX_EVENTS"}) {
        env.set(v, "");
        unsetenv(v);
    }
    const am::config c = am::config::from_env();
    const am::config d;
    EXPECT_EQ(c.ranks, 1);
    EXPECT_EQ(c.transport, am::transport_kind::threads);
    EXPECT_EQ(c.ring_bytes, d.ring_bytes);
    EXPECT_EQ(c.segment_bytes, std::size_t{64} << 20);
    EXPECT_EQ(c.max_medium, std::size_t{64} << 10);
    EXPECT_FALSE(c.progress_thread);
    EXPECT_FALSE(c.print_stats);
    EXPECT_EQ(c.trace_max_events, 0u);  // am::run then uses the default cap
}

TEST(config, bad_values_name_the_variable) {
    const std::pair<const char*, const char*> bad[] = {{"AM_RANKS", "0"},
                                                       {"AM_RANKS", "lots"},
                                                       {"AM_RANKS", "5000"},
                                                       {"AM_TRANSPORT", "carrier pigeon"},
                                                       {"AM_RING_BYTES", "12X"},
                                                       {"AM_SEGMENT_BYTES", "-1"},
                                                       {"AM_PROGRESS_THREAD", "maybe"},
                                                       {"AM_STATS", "2"},
                                                       {"AM_TRACE_MAX_EVENTS", "0"},
                                                       {"AM_TRACE_MAX_EVENTS", "many"}};
    for (const auto& [name, value] : bad) {
        env_guard env;
        env.set(name, value);
        try {
            (void)am::config::from_env();
            ADD_FAILURE() << name << "=" << value << " was accepted";
        } catch (const am::error& e) {
            EXPECT_EQ(e.code(), am::errc::invalid_argument) << e.what();
            EXPECT_TRUE(am_test::contains(e.what(), name)) << e.what();
            EXPECT_TRUE(am_test::contains(e.what(), value)) << e.what();
        }
    }
}

TEST(config, bad_rank_count_fails_run) {
    for (int ranks : {0, -1, 5000}) {
        am::config c;
        c.ranks = ranks;
        int calls = 0;
        EXPECT_NE(am::run(c, [&](am::context&) { ++calls; }), 0) << ranks << " ranks";
        EXPECT_EQ(calls, 0);
    }
}

class config_run : public spmd_test {};

// am::run(argc, argv, fn) starts AM_RANKS ranks on AM_TRANSPORT (on mpi: this process's rank
// of the job mpiexec started, AM_RANKS ignored, AM_NODE_SIZE read).
TEST_P(config_run, run_reads_environment) {
    struct seen {
        std::atomic<int> calls{0}, size_ok{0};
        std::atomic<int> pids_differ{0};
    };
    am_test::shared<seen> s;
    env_guard env;
    env.set("AM_RANKS", std::to_string(ranks()).c_str());
    env.set("AM_TRANSPORT", am_test::transport_name(transport()));
    env.set("AM_SEGMENT_BYTES", "1M");
    env.set("AM_NODE_SIZE", std::to_string(GetParam().node_size).c_str());
    const int parent = getpid();
    char arg0[] = "config_test";
    char* argv[] = {arg0, nullptr};
    const int rc = am::run(1, argv, [&](am::context& ctx) {
        ++s->calls;
        if (ctx.size() == ranks() && ctx.segment().size() == (std::size_t{1} << 20)) ++s->size_ok;
        if (getpid() != parent) ++s->pids_differ;
        ctx.barrier();
    });
    ASSERT_EQ(rc, 0);
    // The ranks the board can count: all of them, but only this process's own one on mpi.
    const int here = is_mpi() ? 1 : ranks();
    EXPECT_EQ(s->calls.load(), here);
    EXPECT_EQ(s->size_ok.load(), here);
    // shm: every rank is a child process; threads and mpi: ranks run in this process.
    EXPECT_EQ(s->pids_differ.load(), is_shm() ? ranks() : 0);
}

// Ring and segment sizes: rings round up to a power of two of at least 1 KiB and bound
// max_medium(); segments round up to whole pages.
TEST_P(config_run, sizes_round_up) {
    const int rc = run(
        [](am::context& ctx) {
            EXPECT_EQ(ctx.segment().size(), std::size_t{12288});
            EXPECT_GT(ctx.max_medium(), std::size_t{0});
            EXPECT_LT(ctx.max_medium(), std::size_t{512});  // 100 B rings become 1 KiB
            const std::vector<std::byte> max(ctx.max_medium());
            am::counter got(ctx);
            auto h = ctx.handler([&](am::token&, std::span<const std::byte> p) {
                EXPECT_EQ(p.size(), max.size());
                got.add();
            });
            ctx.barrier();
            for (int d = 0; d < ctx.size(); ++d) ctx.request(d, h, am::bytes(max));
            got.wait(static_cast<std::uint64_t>(ctx.size()));
        },
        [](am::config& c) {
            c.ring_bytes = 100;
            c.segment_bytes = 10000;
        });
    ASSERT_EQ(rc, 0);
    const int rc2 = run(
        [](am::context& ctx) {
            // 3000 B rounds up to 4 KiB rings: room for larger mediums than 1 KiB rings.
            EXPECT_GE(ctx.max_medium(), std::size_t{1024});
            EXPECT_LT(ctx.max_medium(), std::size_t{2048});
        },
        [](am::config& c) { c.ring_bytes = 3000; });
    ASSERT_EQ(rc2, 0);
}

AM_INSTANTIATE(config_run, am_test::make_params({1, 4}, {1, 4}));

}  // namespace
