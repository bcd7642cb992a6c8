// SPDX-License-Identifier: MIT
// Tracing of the later layers (docs/observability.md): between trace_start and trace_stop,
// every optimistic handler run (an RPC's remote function) is one "oam" begin/end pair named
// after the function, with its caller; every handler that became a thread one promotion
// instant; rank code waiting for a future a "wait: future"; every window AM run at its target
// one "window AM" event with its segments and bytes, every fence one "window fence"; every TAM
// quantum one "quantum" pair with the threads it ran, and every termination wave one event. The
// counts are checked against the layers' own counters (optimistic_stats, window::stats,
// am::tam::result).
#include "tam/tam_support.hpp"
#include "trace/trace_support.hpp"

#include <am/oam.hpp>
#include <am/rpc.hpp>
#include <am/tam.hpp>
#include <am/window.hpp>

#include <algorithm>
#include <map>

namespace {

using namespace am_trace_test;
using am::tam::program;
using am::tam::word;

class trace_layers : public am_test::spmd_test {
  protected:
    [[nodiscard]] static std::string path() { return test_trace_path("am_trace_layers_"); }
};

// One rank's events of the later layers.
struct layer_events {
    std::vector<const json::value*> runs;  // "oam" begins, each matched by an end
    std::vector<const json::value*> promotions, window_ams, quanta, waves;
    int fences = 0;
    std::map<std::string, int> waits;  // by cause
};

layer_events layer_events_of(const json::value& doc, int pid) {
    layer_events ev;
    std::map<std::string, std::pair<double, std::string>> open;  // async id -> (ts, cat)
    for (const json::value& e : doc.at("traceEvents").arr) {
        const std::string& ph = e.at("ph").str;
        if (ph == "M" || static_cast<int>(e.at("pid").num) != pid) continue;
        const std::string& cat = e.at("cat").str;
        const std::string& name = e.at("name").str;
        if (ph == "b") {
            const std::string& id = e.at("id").str;
            EXPECT_EQ(open.count(id), 0u) << "async id " << id << " begun twice";
            open[id] = {e.at("ts").num, cat};
            if (cat == "oam") ev.runs.push_back(&e);
            if (cat == "tam") ev.quanta.push_back(&e);
            continue;
        }
        if (ph == "e") {
            const auto it = open.find(e.at("id").str);
            if (it == open.end()) {
                ADD_FAILURE() << "an end without a begin: " << name;
                continue;
            }
            EXPECT_GE(e.at("ts").num, it->second.first) << name;
            EXPECT_EQ(cat, it->second.second);
            open.erase(it);
            continue;
        }
        if (cat == "oam") {
            EXPECT_EQ(ph, "i");
            ev.promotions.push_back(&e);
        }
        if (cat == "window" && name == "window AM") ev.window_ams.push_back(&e);
        if (cat == "window" && name == "window fence") ++ev.fences;
        if (cat == "tam") {
            EXPECT_EQ(ph, "X");
            ev.waves.push_back(&e);
        }
        if (cat == "wait") ++ev.waits[e.at("args").at("cause").str];
    }
    EXPECT_TRUE(open.empty()) << open.size() << " async events never ended";
    return ev;
}

// ------------------------------------------------------------------------------------ RPC

std::uint64_t traced_twice(std::uint64_t x) {
    return 2 * x;
}

// Calls traced_twice on the next rank and waits for it: the handler becomes a thread.
std::uint64_t traced_nested(am::context& ctx, std::uint64_t x) {
    return am::rpc<&traced_twice>(ctx, (ctx.rank() + 1) % ctx.size(), x).get() + 1;
}

TEST_P(trace_layers, rpc_runs_promotions_and_future_waits) {
    const std::string file = path();
    ASSERT_EQ(run([&](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  am::rpc_register<&traced_twice>(ctx);
                  am::rpc_register<&traced_nested>(ctx);
                  ctx.barrier();
                  constexpr std::uint64_t calls = 5;
                  const int right = (me + 1) % n;
                  const am::oam_stats before = am::optimistic_stats(ctx);
                  ctx.trace_start(file);
                  std::vector<am::future<std::uint64_t>> fs;
                  for (std::uint64_t i = 0; i < calls; ++i) {
                      fs.push_back(am::rpc<&traced_twice>(ctx, right, i));
                  }
                  for (std::uint64_t i = 0; i < calls; ++i) EXPECT_EQ(fs[i].get(), 2 * i);
                  EXPECT_EQ(am::rpc<&traced_nested>(ctx, right, 10).get(), 21u);
                  ctx.quiesce();
                  const am::oam_stats after = am::optimistic_stats(ctx);
                  ctx.trace_stop();
                  ctx.barrier();  // rank 0 has written the file

                  const json::value doc = json::parse_file(file);
                  const layer_events ev = layer_events_of(doc, me);
                  // Here ran: `calls` traced_twice and one traced_nested from the left
                  // neighbour, and the nested traced_twice from the right one's.
                  EXPECT_EQ(ev.runs.size(), after.handlers - before.handlers);
                  std::map<std::string, int> by_fn;
                  int blocked = 0;
                  for (const json::value* e : ev.runs) {
                      const std::string& name = e->at("name").str;
                      by_fn[name.find("traced_nested") != std::string::npos  ? "nested"
                            : name.find("traced_twice") != std::string::npos ? "twice"
                                                                             : name]++;
                      EXPECT_EQ(e->at("args").at("source").num, (me + n - 1) % n) << name;
                      if (e->at("args").at("blocked").b) ++blocked;
                  }
                  EXPECT_EQ(by_fn["twice"], static_cast<int>(calls) + 1);
                  EXPECT_EQ(by_fn["nested"], 1);
                  EXPECT_EQ(by_fn.size(), 2u) << "remote-function events are named after it";
                  EXPECT_EQ(ev.promotions.size(), after.blocked - before.blocked);
                  EXPECT_EQ(blocked, static_cast<int>(ev.promotions.size()));
                  if (n > 1) {
                      // The nested call waits for a reply from another rank: a thread.
                      ASSERT_EQ(ev.promotions.size(), 1u);
                      EXPECT_NE(ev.promotions[0]->at("name").str.find("traced_nested"),
                                std::string::npos);
                      EXPECT_GE(ev.waits.count("future"), 1u) << "rank code's get()";
                  }
                  ctx.barrier();  // every rank has read the file
                  if (me == 0) std::filesystem::remove(file);
              }),
              0);
}

// ---------------------------------------------------------------------------------- window

void add_into(const am::window_args<std::uint64_t, std::uint64_t, std::uint64_t>& a) {
    for (std::size_t i = 0; i < a.output.size(); ++i) a.output[i] = a.input[i] + a.persistent[0];
}

TEST_P(trace_layers, window_ams_and_fences) {
    const std::string file = path();
    ASSERT_EQ(
        run([&](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            am::window w = am::window::allocate(ctx, sizeof(std::uint64_t));
            const auto op =
                w.register_op<std::uint64_t, std::uint64_t, std::uint64_t>("add_into", add_into);
            reinterpret_cast<std::uint64_t*>(w.memory().data())[0] = 100;
            w.fence();
            constexpr std::size_t ams = 3, segments = 2;
            const int right = (me + 1) % n;
            const am::window_stats before = w.stats();
            ctx.trace_start(file);
            std::vector<std::uint64_t> in(ams * segments), out(ams * segments);
            for (std::size_t i = 0; i < in.size(); ++i) in[i] = i;
            for (std::size_t k = 0; k < ams; ++k) {
                w.am(op, right, std::span<const std::uint64_t>(in).subspan(k * segments, 2), 1,
                     std::span<std::uint64_t>(out).subspan(k * segments, 2), 1, segments, 0, 1);
            }
            w.fence();
            const am::window_stats after = w.stats();
            ctx.trace_stop();
            ctx.barrier();
            for (std::size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], 100 + i);

            const json::value doc = json::parse_file(file);
            const layer_events ev = layer_events_of(doc, me);
            const std::uint64_t units = (after.units_run - before.units_run) +
                                        (after.units_at_origin - before.units_at_origin);
            EXPECT_EQ(ev.window_ams.size(), units) << "one event per unit run here";
            EXPECT_EQ(ev.window_ams.size(), ams) << "one unit per small AM";
            for (const json::value* e : ev.window_ams) {
                EXPECT_EQ(e->at("args").at("segments").num, static_cast<double>(segments));
                EXPECT_EQ(e->at("args").at("bytes").num,
                          static_cast<double>(segments * sizeof(std::uint64_t)));
            }
            EXPECT_EQ(ev.fences, 1);
            ctx.barrier();
            if (me == 0) std::filesystem::remove(file);
            w.free();
        }),
        0);
}

