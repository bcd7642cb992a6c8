// SPDX-License-Identifier: MIT
// rpc_bench: Optimistic Active Messages and RPC with futures (issue 16) against hand-coded
// active messages and TRPC (the paper's traditional RPC, trpc.hpp), all in one invocation.
// JSON lines on stdout (bench "rpc"; keys as every bench/ program), the table on stderr.
//
//   rpc_bench [--quick] [--ops null_rtt,arg8_rtt,async_rate,optimistic_noblock,promotion,dht,uts]
//             [--transport threads|shm] [--reps N] ...                          (see --help)
//
// Systems: am_rpc (am::rpc / am::rpc_ff / am::optimistic_handler), am_handcoded (plain
// handlers, token.reply, the rank busy-polls a counter), trpc (trpc.hpp; its jobs run with
// config::thread_multiple), plain_handler (a plain context::handler).
//
// null_rtt, arg8_rtt   2 ranks, rank 0 calls rank 1: am::rpc<&f>(ctx, 1[, x]).get() with f
//                      taking nothing and returning void / taking and returning 8 B; µs per
//                      round trip (latency_us).
// async_rate           64 calls in flight (a ring of 64 futures / 64 outstanding requests) of
//                      the 8 B function; calls per µs (rate_Mops).
// optimistic_noblock   rank 1 fills rank 0's ring with a batch of short messages while rank 0
//                      does not poll; rank 0 then times the polls that handle the batch. The
//                      same counting handler registered as am::optimistic_handler (am_rpc) and
//                      as plain handler (plain_handler), batches alternating; ns per message
//                      for both, and their difference (system "oam-plain", per repetition).
// promotion            the same batches to an optimistic handler doing `m.lock(); m.unlock();`
//                      on an am::mutex: with the mutex free (never blocks: uncontended_ns), and
//                      with rank 0 holding it while the batch is handled (every handler blocks,
//                      becomes a thread; rank 0 then unlocks and polls until all have resumed
//                      and finished: blocked_ns). The cost of one turn-into-thread + resumption
//                      (metric ns) = blocked_ns - uncontended_ns per repetition: everything the
//                      two have in common (the message, the handler's stack switches, the lock
//                      and unlock) cancels; the FIFO hand-over of the mutex to the next waiter
//                      is part of it. optimistic_stats checks that every handler blocked.
// dht                  each rank inserts its share of --dht-keys uniform random 8 B keys into a
//                      hash table distributed over the ranks (a lock per bucket), then finds
//                      them all and checks the values, 64 operations in flight per rank;
//                      hand-coded AM (handlers insert/find and reply), RPC (am::rpc of functions
//                      that take the bucket's am::mutex), TRPC (std::mutex); seconds from a
//                      barrier before the inserts to one after the finds, and rate_Mops.
// uts                  a geometric unbalanced tree (workloads.hpp) searched with subtrees
//                      spawned on random ranks (request / am::rpc_ff / TRPC call); termination
//                      by ctx.quiesce() (TRPC: a counter of tasks in flight, then quiesce);
//                      every system's node count is checked against a sequential count.
// Ratios (metric time_ratio, how many times longer the first takes): "rpc/am" (am_rpc over
// am_handcoded) and "trpc/rpc" (trpc over am_rpc) for each op and rank count.
//
// Two ranks with a core each are pinned to cores 0 and 1 and busy-poll (as every bench/
// latency run); TRPC ranks poll and sched_yield when a poll finds nothing, so the pool threads
// sharing their core get it; with more ranks than cores every wait is ctx.wait (back-off).
#include "rpc_bench.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

// Remote functions of the round-trip ops, and the loops callgrind counts (--count-loop):
// outside any namespace so that --toggle-collect can name them.
// The null function's result: am::rpc of a function returning void does not compile at main
// 6dd293f (reported); an empty struct travels in exactly the reply a void result would (the
// call id and one zero slot, rpc_return_slot), so the measurement is the same.
rpc_bench_nothing rpc_bench_null_fn() {
    return {};
}
std::uint64_t rpc_bench_arg8_fn(std::uint64_t x) {
    return x + 1;
}

using pong0_handler = am::handler<am::category::short_am>;

[[gnu::noipa]] void rpc_bench_rpc_loop(am::context& ctx, int peer, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) (void)am::rpc<&rpc_bench_null_fn>(ctx, peer).get();
}

