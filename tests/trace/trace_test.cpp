// SPDX-License-Identifier: MIT
// Tracing: the file written by trace_stop (and by am::run with AM_TRACE) parses as JSON in the
// trace-event format, and its events agree with the statistics: one handler-run event per
// message handled and one send event per message sent between trace_start and trace_stop
// (traffic before and after must not appear), one process per rank, complete events with
// durations ≥ 0 that nest on each thread, a typed epoch with its detector rounds, RMA
// operations and the causes of waits. An unwritable path fails at trace_start on every rank.
#include "trace/trace_support.hpp"

#include <am/typed.hpp>

#include <algorithm>
#include <chrono>
#include <map>

namespace {

using am_test::spmd_test;
using namespace am_trace_test;

class trace_base : public spmd_test {
  protected:
    // The same on every rank of the job (all its processes run this test case).
    [[nodiscard]] static std::string path() { return test_trace_path("am_trace_"); }
};

class trace : public trace_base {};
// Every rank parses the whole file: at most 4 ranks, so the test stays well under a second.
class trace_counts : public trace_base {};

struct item {
    std::uint64_t value;
};

using handler_counts = std::map<std::uint32_t, std::uint64_t>;

struct rank_events {
    handler_counts runs, sends;
    std::uint64_t total_sends = 0;
    std::map<std::string, int> waits;  // by cause
    std::map<std::string, int> by_name;
    std::vector<const json::value*> epochs, rounds;
};

// Complete events of one thread either nest or follow each other.
void expect_nesting(std::vector<std::pair<double, double>> spans, int pid, double tid) {
    std::sort(spans.begin(), spans.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first < b.first : a.second > b.second;
    });
    std::vector<double> open_ends;
    constexpr double slack = 0.0015;  // µs: the file prints whole nanoseconds
    for (const auto& [start, end] : spans) {
        while (!open_ends.empty() && open_ends.back() <= start + slack) open_ends.pop_back();
        if (!open_ends.empty()) {
            EXPECT_LE(end, open_ends.back() + slack)
                << "events overlap without nesting on pid " << pid << " tid " << tid;
        }
        open_ends.push_back(end);
    }
}

rank_events events_of(const json::value& doc, int pid, int size) {
    rank_events ev;
    std::set<int> pids;
    std::map<double, std::vector<std::pair<double, double>>> spans_by_tid;
    for (const json::value& e : doc.at("traceEvents").arr) {
        const std::string& ph = e.at("ph").str;
        const std::string& name = e.at("name").str;
        if (ph == "M" && name == "process_name") pids.insert(static_cast<int>(e.at("pid").num));
        if (static_cast<int>(e.at("pid").num) != pid || ph == "M") continue;
        EXPECT_TRUE(ph == "X" || ph == "i") << ph;
        EXPECT_GE(e.at("ts").num, 0.0) << name;
        const json::value& args = e.at("args");
        const std::string& cat = e.at("cat").str;
        ++ev.by_name[name];
        if (ph == "X") {
            EXPECT_GE(e.at("dur").num, 0.0) << name;
            spans_by_tid[e.at("tid").num].emplace_back(e.at("ts").num,
                                                       e.at("ts").num + e.at("dur").num);
        }
        if (cat == "handler") ++ev.runs[static_cast<std::uint32_t>(args.at("handler").num)];
        if (cat == "send") {
            ++ev.sends[static_cast<std::uint32_t>(args.at("handler").num)];
            ++ev.total_sends;
        }
        if (cat == "wait") ++ev.waits[args.at("cause").str];
        if (cat == "epoch" && name == "detector round") ev.rounds.push_back(&e);
        if (cat == "epoch" && name != "detector round") ev.epochs.push_back(&e);
    }
    std::set<int> want;
    for (int r = 0; r < size; ++r) want.insert(r);
    EXPECT_EQ(pids, want) << "one process per rank";
    for (const auto& [tid, spans] : spans_by_tid) expect_nesting(spans, pid, tid);
    return ev;
}

handler_counts delta(const am::stats& before, const am::stats& after, bool sent) {
    handler_counts d;
    for (std::size_t i = 0; i < after.handlers.size(); ++i) {
        const std::uint64_t b = i < before.handlers.size()
                                    ? (sent ? before.handlers[i].sent : before.handlers[i].received)
                                    : 0;
        const std::uint64_t a = sent ? after.handlers[i].sent : after.handlers[i].received;
        if (a != b) d[static_cast<std::uint32_t>(i)] = a - b;
    }
    return d;
}