// ------------------------------------------------------------------------------------- TAM

// square_program (tests/tam/tam_support.hpp): the root calls "square" on every rank with x, each
// sends back a value, the root's join thread (entry = ranks) finishes with their sum.
TEST_P(trace_layers, tam_quanta_and_waves) {
    const std::string file = path();
    ASSERT_EQ(run([&](am::context& ctx) {
                  const int n = ctx.size(), me = ctx.rank();
                  const program prog = am_tam_test::square_program();
                  for (const am::tam::policy p :
                       {am::tam::policy::active_messages, am::tam::policy::message_driven}) {
                      ctx.trace_start(file);
                      const am::tam::result res =
                          am::tam::run(ctx, prog, 0, {word{5}}, am_tam_test::opts(p));
                      ctx.trace_stop();
                      ctx.barrier();
                      EXPECT_EQ(res.value, am_tam_test::square_expected(n, 5));

                      const json::value doc = json::parse_file(file);
                      const layer_events ev = layer_events_of(doc, me);
                      EXPECT_GT(ev.quanta.size(), 0u) << "rank " << me;
                      EXPECT_EQ(ev.quanta.size(), res.local.quanta) << "one event per quantum";
                      std::uint64_t threads = 0;
                      for (const json::value* e : ev.quanta) {
                          EXPECT_EQ(e->at("name").str, "quantum");
                          EXPECT_GE(e->at("args").at("threads").num, 1.0);
                          threads += static_cast<std::uint64_t>(e->at("args").at("threads").num);
                      }
                      EXPECT_EQ(threads, res.local.threads);
                      // Termination needs two waves with equal sums at least.
                      ASSERT_GE(ev.waves.size(), 2u);
                      for (std::size_t i = 0; i < ev.waves.size(); ++i) {
                          EXPECT_EQ(ev.waves[i]->at("args").at("wave").num,
                                    static_cast<double>(i + 1));
                      }
                      const json::value& last = ev.waves.back()->at("args");
                      EXPECT_EQ(last.at("sent").num, last.at("handled").num);
                      EXPECT_EQ(last.at("sent").num, static_cast<double>(res.total.messages));
                      ctx.barrier();
                      if (me == 0) std::filesystem::remove(file);
                  }
              }),
              0);
}

AM_INSTANTIATE(trace_layers, am_test::make_params({1, 2, 4}, {1, 2, 4}));

}  // namespace