[[gnu::noipa]] void rpc_bench_am_loop(am::context& ctx, int peer, pong0_handler ping,
                                      const std::uint64_t& pongs, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t want = pongs + 1;
        ctx.request(peer, ping);
        while (pongs < want) ctx.poll();
    }
}

using count_handler = am::handler<am::category::short_am, std::uint64_t>;

// One message to this rank's counting handler `h` (plain or optimistic) per iteration, polled
// until it ran: the difference of the two counts is the optimistic dispatch.
[[gnu::noipa]] void rpc_bench_handler_loop(am::context& ctx, count_handler h,
                                           const std::uint64_t& handled, std::uint64_t n) {
    for (std::uint64_t i = 0; i < n; ++i) {
        const std::uint64_t want = handled + 1;
        ctx.request(0, h, i);
        while (handled < want) ctx.poll();
    }
}
[[gnu::noipa]] void rpc_bench_plain_loop(am::context& ctx, count_handler h,
                                         const std::uint64_t& handled, std::uint64_t n) {
    rpc_bench_handler_loop(ctx, h, handled, n);
}
[[gnu::noipa]] void rpc_bench_oam_loop(am::context& ctx, count_handler h,
                                       const std::uint64_t& handled, std::uint64_t n) {
    rpc_bench_handler_loop(ctx, h, handled, n);
}