// Traffic before, inside and after the trace; every rank checks its events against its stats.
void counts_match(am::context& ctx, const std::string& file) {
    const int n = ctx.size(), me = ctx.rank();
    am::counter pings(ctx), answers(ctx);
    auto ping = ctx.handler([&](am::token&, std::uint32_t) { pings.add(); });
    auto answer = ctx.handler([&](am::token&, std::span<const std::byte> p) {
        EXPECT_EQ(p.size(), 10u);
        answers.add();
    });
    auto ask = ctx.handler([&, answer](am::token& t) {
        const std::vector<std::byte> ten(10);
        t.reply(answer, am::bytes(ten));
    });
    std::uint64_t typed_got = 0;
    am::message_type<item> type(ctx, [&](const item&) { ++typed_got; });
    auto block = ctx.allocate<std::uint64_t>(4);
    const auto blocks = ctx.exchange(block);
    ctx.barrier();
    auto traffic = [&](std::uint64_t round) {  // 2 pings, 1 ask per destination
        for (int d = 0; d < n; ++d) {
            for (std::uint32_t k = 0; k < 2; ++k) ctx.request(d, ping, k);
            ctx.request(d, ask);
        }
        pings.wait(2 * static_cast<std::uint64_t>(n) * round);
        answers.wait(static_cast<std::uint64_t>(n) * round);
    };
    traffic(1);  // before the trace: not in it
    ctx.quiesce();
    const am::stats before = ctx.stats();
    ctx.trace_start(file);
    traffic(2);
    ctx.barrier();
    const std::uint64_t words[2] = {1, 2};
    std::uint64_t back[2] = {};
    const int peer = (me + 1) % n;
    ctx.put(blocks[static_cast<std::size_t>(peer)], words, 2);
    ctx.get(back, blocks[static_cast<std::size_t>(peer)], 2);
    {
        am::epoch e(ctx);
        for (int d = 0; d < n; ++d) type.send(item{1}, d);
        e.end(0);
    }
    EXPECT_EQ(typed_got, static_cast<std::uint64_t>(n));
    ctx.quiesce();
    const am::stats after = ctx.stats();
    ctx.trace_stop();
    traffic(3);     // after the trace: not in it
    ctx.barrier();  // rank 0 has written the file

    const json::value doc = json::parse_file(file);
    const rank_events ev = events_of(doc, me, n);
    EXPECT_EQ(ev.runs, delta(before, after, false)) << "handler runs by handler";
    EXPECT_EQ(ev.sends, delta(before, after, true)) << "sends by handler";
    EXPECT_EQ(ev.total_sends, after.messages_sent - before.messages_sent);
    EXPECT_GE(ev.runs.size(), 3u);  // ping, ask, answer (and the typed batches)
    EXPECT_EQ(ev.by_name.count(after.handlers[ping.index].name), 1u)
        << "handler events carry the handler's name";
    EXPECT_EQ(ev.by_name.count("put"), 1u);
    EXPECT_EQ(ev.by_name.count("get"), 1u);
    EXPECT_GE(ev.waits.count("barrier"), 1u);
    EXPECT_GE(ev.waits.count("quiesce"), 1u);
    EXPECT_EQ(ev.waits.count("epoch end"), 1u);
    ASSERT_EQ(ev.epochs.size(), 1u);
    const json::value& epoch = *ev.epochs[0];
    const auto rounds = static_cast<std::size_t>(epoch.at("args").at("rounds").num);
    EXPECT_GE(rounds, 1u);
    EXPECT_EQ(ev.rounds.size(), rounds) << "one event per detector round";
    EXPECT_EQ(epoch.at("args").at("sent").num, static_cast<double>(n));
    ctx.barrier();  // every rank has read the file
    if (me == 0) std::filesystem::remove(file);
}

TEST_P(trace_counts, match_stats_between_start_and_stop) {
    const std::string file = path();
    ASSERT_EQ(run([&](am::context& ctx) { counts_match(ctx, file); }), 0);
}

// With a progress thread, handlers run on it: a second track per rank, the same counts.
TEST_P(trace_counts, match_stats_with_progress_thread) {
    const std::string file = path();
    ASSERT_EQ(run([&](am::context& ctx) { counts_match(ctx, file); },
                  [](am::config& c) { c.progress_thread = true; }),
              0);
}

// AM_TRACE (config::trace_path): the whole run, written at its end by rank 0.
TEST_P(trace, am_trace_writes_the_whole_run) {
    const std::string file = path();
    std::filesystem::remove(file);
    const int rc = run(
        [&](am::context& ctx) {
            am::counter got(ctx);
            auto ping = ctx.handler([&](am::token&) { got.add(); });
            ctx.barrier();
            for (int d = 0; d < ctx.size(); ++d) ctx.request(d, ping);
            got.wait(static_cast<std::uint64_t>(ctx.size()));
        },
        [&](am::config& c) { c.trace_path = file; });
    ASSERT_EQ(rc, 0);
    const std::vector<int> here = visible_ranks();
    if (std::find(here.begin(), here.end(), 0) == here.end()) return;  // rank 0 wrote it
    const json::value doc = json::parse_file(file);
    EXPECT_EQ(doc.at("otherData").at("ranks").num, ranks());
    for (int r = 0; r < ranks(); ++r) {
        const rank_events ev = events_of(doc, r, ranks());
        std::uint64_t runs = 0;
        for (const auto& [h, k] : ev.runs) runs += k;
        EXPECT_GE(runs, static_cast<std::uint64_t>(ranks())) << "rank " << r;
        EXPECT_GE(ev.waits.count("quiesce"), 1u) << "the end of am::run";
    }
    std::filesystem::remove(file);
}

TEST_P(trace, unwritable_path_fails_at_start_on_every_rank) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const std::string bad = "/nonexistent-am-trace-dir/trace.json";
                  try {
                      ctx.trace_start(bad);
                      ADD_FAILURE() << "trace_start accepted " << bad;
                  } catch (const am::error& e) {
                      EXPECT_EQ(e.code(), am::errc::invalid_argument);
                      const std::string what = e.what();
                      EXPECT_NE(what.find("am::context::trace_start"), std::string::npos) << what;
                      EXPECT_NE(what.find("rank 0"), std::string::npos) << what;
                      EXPECT_NE(what.find(bad), std::string::npos) << what;
                  }
                  ctx.trace_stop();  // tracing is off: nothing to do
              }),
              0);
}

AM_INSTANTIATE(trace, am_test::all_params());
AM_INSTANTIATE(trace_counts, am_test::make_params({1, 2, 4}, {1, 2, 4}));

}  // namespace