namespace am::bench::rpc {
namespace {
/// Runs `body` on `ranks` ranks; rank 0's results go to `rep`. Non-zero on failure (a rank
/// failed, or a result was wrong).
int run_job(const plan& p, int ranks, bool trpc, const rank_body& body, reporter& rep) {
    am::config cfg = am::config::from_env();
    cfg.ranks = ranks;
    cfg.transport = p.transport == "shm" ? am::transport_kind::shm : am::transport_kind::threads;
    cfg.thread_multiple = trpc;
    cfg.segment_bytes = std::size_t{1} << 20;  // no put/get, no long messages
    shared_results out;
    shared_control ctl;
    const int cores = usable_cores();
    std::fflush(nullptr);  // forked ranks must not print what this process buffered
    int status = 0;
    {
        affinity_guard keep;
        status = am::run(cfg, [&](am::context& ctx) {
            if (ctx.size() <= cores) pin_to_core(ctx.rank());
            const job j{p, out, *ctl, ctx.size() <= cores, trpc};
            body(ctx, j);
        });
    }
    for (const result& r : out.take()) rep.add(r);
    if (status != 0) {
        std::fprintf(stderr, "rpc_bench: am::run failed with status %d\n", status);
        return status;
    }
    return (*ctl).errors.load() == 0 ? 0 : 3;
}

std::vector<double> per_op(const std::vector<double>& seconds, uint64_t n, double scale) {
    std::vector<double> v;
    for (double s : seconds) v.push_back(s * scale / static_cast<double>(n));
    return v;
}

// ------------------------------------------------- round trips, rate, flood (am job)

/// Rank state of the 2-rank am job.
struct am_state {
    uint64_t pongs = 0, last = 0, stops = 0, stops_seen = 0;
    uint64_t handled = 0, started = 0, finished = 0;
    std::unique_ptr<am::mutex> m;
    am::handler<am::category::short_am> ping0, stop;
    am::handler<am::category::short_am, uint64_t> ping8, plain, oam, oam_lock;
};

void register_am(am::context& ctx, am_state& st) {
    am::rpc_register<&rpc_bench_null_fn>(ctx);
    am::rpc_register<&rpc_bench_arg8_fn>(ctx);
    auto pong0 = ctx.handler([&st](am::token&) { ++st.pongs; });
    auto pong8 = ctx.handler([&st](am::token&, uint64_t x) {
        ++st.pongs;
        st.last = x;
    });
    st.ping0 = ctx.handler([pong0](am::token& t) { t.reply(pong0); });
    st.ping8 = ctx.handler([pong8](am::token& t, uint64_t x) { t.reply(pong8, x + 1); });
    st.stop = ctx.handler([&st](am::token&) { ++st.stops; });
    // The flood's handlers: the same body as a plain and as an optimistic handler.
    auto count = [&st](am::token&, uint64_t) { ++st.handled; };
    st.plain = ctx.handler(count);
    st.oam = am::optimistic_handler(ctx, count);
    st.m = std::make_unique<am::mutex>(ctx);
    st.oam_lock = am::optimistic_handler(ctx, [&st](am::token&, uint64_t) {
        ++st.started;
        st.m->lock();
        st.m->unlock();
        ++st.finished;
    });
    ctx.barrier();
}

/// Rank 1: polls until rank 0's next stop request.
void serve(am::context& ctx, const job& j, am_state& st) {
    ++st.stops_seen;
    j.wait(ctx, [&] { return st.stops >= st.stops_seen; });
}

void rtt(am::context& ctx, const job& j, am_state& st, bool arg8) {
    const char* op = arg8 ? "arg8_rtt" : "null_rtt";
    const uint64_t n = j.p.iters;
    if (ctx.rank() == 0) {
        auto rpc_loop = [&](uint64_t k) {
            for (uint64_t i = 0; i < k; ++i) {
                if (arg8) {
                    if (am::rpc<&rpc_bench_arg8_fn>(ctx, 1, i).get() != i + 1) {
                        j.error(ctx, "am::rpc arg8 result");
                    }
                } else {
                    (void)am::rpc<&rpc_bench_null_fn>(ctx, 1).get();
                }
            }
        };
        auto am_loop = [&](uint64_t k) {
            for (uint64_t i = 0; i < k; ++i) {
                const uint64_t want = st.pongs + 1;
                if (arg8) {
                    ctx.request(1, st.ping8, i);
                } else {
                    ctx.request(1, st.ping0);
                }
                j.wait(ctx, [&] { return st.pongs >= want; });
                if (arg8 && st.last != i + 1) j.error(ctx, "hand-coded arg8 result");
            }
        };
        rpc_loop(n / 10 + 1);
        am_loop(n / 10 + 1);
        std::vector<double> r, a;
        for (int rep = 0; rep < j.p.reps; ++rep) {  // alternating, so drift hits both
            r.push_back(timed([&] { rpc_loop(n); }));
            a.push_back(timed([&] { am_loop(n); }));
        }
        j.report(ctx, "am_rpc", op, arg8 ? 8 : 0, "latency_us", per_op(r, n, 1e6));
        j.report(ctx, "am_handcoded", op, arg8 ? 8 : 0, "latency_us", per_op(a, n, 1e6));
        ctx.request(1, st.stop);
    } else if (ctx.rank() == 1) {
        serve(ctx, j, st);
    }
    ctx.barrier();
}

void async_rate(am::context& ctx, const job& j, am_state& st) {
    const uint64_t n = j.p.calls;
    if (ctx.rank() == 0) {
        auto rpc_loop = [&](uint64_t k) {
            std::vector<am::future<uint64_t>> ring(in_flight);
            auto collect = [&](uint64_t i) {
                am::future<uint64_t>& f = ring[i % in_flight];
                if (f.valid() && f.get() != i + 1) j.error(ctx, "am::rpc async result");
            };
            for (uint64_t i = 0; i < k; ++i) {
                if (i >= in_flight) collect(i - in_flight);
                ring[i % in_flight] = am::rpc<&rpc_bench_arg8_fn>(ctx, 1, i);
            }
            for (uint64_t i = k > in_flight ? k - in_flight : 0; i < k; ++i) collect(i);
        };
        auto am_loop = [&](uint64_t k) {
            const uint64_t base = st.pongs;
            for (uint64_t i = 0; i < k; ++i) {
                j.wait(ctx, [&] { return i - (st.pongs - base) < in_flight; });
                ctx.request(1, st.ping8, i);
            }
            j.wait(ctx, [&] { return st.pongs - base >= k; });
            if (st.last != k) j.error(ctx, "hand-coded async: last reply");
        };
        rpc_loop(n / 10 + 1);
        am_loop(n / 10 + 1);
        std::vector<double> r, a;
        for (int rep = 0; rep < j.p.reps; ++rep) {
            r.push_back(timed([&] { rpc_loop(n); }));
            a.push_back(timed([&] { am_loop(n); }));
        }
        std::vector<double> rr, ar;
        for (double s : r) rr.push_back(static_cast<double>(n) / s / 1e6);
        for (double s : a) ar.push_back(static_cast<double>(n) / s / 1e6);
        j.report(ctx, "am_rpc", "async_rate", 8, "rate_Mops", rr);
        j.report(ctx, "am_handcoded", "async_rate", 8, "rate_Mops", ar);
        ctx.request(1, st.stop);
    } else if (ctx.rank() == 1) {
        serve(ctx, j, st);
    }
    ctx.barrier();
}

/// The flood's kinds of receiving handler.
enum class kind { plain, oam, oam_free, oam_held };

/// One batch: rank 1 sends `batch` messages to `k`'s handler while rank 0 does not poll, then
/// rank 0 handles them; rank 0 returns the seconds its polls took. `b` counts batches (the
/// same sequence on both ranks).
double flood_batch(am::context& ctx, const job& j, am_state& st, kind k, uint64_t& b) {
    ++b;
    const uint64_t n = j.p.batch;
    if (ctx.rank() == 1) {
        j.spin([&] { return j.ctl.go.load(std::memory_order_acquire) >= b; });
        const auto h = k == kind::plain ? st.plain : k == kind::oam ? st.oam : st.oam_lock;
        for (uint64_t i = 0; i < n; ++i) ctx.request(0, h, i);
        j.ctl.filled.store(b, std::memory_order_release);
        return 0;
    }
    if (ctx.rank() != 0) return 0;
    const uint64_t handled = st.handled + n, finished = st.finished + n;
    if (k == kind::oam_held) st.m->lock();  // free: rank code takes it at once
    j.ctl.go.store(b, std::memory_order_release);
    j.spin([&] { return j.ctl.filled.load(std::memory_order_acquire) >= b; });
    const auto t0 = bench_clock::now();
    if (k == kind::plain || k == kind::oam) {
        while (st.handled < handled) ctx.poll();
    } else {
        if (k == kind::oam_held) {
            while (st.started < finished) ctx.poll();  // every handler is blocked in lock()
            st.m->unlock();
        }
        while (st.finished < finished) ctx.poll();
    }
    return seconds_since(t0);
}

/// Seconds of `batches` batches of kind `k`; checks the optimistic counters moved as expected.
double flood_rep(am::context& ctx, const job& j, am_state& st, kind k, uint64_t& b,
                 uint64_t batches) {
    const am::oam_stats before = am::optimistic_stats(ctx);
    double s = 0;
    for (uint64_t i = 0; i < batches; ++i) s += flood_batch(ctx, j, st, k, b);
    if (ctx.rank() != 0) return s;
    const am::oam_stats after = am::optimistic_stats(ctx);
    const uint64_t n = batches * j.p.batch;
    const uint64_t started = after.handlers - before.handlers;
    const uint64_t blocked = after.blocked - before.blocked;
    const uint64_t want_started = k == kind::plain ? 0 : n;
    const uint64_t want_blocked = k == kind::oam_held ? n : 0;
    if (started < want_started || (k == kind::plain && started != 0) || blocked != want_blocked) {
        j.error(ctx, "flood kind " + std::to_string(static_cast<int>(k)) + ": " +
                         std::to_string(started) + " optimistic handlers started, " +
                         std::to_string(blocked) + " blocked; expected " +
                         std::to_string(want_started) + " and " + std::to_string(want_blocked));
    }
    return s;
}

void flood(am::context& ctx, const job& j, am_state& st) {
    const bool noblock = wants(j.p, "optimistic_noblock"), promo = wants(j.p, "promotion");
    uint64_t b = 0;
    const uint64_t batches = j.p.batches;
    const double n = static_cast<double>(batches * j.p.batch);
    for (kind k : {kind::plain, kind::oam, kind::oam_free, kind::oam_held}) {
        (void)flood_rep(ctx, j, st, k, b, 1);  // warm-up (stacks, rings, caches)
    }
    std::vector<double> plain, oam, diff, free_ns, held_ns, promotion;
    for (int rep = 0; rep < j.p.reps; ++rep) {
        if (noblock) {
            plain.push_back(flood_rep(ctx, j, st, kind::plain, b, batches) * 1e9 / n);
            oam.push_back(flood_rep(ctx, j, st, kind::oam, b, batches) * 1e9 / n);
            diff.push_back(oam.back() - plain.back());
        }
        if (promo) {
            free_ns.push_back(flood_rep(ctx, j, st, kind::oam_free, b, batches) * 1e9 / n);
            held_ns.push_back(flood_rep(ctx, j, st, kind::oam_held, b, batches) * 1e9 / n);
            promotion.push_back(held_ns.back() - free_ns.back());
        }
    }
    if (noblock) {
        j.report(ctx, "plain_handler", "optimistic_noblock", 8, "ns", plain);
        j.report(ctx, "am_rpc", "optimistic_noblock", 8, "ns", oam);
        j.report(ctx, "oam-plain", "optimistic_noblock", 8, "ns", diff);
    }
    if (promo) {
        j.report(ctx, "am_rpc", "promotion", 8, "uncontended_ns", free_ns);
        j.report(ctx, "am_rpc", "promotion", 8, "blocked_ns", held_ns);
        j.report(ctx, "am_rpc", "promotion", 8, "ns", promotion);
    }
    ctx.barrier();
}

void am_job(am::context& ctx, const job& j) {
    am_state st;
    register_am(ctx, st);
    if (wants(j.p, "null_rtt")) rtt(ctx, j, st, false);
    if (wants(j.p, "arg8_rtt")) rtt(ctx, j, st, true);
    if (wants(j.p, "async_rate")) async_rate(ctx, j, st);
    if (wants(j.p, "optimistic_noblock") || wants(j.p, "promotion")) flood(ctx, j, st);
    ctx.quiesce();
}

/// Runs a call on a pool thread and replies from there.
void trpc_run(am::context& ctx, const job& j, trpc_state& st, const trpc_call& c) {
    switch (c.fn) {
        case fn_null:
            ctx.request(c.caller, st.reply, c.id, 0, 0);
            break;
        case fn_arg8:
            ctx.request(c.caller, st.reply, c.id, c.a + 1, 0);
            break;
        case fn_insert: {
            auto& b = st.table->of(c.a);
            {
                std::lock_guard<std::mutex> g(b.lock);
                dht_table<std::mutex>::insert(b, c.a, c.b);
            }
            ctx.request(c.caller, st.reply, c.id, 0, 0);
            break;
        }
        case fn_find: {
            auto& b = st.table->of(c.a);
            uint64_t v = 0;
            {
                std::lock_guard<std::mutex> g(b.lock);
                v = dht_table<std::mutex>::find(b, c.a);
            }
            ctx.request(c.caller, st.reply, c.a, v, 1);
            break;
        }
        case fn_uts: {
            const uts_tree& t = j.p.tree;
            st.nodes.fetch_add(t.search(c.a, c.b, [&](uint64_t ch, uint64_t d) {
                j.ctl.pending.fetch_add(1);
                ctx.request(uts_tree::rank_of(ch, ctx.size()), st.call, uint64_t{fn_uts}, ch, d, 0);
            }));
            j.ctl.pending.fetch_sub(1);
            break;
        }
        default:
            break;
    }
}

}  // namespace

void register_trpc(am::context& ctx, const job& j, trpc_state& st) {
    st.call = ctx.handler([&st](am::token& t, uint64_t fn, uint64_t a, uint64_t b, uint64_t id) {
        st.pool->push(trpc_call{fn, a, b, id, t.source()});
    });
    st.reply = ctx.handler([&st, &j](am::token& t, uint64_t id, uint64_t v, uint64_t check) {
        if (check != 0 && v != dht_value(id)) j.error(t.ctx(), "TRPC dht find");
        st.last.store(v, std::memory_order_relaxed);
        st.replies.fetch_add(1, std::memory_order_release);
    });
    st.stop = ctx.handler([&st](am::token&) { st.stops.fetch_add(1); });
    // Before the barrier: a call may arrive while this rank is still inside it.
    st.pool = std::make_unique<trpc_pool>(
        j.p.pool, [&ctx, &j, &st](const trpc_call& c) { trpc_run(ctx, j, st, c); });
    ctx.barrier();
}

namespace {

void trpc_rtt_rate(am::context& ctx, const job& j, trpc_state& st) {
    if (ctx.rank() == 0) {
        auto rtt_loop = [&](uint64_t k, trpc_fn fn) {
            for (uint64_t i = 0; i < k; ++i) {
                const uint64_t want = st.replies.load() + 1;
                ctx.request(1, st.call, uint64_t{fn}, i, uint64_t{0}, i);
                j.wait(ctx, [&] { return st.replies.load(std::memory_order_acquire) >= want; });
                if (fn == fn_arg8 && st.last.load() != i + 1) j.error(ctx, "TRPC arg8 result");
            }
        };
        auto rate_loop = [&](uint64_t k) {
            const uint64_t base = st.replies.load();
            for (uint64_t i = 0; i < k; ++i) {
                j.wait(ctx, [&] { return i - (st.replies.load() - base) < in_flight; });
                ctx.request(1, st.call, uint64_t{fn_arg8}, i, uint64_t{0}, i);
            }
            j.wait(ctx, [&] { return st.replies.load() - base >= k; });
        };
        const uint64_t n = j.p.trpc_iters, calls = j.p.trpc_calls;
        for (trpc_fn fn : {fn_null, fn_arg8}) {
            const char* op = fn == fn_null ? "null_rtt" : "arg8_rtt";
            if (!wants(j.p, op)) continue;
            rtt_loop(n / 10 + 1, fn);
            std::vector<double> s;
            for (int rep = 0; rep < j.p.reps; ++rep) s.push_back(timed([&] { rtt_loop(n, fn); }));
            j.report(ctx, "trpc", op, fn == fn_null ? 0 : 8, "latency_us", per_op(s, n, 1e6));
        }
        if (wants(j.p, "async_rate")) {
            rate_loop(calls / 10 + 1);
            std::vector<double> r;
            for (int rep = 0; rep < j.p.reps; ++rep) {
                r.push_back(static_cast<double>(calls) / timed([&] { rate_loop(calls); }) / 1e6);
            }
            j.report(ctx, "trpc", "async_rate", 8, "rate_Mops", r);
        }
        ctx.request(1, st.stop);
    } else if (ctx.rank() == 1) {
        ++st.stops_seen;
        j.wait(ctx, [&] { return st.stops.load() >= st.stops_seen; });
    }
    ctx.barrier();
}

void trpc_job(am::context& ctx, const job& j) {
    trpc_state st;
    register_trpc(ctx, j, st);
    trpc_rtt_rate(ctx, j, st);
    ctx.quiesce();
    st.pool.reset();
}

// ------------------------------------------------------------------------ the ratios

/// "rpc/am" and "trpc/rpc" lines: how many times longer the first system takes.
void add_ratios(reporter& rep) {
    const std::vector<result> all = rep.results();
    auto find = [&](const char* system, const result& like) -> std::optional<result> {
        for (const result& r : all) {
            if (std::string_view(r.system) == system && std::string_view(r.op) == like.op &&
                std::string_view(r.metric) == like.metric && r.ranks == like.ranks) {
                return r;
            }
        }
        return std::nullopt;
    };
    for (const result& rpc : all) {
        const std::string_view m = rpc.metric;
        if (std::string_view(rpc.system) != "am_rpc" ||
            (m != "latency_us" && m != "seconds" &&
             (m != "rate_Mops" || std::string_view(rpc.op) == "dht" ||
              std::string_view(rpc.op) == "uts"))) {
            continue;
        }
        const bool rate = m == "rate_Mops";
        auto ratio = [&](const result& a, const result& b, const char* name) {
            // time(a)/time(b): for a rate, rate(b)/rate(a). min-max: the ratio's range
            // (reporter's ratio_of).
            const summary sa{a.median, a.min, a.max, a.reps}, sb{b.median, b.min, b.max, b.reps};
            const summary s = rate ? ratio_of(sb, sa) : ratio_of(sa, sb);
            rep.add(make_result(bench_name, name, a.transport, a.ranks, a.op, a.bytes, "time_ratio",
                                s));
        };
        if (auto am = find("am_handcoded", rpc)) ratio(rpc, *am, "rpc/am");
        if (auto tr = find("trpc", rpc)) ratio(*tr, rpc, "trpc/rpc");
    }
}

// ------------------------------------------------------------------------------ main

int run_all(plan& p) {
    reporter rep(output::json);
    int status = 0;
    auto run = [&](int ranks, bool trpc, const rank_body& body) {
        const int s = run_job(p, ranks, trpc, body, rep);
        if (status == 0) status = s;
    };
    const bool am2 = wants(p, "null_rtt") || wants(p, "arg8_rtt") || wants(p, "async_rate") ||
                     wants(p, "optimistic_noblock") || wants(p, "promotion");
    if (am2) run(2, false, am_job);
    if (wants(p, "null_rtt") || wants(p, "arg8_rtt") || wants(p, "async_rate")) {
        run(2, true, trpc_job);
    }
    if (wants(p, "dht")) {
        for (uint64_t r : p.dht_ranks) {
            run(static_cast<int>(r), false, dht_am_job);
            run(static_cast<int>(r), true, dht_trpc_job);
        }
    }
    if (wants(p, "uts")) {
        p.uts_nodes = p.tree.count();
        std::fprintf(stderr, "rpc_bench: uts tree of depth %llu: %llu nodes (sequential count)\n",
                     static_cast<unsigned long long>(p.tree.max_depth),
                     static_cast<unsigned long long>(p.uts_nodes));
        for (uint64_t r : p.uts_ranks) {
            run(static_cast<int>(r), false, uts_am_job);
            run(static_cast<int>(r), true, uts_trpc_job);
        }
    }
    add_ratios(rep);
    if (status != 0) std::fprintf(stderr, "rpc_bench: FAILED (status %d)\n", status);
    return status;
}

/// --count-loop N: one rank on the threads transport calls itself N times through am::rpc
/// (rpc_bench_rpc_loop) and N times through a hand-coded request + reply (rpc_bench_am_loop),
/// then sends itself N messages to a plain (rpc_bench_plain_loop) and N to an optimistic
/// handler (rpc_bench_oam_loop), for valgrind --tool=callgrind --toggle-collect=<loop>.
int count_loops(uint64_t n) {
    am::config cfg = am::config::from_env();
    cfg.ranks = 1;
    cfg.transport = am::transport_kind::threads;
    return am::run(cfg, [n](am::context& ctx) {
        uint64_t pongs = 0;
        am::rpc_register<&rpc_bench_null_fn>(ctx);
        auto pong = ctx.handler([&pongs](am::token&) { ++pongs; });
        auto ping = ctx.handler([pong](am::token& t) { t.reply(pong); });
        ctx.barrier();
        for (uint64_t i = 0; i < n / 10 + 1; ++i) (void)am::rpc<&rpc_bench_null_fn>(ctx, 0).get();
        rpc_bench_rpc_loop(ctx, 0, n);
        for (uint64_t i = 0; i < n / 10 + 1; ++i) {
            const uint64_t want = pongs + 1;
            ctx.request(0, ping);
            while (pongs < want) ctx.poll();
        }
        rpc_bench_am_loop(ctx, 0, ping, pongs, n);
        uint64_t handled = 0;
        auto count = [&handled](am::token&, uint64_t) { ++handled; };
        const count_handler plain = ctx.handler(count);
        const count_handler oam = am::optimistic_handler(ctx, count);
        ctx.barrier();
        rpc_bench_handler_loop(ctx, plain, handled, n / 10 + 1);
        rpc_bench_plain_loop(ctx, plain, handled, n);
        rpc_bench_handler_loop(ctx, oam, handled, n / 10 + 1);
        rpc_bench_oam_loop(ctx, oam, handled, n);
        std::printf(
            "rpc_bench: %llu null RPC round trips, hand-coded AM round trips, and "
            "messages to a plain and to an optimistic handler\n",
            static_cast<unsigned long long>(n));
    });
}

const char* const usage =
    "rpc_bench: optimistic active messages and RPC (am_rpc) against hand-coded AM\n"
    "(am_handcoded), TRPC (trpc) and plain handlers (plain_handler). JSON lines on stdout.";
// The options, bound to `p`.
std::vector<option_spec> option_table(plan& p) {
    auto ranks = [](std::vector<uint64_t>& v, const char* flag) {
        return [&v, flag](const std::string& x) { v = to_counts(flag, x, 1, 256); };
    };
    return {
        {"--ops", "a,b,...", "null_rtt,arg8_rtt,async_rate,optimistic_noblock,promotion,dht,uts",
         [&p](const std::string& v) {
             p.ops = to_choices("--ops", v,
                                {"null_rtt", "arg8_rtt", "async_rate", "optimistic_noblock",
                                 "promotion", "dht", "uts"});
         }},
        {"--quick", nullptr, "every op once, small (a smoke run; under a minute)",
         store_flag(p.quick)},
        {"--json", nullptr, "accepted for symmetry (the output is always JSON lines)",
         [](const std::string&) {}},
        {"--transport", "T", "threads (default, or AM_TRANSPORT) or shm",
         [&p](const std::string& v) {
             p.transport = to_choice("--transport", v, {"threads", "shm"});
         }},
        {"--reps", "N", "repetitions per point (default 5; --quick 2)",
         [&p](const std::string& v) { p.reps = static_cast<int>(to_count("--reps", v, 1)); }},
        {"--iters", "N", "round trips per repetition (default 20000; TRPC a quarter)",
         store_count(p.iters, "--iters", 1)},
        {"--calls", "N", "async_rate: calls per repetition (default 200000; TRPC a quarter)",
         store_count(p.calls, "--calls", 1)},
        {"--batch", "N", "flood: messages per batch (default 1000, at most 4000)",
         [&p](const std::string& v) {
             p.batch = to_count("--batch", v, 1);
             if (p.batch > 4000)
                 throw std::invalid_argument(
                     "--batch: at most 4000 (a batch "
                     "must fit the ring unpolled)");
         }},
        {"--batches", "N", "flood: batches per repetition and handler kind (default 20)",
         store_count(p.batches, "--batches", 1)},
        {"--dht-keys", "N", "dht: keys inserted, all ranks together (default 131072)",
         store_count(p.dht_keys, "--dht-keys", 1)},
        {"--dht-ranks", "a,b,..", "dht: rank counts (default 2,4,8,16,32,64)",
         ranks(p.dht_ranks, "--dht-ranks")},
        {"--uts-depth", "N", "uts: depth of the tree (default 9)",
         store_count(p.tree.max_depth, "--uts-depth", 1)},
        {"--uts-local", "N", "uts: levels a spawned task searches below itself (default 3)",
         store_count(p.tree.local_levels, "--uts-local", 1)},
        {"--uts-ranks", "a,b,..", "uts: rank counts (default 2,4)",
         ranks(p.uts_ranks, "--uts-ranks")},
        {"--pool", "N", "TRPC: kernel threads per rank (default 2)",
         [&p](const std::string& v) { p.pool = static_cast<int>(to_count("--pool", v, 1)); }},
        {"--count-loop", "N",
         "only the callgrind loops (1 rank): N null RPCs, N AM round trips,\n"
         "N messages to a plain and N to an optimistic handler",
         store_count(p.count_loop, "--count-loop", 1)},
    };
}

plan parse(int argc, char** argv) {
    plan p;
    const char* env = std::getenv("AM_TRANSPORT");
    p.transport = env != nullptr && std::string_view(env) == "shm" ? "shm" : "threads";
    p.ops = {"null_rtt", "arg8_rtt", "async_rate", "optimistic_noblock", "promotion", "dht", "uts"};
    const std::vector<std::string> given = parse_args(argc, argv, usage, option_table(p));
    auto unless_given = [&](const char* flag, auto& field, auto quick_value) {
        if (p.quick && std::find(given.begin(), given.end(), flag) == given.end()) {
            field = quick_value;
        }
    };
    unless_given("--reps", p.reps, 2);
    unless_given("--iters", p.iters, 1000);
    unless_given("--calls", p.calls, 5000);
    unless_given("--batch", p.batch, 200);
    unless_given("--batches", p.batches, 2);
    unless_given("--dht-keys", p.dht_keys, 2048);
    unless_given("--dht-ranks", p.dht_ranks, std::vector<uint64_t>{2, 4});
    unless_given("--uts-depth", p.tree.max_depth, 5);
    unless_given("--uts-ranks", p.uts_ranks, std::vector<uint64_t>{2});
    p.trpc_iters = std::max<uint64_t>(1, p.iters / 4);
    p.trpc_calls = std::max<uint64_t>(1, p.calls / 4);
    return p;
}

}  // namespace
}  // namespace am::bench::rpc

int main(int argc, char** argv) {
    using namespace am::bench::rpc;
    plan p = parse(argc, argv);
    try {
        if (p.count_loop != 0) return count_loops(p.count_loop);
        return run_all(p);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "rpc_bench: %s\n", e.what());
        return 1;
    }
}
