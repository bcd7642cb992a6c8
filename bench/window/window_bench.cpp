// SPDX-License-Identifier: MIT
// window_bench: the figures of section V of "MPI-Interoperable Generalized Active Messages"
// on am's window layer (am::window), with the MPI baselines (mpi_window_baseline, started
// under mpirun) in the same invocation. JSON lines on stdout (see docs/window-results.md):
//
//   window_bench [--figures 3a,3b,3c,3d,4,5,6,7] [--transport shm|threads] [--quick] ...
//
// The operations (window_common.hpp): search (segment = 20 chars in, 20 out; the target's
// window holds a sorted database of --db keys, the AM's persistent range is all of it) and
// abssum (segment = 100 ints in, 100 out, out = |in| + |p| over the AM's persistent range of
// segments x 100 ints). 100 segments per AM. Every window is `window::allocate`d, with an
// attached buffer of --attach bytes at every rank. Outputs are checked after every repetition.
//
// 3a/3c latency (search/abssum), 2 ranks pinned to cores 0 and 1, origin 0, target 1: per
//   pipeline unit k in --units, --iters times lock(1) + one AM + unlock(1) (epoch "lock"), and
//   lock_all once + (AM + flush(1)) per AM (epoch "flush"); µs per AM. Beside it
//   function_us (the kernel over 100 segments in units of k, timed alone at the origin) and
//   roundtrip_us (ctx.send of the AM's input bytes, ctx.send of its output bytes back: the msg
//   layer, rendezvous above 8 KiB) and am_roundtrip_us (the faster of a raw medium and a raw
//   long AM round trip of the same bytes: request with the input, reply with the output). The
//   three round trips also get lines of their own (op msg_roundtrip, am_medium_roundtrip,
//   am_long_roundtrip; measured in the same job, repetitions interleaved).
// 3b/3d throughput (search/abssum), 2 ranks, target 0, origin 1: per repetition --epochs
//   fence epochs (default 1) of --ams AMs each, per unit k; AMs/s; segments_internal/
//   segments_user of the origin. The baselines do the same --ams x --epochs AMs.
// 4   throughput of search against the internal buffer (--buffers), unit --unit (20).
// 5   throughput of search with origins 1..R-1 on target 0, R in --ranks-list, per buffer.
// 6   alternating large (--large segments, one unit: more than the internal buffer) and small
//     (--small segments) search AMs, strict ordering vs none; AMs/s.
// 7   concurrency: every rank 0..R-1 issues AMs to target 0 in fence epochs without and with
//     epoch_assert::concurrent (origin-side execution on the mapped window); AMs/s. Beside
//     mpi_rma and mpi_twosided, the baseline mpi_shm: the kernel run by every origin directly
//     on the target's MPI_Win_allocate_shared memory in a fence epoch.
#include "lib/baseline.hpp"
#include "lib/options.hpp"
#include "lib/sys.hpp"
#include "window_common.hpp"

#include <am/am.hpp>
#include <am/window.hpp>

#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <functional>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

#ifndef AM_WINDOW_MPI_BASELINE
#define AM_WINDOW_MPI_BASELINE ""
#endif

namespace am::bench::window {
namespace {

using std::int32_t;
using std::size_t;
using std::uint64_t;

constexpr int stats_tag = 4242;
constexpr size_t input_sets = 8;

/// What the command line asks for.
struct plan {
    std::vector<std::string> figures;
    std::string transport = "shm";
    bool quick = false, baseline = true;
    int reps = 5;
    uint64_t iters = 200;              // latency: AMs per repetition
    uint64_t ams = 100000;             // throughput: AMs per epoch (all origins)
    uint64_t epochs = 1;               // throughput: epochs per repetition
    uint64_t db = 1024;                // search database keys
    uint64_t attach = 256 << 10;       // attached buffer at every rank
    uint64_t unit = 20;                // figs 4, 5: pipeline unit
    uint64_t large = 400, small = 10;  // fig 6
    uint64_t baseline_max_ranks = 8;   // figs 5, 7: MPI baselines up to this many ranks
    std::vector<uint64_t> units;       // figs 3
    std::vector<uint64_t> buffers;     // fig 4
    std::vector<uint64_t> buffers5;    // fig 5
    std::vector<uint64_t> ranks5, ranks7;
    std::vector<std::string> ops7 = {"search"};
    std::string mpirun;
};

// ----------------------------------------------------------------------------- the window

/// One window with both operations, its attached buffer, and the data of the AMs.
class bench_window {
  public:
    bench_window(am::context& ctx, const plan& p, size_t internal, unsigned ordering,
                 size_t max_segments)
        : _ctx(ctx),
          _p(p),
          _db_bytes((p.db * key_chars + 63) / 64 * 64),
          _win(am::window::allocate(ctx, _db_bytes + max_segments * abssum_ints * 4,
                                    am::window_info{ordering, internal, 0})),
          _attached(new (std::align_val_t{64}) std::byte[p.attach]) {
        const std::vector<char> db = make_database(p.db);
        const std::vector<int32_t> pi = make_persistent_ints(max_segments);
        std::memcpy(_win.memory().data(), db.data(), db.size());
        std::memcpy(_win.memory().data() + _db_bytes, pi.data(), pi.size() * 4);
        const size_t db_keys = p.db;
        _search = _win.register_op<char, char, char>(
            "window_bench.search", [db_keys](const am::window_args<char, char, char>& a) {
                search_kernel(a.input.data(), a.persistent.data(), db_keys, a.output.data(),
                              a.num_segments);
            });
        _abssum = _win.register_op<int32_t, int32_t, int32_t>(
            "window_bench.abssum", [](const am::window_args<int32_t, int32_t, int32_t>& a) {
                abssum_kernel(a.input.data(), a.persistent.data() + a.segment_offset * abssum_ints,
                              a.output.data(), a.num_segments);
            });
        _win.attach({_attached.get(), p.attach});
        ctx.barrier();
    }
    bench_window(const bench_window&) = delete;
    bench_window& operator=(const bench_window&) = delete;
    ~bench_window() {
        try {
            _ctx.barrier();
            (void)_win.detach();
            _win.free();
        } catch (...) {  // the job is failing; am::run reports it
        }
    }

    am::window& w() { return _win; }
    [[nodiscard]] size_t db_bytes() const { return _db_bytes; }

    /// Issues one AM of `op` with `n` segments from `in` to `out`.
    void issue(const std::string& op, int target, const std::byte* in, std::byte* out, size_t n,
               size_t unit) {
        const am::am_options opt{unit};
        if (op == "search") {
            _win.am(_search, target,
                    std::span<const char>(reinterpret_cast<const char*>(in), n * 20), key_chars,
                    std::span<char>(reinterpret_cast<char*>(out), n * key_chars), key_chars, n, 0,
                    _p.db * key_chars, opt);
        } else {
            const size_t ints = n * abssum_ints;
            _win.am(_abssum, target,
                    std::span<const int32_t>(reinterpret_cast<const int32_t*>(in), ints),
                    abssum_ints, std::span<int32_t>(reinterpret_cast<int32_t*>(out), ints),
                    abssum_ints, n, _db_bytes / 4, ints, opt);
        }
    }

  private:
    am::context& _ctx;
    const plan& _p;
    size_t _db_bytes;
    am::window _win;
    struct aligned_delete {
        void operator()(std::byte* b) const { ::operator delete[](b, std::align_val_t{64}); }
    };
    std::unique_ptr<std::byte[], aligned_delete> _attached;
    am::window_op<char, char, char> _search;
    am::window_op<int32_t, int32_t, int32_t> _abssum;
};

/// Inputs, outputs and reference outputs of AMs of one op and segment count.
struct am_data {
    std::string op;
    size_t segments = 0;
    std::vector<std::vector<std::byte>> in, out, ref;

    am_data(const plan& p, std::string o, size_t n) : op(std::move(o)), segments(n) {
        const size_t bytes = n * segment_bytes(op);
        const std::vector<char> db = make_database(p.db);
        const std::vector<int32_t> pi = make_persistent_ints(n);
        for (size_t s = 0; s < input_sets; ++s) {
            std::vector<std::byte> b(bytes), r(bytes);
            if (op == "search") {
                const std::vector<char> q = make_queries(s, n, p.db);
                std::memcpy(b.data(), q.data(), bytes);
                search_kernel(q.data(), db.data(), p.db, reinterpret_cast<char*>(r.data()), n);
            } else {
                const std::vector<int32_t> v = make_ints(s, n);
                std::memcpy(b.data(), v.data(), bytes);
                abssum_kernel(v.data(), pi.data(), reinterpret_cast<int32_t*>(r.data()), n);
            }
            in.push_back(std::move(b));
            ref.push_back(std::move(r));
            out.emplace_back(bytes);
        }
    }
    [[nodiscard]] size_t bytes() const { return segments * segment_bytes(op); }
    /// Clears the outputs of the sets used by `count` AMs.
    void clear(uint64_t count) {
        for (size_t s = 0; s < input_sets && s < count; ++s) {
            std::fill(out[s].begin(), out[s].end(), std::byte{0});
        }
    }
    /// Throws when an output of the first `count` AMs' sets is wrong.
    void check(uint64_t count, int rank, const char* what) const {
        for (size_t s = 0; s < input_sets && s < count; ++s) {
            if (out[s] != ref[s]) {
                throw std::runtime_error(std::string("window_bench: ") + what + " " + op +
                                         ": WRONG OUTPUT of input set " + std::to_string(s) +
                                         " on rank " + std::to_string(rank));
            }
        }
    }
};

/// The kernel alone over `n` segments in units of `k` (what the AM's function calls do), µs
/// per AM.
double function_us(const plan& p, am_data& d, size_t k, uint64_t iters) {
    const std::vector<char> db = make_database(p.db);
    const std::vector<int32_t> pi = make_persistent_ints(d.segments);
    const size_t seg = segment_bytes(d.op);
    const auto t0 = bench_clock::now();
    for (uint64_t i = 0; i < iters; ++i) {
        const std::byte* in = d.in[i % input_sets].data();
        std::byte* out = d.out[i % input_sets].data();
        for (size_t s = 0; s < d.segments; s += k) {
            const size_t n = std::min(k, d.segments - s);
            if (d.op == "search") {
                search_kernel(reinterpret_cast<const char*>(in + s * seg), db.data(), p.db,
                              reinterpret_cast<char*>(out + s * seg), n);
            } else {
                abssum_kernel(reinterpret_cast<const int32_t*>(in + s * seg),
                              pi.data() + s * abssum_ints,
                              reinterpret_cast<int32_t*>(out + s * seg), n);
            }
            asm volatile("" ::: "memory");  // keep every call
        }
    }
    return seconds_since(t0) / static_cast<double>(iters) * 1e6;
}

// ------------------------------------------------------------------------ rank helpers

/// Lets rank 0 release ranks that only serve (poll) while it measures.
struct release {
    std::atomic<uint64_t> count{0};
    am::handler<am::category::short_am> h;
};

void serve_until(am::context& ctx, release& r, uint64_t n) {
    if (ctx.size() <= usable_cores()) {
        while (r.count.load() < n) ctx.poll();
    } else {
        ctx.wait([&] { return r.count.load() >= n; });
    }
}

/// Origin-side counters summed over the ranks, on rank 0.
struct origin_stats {
    uint64_t internal = 0, user = 0, at_origin = 0, units_sent = 0, reservations = 0, overtaken = 0;
};

origin_stats delta(const am::window_stats& a, const am::window_stats& b) {
    return {b.segments_internal - a.segments_internal, b.segments_user - a.segments_user,
            b.units_at_origin - a.units_at_origin,     b.units_sent - a.units_sent,
            b.reservations - a.reservations,           b.overtaken - a.overtaken};
}

origin_stats gather(am::context& ctx, const origin_stats& mine) {
    if (ctx.rank() != 0) {
        ctx.send(0, stats_tag, std::as_bytes(std::span<const origin_stats>(&mine, 1)));
        return mine;
    }
    origin_stats sum = mine;
    for (int r = 1; r < ctx.size(); ++r) {
        origin_stats o;
        ctx.recv(r, stats_tag, std::as_writable_bytes(std::span<origin_stats>(&o, 1)));
        sum.internal += o.internal, sum.user += o.user, sum.at_origin += o.at_origin;
        sum.units_sent += o.units_sent, sum.reservations += o.reservations;
        sum.overtaken += o.overtaken;
    }
    return sum;
}

/// AMs of `rank` out of `total`, spread evenly over ranks first..size-1.
uint64_t share(uint64_t total, int rank, int first, int size) {
    if (rank < first) return 0;
    const auto origins = static_cast<uint64_t>(size - first);
    return total / origins + (static_cast<uint64_t>(rank - first) < total % origins ? 1 : 0);
}

/// One throughput point: `epochs` fence epochs with `assert` of `total` AMs each from ranks
/// first..size-1 to target 0, cycling over `kinds` (data, pipeline unit), `reps` times; AMs/s
/// per repetition and the origin stats of the last one (rank 0).
struct thr_result {
    std::vector<double> amps;
    origin_stats st;
};

thr_result throughput(am::context& ctx, bench_window& bw, std::vector<am_data>& kinds,
                      const std::vector<size_t>& units, uint64_t total, uint64_t epochs, int first,
                      int reps, unsigned assert) {
    thr_result res;
    const uint64_t mine = share(total, ctx.rank(), first, ctx.size());
    for (int r = -1; r < reps; ++r) {  // -1: warm-up, one epoch of a tenth of the AMs
        const uint64_t n = r < 0 ? (mine + 9) / 10 : mine;
        const uint64_t ne = r < 0 ? 1 : epochs;
        for (am_data& d : kinds) d.clear(n);
        const am::window_stats before = bw.w().stats();
        bw.w().fence(assert);
        ctx.barrier();
        const auto t0 = bench_clock::now();
        for (uint64_t e = 0; e < ne; ++e) {
            for (uint64_t i = 0; i < n; ++i) {
                const size_t k = i % kinds.size();
                am_data& d = kinds[k];
                const size_t set = (i / kinds.size()) % input_sets;
                bw.issue(d.op, 0, d.in[set].data(), d.out[set].data(), d.segments, units[k]);
            }
            bw.w().fence(e + 1 < ne ? assert : am::epoch_assert::none);
        }
        ctx.barrier();  // every rank's AMs are complete: rank 0 times the slowest
        const double all = seconds_since(t0);
        for (size_t k = 0; k < kinds.size(); ++k) {
            kinds[k].check((n + kinds.size() - 1 - k) / kinds.size(), ctx.rank(), "throughput");
        }
        const origin_stats st = gather(ctx, delta(before, bw.w().stats()));
        if (r >= 0) {
            res.amps.push_back(static_cast<double>(total * epochs) / all);
            res.st = st;
        }
    }
    return res;
}

json_line am_line(const plan& p, am::context& ctx, const std::string& fig, const std::string& op,
                  const std::string& metric, const std::vector<double>& v, size_t unit,
                  size_t internal, unsigned ordering, int concurrent, size_t segments, uint64_t ams,
                  double bytes) {
    point_keys k;
    k.figure = fig;
    k.system = "am";
    k.transport = p.transport;
    k.ranks = ctx.size();
    k.op = op;
    k.bytes = static_cast<uint64_t>(bytes);
    k.metric = metric;
    k.pipeline_unit = static_cast<long>(unit);
    k.internal_buffer = static_cast<long>(internal);
    k.ordering = am::am_order::to_string(ordering);
    k.concurrent = concurrent;
    k.segments = segments;
    k.ams = ams;
    json_line j = start_line(k, summarize3(v));
    j.num("attached_buffer", static_cast<double>(p.attach));
    return j;
}

void add_stats(json_line& j, const origin_stats& st, uint64_t epochs) {
    j.num("epochs", static_cast<double>(epochs));
    j.num("segments_internal", static_cast<double>(st.internal));
    j.num("segments_user", static_cast<double>(st.user));
    j.num("units_sent", static_cast<double>(st.units_sent));
    j.num("units_at_origin", static_cast<double>(st.at_origin));
    j.num("reservations", static_cast<double>(st.reservations));
    j.num("overtaken", static_cast<double>(st.overtaken));
}

// ------------------------------------------------------------------------------ figures

/// Polls until `pred()` holds: spinning when every rank has a core, else through ctx.wait
/// (which backs off), as the ranks that serve a latency run do.
template <class Pred>
void poll_until(am::context& ctx, Pred&& pred) {
    if (ctx.size() <= usable_cores()) {
        while (!pred()) ctx.poll();
    } else {
        ctx.wait(pred);
    }
}

/// The references of one AM's latency, 2 ranks, rank 0 asking and rank 1 answering with the
/// AM's input bytes one way and its output bytes back, nothing computed:
/// - msg: ctx.send / ctx.recv (the msg layer: eager up to 8 KiB, rendezvous above);
/// - medium: a medium request whose handler replies with a medium payload, copied into the
///   origin's output buffer by the reply handler (how the window layer moves units and
///   outputs);
/// - long: a long request written into a block of rank 1's segment whose handler replies
///   with a long payload written into a block of rank 0's segment.
class raw_roundtrips {
  public:
    raw_roundtrips(am::context& ctx, size_t in_bytes, size_t out_bytes)
        : _ctx(ctx), _in(in_bytes, std::byte{1}), _out(out_bytes, std::byte{2}), _got(out_bytes) {
        _req_m = ctx.handler([this](am::token& t, std::span<const std::byte>) {
            t.reply(_rep_m, std::span<const std::byte>(_out));
            _served.fetch_add(1);
        });
        _rep_m = ctx.handler([this](am::token&, std::span<const std::byte> p) {
            std::memcpy(_got.data(), p.data(), p.size());
            _replies.fetch_add(1);
        });
        _req_l = ctx.handler([this](am::token& t, std::span<std::byte>, uint64_t reply_at) {
            t.reply(_rep_l, std::span<const std::byte>(_out), reply_at);
            _served.fetch_add(1);
        });
        _rep_l = ctx.handler([this](am::token&, std::span<std::byte>) { _replies.fetch_add(1); });
        _block = ctx.allocate<std::byte>(std::max(in_bytes, out_bytes));
        _blocks = ctx.exchange(_block);
        ctx.barrier();
    }
    raw_roundtrips(const raw_roundtrips&) = delete;
    raw_roundtrips& operator=(const raw_roundtrips&) = delete;
    ~raw_roundtrips() {
        try {
            _ctx.barrier();
            _ctx.deallocate(_block);
        } catch (...) {  // the job is failing; am::run reports it
        }
    }

    /// µs per round trip of `kind` ("msg", "medium", "long") over `iters` round trips, on
    /// rank 0 (0 on rank 1).
    double measure(const std::string& kind, uint64_t iters) {
        _served = 0;
        _replies = 0;
        _ctx.barrier();
        const auto t0 = bench_clock::now();
        if (_ctx.rank() == 0) {
            for (uint64_t i = 0; i < iters; ++i) ask(kind, i);
        } else if (_ctx.rank() == 1) {
            answer(kind, iters);
        }
        const double us = seconds_since(t0) / static_cast<double>(iters) * 1e6;
        _ctx.barrier();
        return _ctx.rank() == 0 ? us : 0;
    }

  private:
    void ask(const std::string& kind, uint64_t i) {
        if (kind == "msg") {
            _ctx.send(1, 1, _in);
            (void)_ctx.recv(1, 2, _got);
            return;
        }
        if (kind == "medium") {
            _ctx.request(1, _req_m, std::span<const std::byte>(_in));
        } else {
            _ctx.request(1, _req_l, std::span<const std::byte>(_in), _blocks[1].offset(),
                         _blocks[0].offset());
        }
        poll_until(_ctx, [&] { return _replies.load() > i; });
    }
    void answer(const std::string& kind, uint64_t iters) {
        if (kind == "msg") {
            std::vector<std::byte> buf(_in.size());
            for (uint64_t i = 0; i < iters; ++i) {
                (void)_ctx.recv(0, 1, buf);
                _ctx.send(0, 2, _out);
            }
            return;
        }
        poll_until(_ctx, [&] { return _served.load() >= iters; });
    }

    am::context& _ctx;
    std::vector<std::byte> _in, _out, _got;
    am::handler<am::category::medium> _req_m, _rep_m;
    am::handler<am::category::long_am, uint64_t> _req_l;
    am::handler<am::category::long_am> _rep_l;
    am::global_ptr<std::byte> _block;
    std::vector<am::global_ptr<std::byte>> _blocks;
    std::atomic<uint64_t> _served{0}, _replies{0};
};

/// The reference round trips of Fig. 3a/3c, repetitions interleaved so that they share the
/// machine's drift; prints one line per kind (rank 0) and returns the medians
/// {msg, fastest raw AM}.
std::pair<double, double> fig_roundtrips(am::context& ctx, const plan& p, const std::string& fig,
                                         const std::string& op, size_t bytes) {
    raw_roundtrips rt(ctx, bytes, bytes);
    const std::vector<std::string> kinds = {"msg", "medium", "long"};
    std::vector<std::vector<double>> v(kinds.size());
    for (int r = -1; r < p.reps; ++r) {  // -1: warm-up
        const uint64_t iters = r < 0 ? std::max<uint64_t>(1, p.iters / 10) : p.iters;
        for (size_t k = 0; k < kinds.size(); ++k) {
            const double us = rt.measure(kinds[k], iters);
            if (r >= 0) v[k].push_back(us);
        }
    }
    if (ctx.rank() != 0) return {0, 0};
    std::vector<double> med;
    for (size_t k = 0; k < kinds.size(); ++k) {
        const std::string name =
            kinds[k] == "msg" ? "msg_roundtrip" : "am_" + kinds[k] + "_roundtrip";
        point_keys key;  // no window: unit, buffers, ordering and concurrency are null
        key.figure = fig;
        key.system = "am";
        key.transport = p.transport;
        key.ranks = ctx.size();
        key.op = name;
        key.bytes = bytes;
        key.metric = "latency_us";
        key.segments = paper_segments;
        key.ams = 1;
        json_line j = start_line(key, summarize3(v[k]));
        j.num("out_bytes", static_cast<double>(bytes)).str("sizes_of", op);
        j.print();
        med.push_back(summarize3(v[k]).median);
    }
    return {med[0], std::min(med[1], med[2])};
}

/// Fig. 3a (search) / 3c (abssum): latency of one AM per epoch against the pipeline unit.
void fig_latency(am::context& ctx, const plan& p, const std::string& fig, const std::string& op,
                 release& rel, uint64_t& released) {
    bench_window bw(ctx, p, 8 << 10, am::am_order::strict, paper_segments);
    am_data d(p, op, paper_segments);
    const auto [msg_us, raw_us] = fig_roundtrips(ctx, p, fig, op, d.bytes());
    for (uint64_t k : p.units) {
        for (const char* epoch : {"lock", "flush"}) {
            std::vector<double> v;
            if (ctx.rank() == 0) {
                for (int r = -1; r < p.reps; ++r) {
                    const uint64_t iters = r < 0 ? std::max<uint64_t>(1, p.iters / 10) : p.iters;
                    d.clear(iters);
                    const bool lock = std::string_view(epoch) == "lock";
                    const auto t0 = bench_clock::now();
                    if (!lock) bw.w().lock_all();
                    for (uint64_t i = 0; i < iters; ++i) {
                        const size_t set = i % input_sets;
                        if (lock) bw.w().lock(1, am::lock_type::shared);
                        bw.issue(op, 1, d.in[set].data(), d.out[set].data(), d.segments, k);
                        if (lock) {
                            bw.w().unlock(1);
                        } else {
                            bw.w().flush(1);
                        }
                    }
                    if (!lock) bw.w().unlock_all();
                    const double us = seconds_since(t0) / static_cast<double>(iters) * 1e6;
                    d.check(iters, 0, "latency");
                    if (r >= 0) v.push_back(us);
                }
                ctx.request(1, rel.h);
            } else {
                serve_until(ctx, rel, ++released);
            }
            ctx.barrier();
            if (ctx.rank() != 0) continue;
            std::vector<double> f;
            for (int r = 0; r < p.reps; ++r) f.push_back(function_us(p, d, k, p.iters));
            json_line j =
                am_line(p, ctx, fig, op, "latency_us", v, k, 8 << 10, am::am_order::strict, 0,
                        paper_segments, 1, static_cast<double>(d.bytes()));
            j.str("epoch", epoch).num("function_us", summarize3(f).median);
            j.num("roundtrip_us", msg_us).num("am_roundtrip_us", raw_us);
            j.print();
        }
    }
}

/// Fig. 3b (search) / 3d (abssum): throughput against the pipeline unit, 2 ranks.
void fig_throughput_units(am::context& ctx, const plan& p, const std::string& fig,
                          const std::string& op) {
    bench_window bw(ctx, p, 8 << 10, am::am_order::strict, paper_segments);
    std::vector<am_data> kinds;
    kinds.emplace_back(p, op, paper_segments);
    for (uint64_t k : p.units) {
        const thr_result r = throughput(ctx, bw, kinds, {k}, p.ams, p.epochs, 1, p.reps, 0);
        if (ctx.rank() != 0) continue;
        json_line j =
            am_line(p, ctx, fig, op, "throughput_amps", r.amps, k, 8 << 10, am::am_order::strict, 0,
                    paper_segments, p.ams, static_cast<double>(kinds[0].bytes()));
        add_stats(j, r.st, p.epochs);
        j.print();
    }
}

/// Fig. 4 (and one rank count of fig. 5): throughput of search against the internal buffer.
void fig_buffers(am::context& ctx, const plan& p, const std::string& fig,
                 const std::vector<uint64_t>& buffers) {
    std::vector<am_data> kinds;
    kinds.emplace_back(p, "search", paper_segments);
    for (uint64_t b : buffers) {
        bench_window bw(ctx, p, b, am::am_order::strict, paper_segments);
        const thr_result r = throughput(ctx, bw, kinds, {p.unit}, p.ams, p.epochs, 1, p.reps, 0);
        if (ctx.rank() != 0) continue;
        json_line j = am_line(p, ctx, fig, "search", "throughput_amps", r.amps, p.unit, b,
                              am::am_order::strict, 0, paper_segments, p.ams,
                              static_cast<double>(kinds[0].bytes()));
        add_stats(j, r.st, p.epochs);
        j.print();
    }
}

/// Fig. 6: alternating large and small search AMs, strict ordering vs none.
void fig_ordering(am::context& ctx, const plan& p) {
    std::vector<am_data> kinds;
    kinds.emplace_back(p, "search", p.large);
    kinds.emplace_back(p, "search", p.small);
    const double bytes = static_cast<double>(kinds[0].bytes() + kinds[1].bytes()) / 2;
    for (unsigned ordering : {am::am_order::strict, am::am_order::none}) {
        bench_window bw(ctx, p, 8 << 10, ordering, p.large);
        const thr_result r =
            throughput(ctx, bw, kinds, {p.large, p.small}, p.ams, p.epochs, 1, p.reps, 0);
        if (ctx.rank() != 0) continue;
        json_line j = am_line(p, ctx, "6", "search", "throughput_amps", r.amps, p.large, 8 << 10,
                              ordering, 0, p.large, p.ams, bytes);
        j.str("segments_cycle", std::to_string(p.large) + "," + std::to_string(p.small));
        add_stats(j, r.st, p.epochs);
        j.print();
    }
}

/// Fig. 7: every rank issues AMs to rank 0, without and with the concurrency assertion.
void fig_concurrency(am::context& ctx, const plan& p) {
    for (const std::string& op : p.ops7) {
        bench_window bw(ctx, p, 8 << 10, am::am_order::strict, paper_segments);
        std::vector<am_data> kinds;
        kinds.emplace_back(p, op, paper_segments);
        for (unsigned assert : {am::epoch_assert::none, am::epoch_assert::concurrent}) {
            const thr_result r =
                throughput(ctx, bw, kinds, {0}, p.ams, p.epochs, 0, p.reps, assert);
            if (ctx.rank() != 0) continue;
            json_line j = am_line(p, ctx, "7", op, "throughput_amps", r.amps, 0, 8 << 10,
                                  am::am_order::strict, assert != 0 ? 1 : 0, paper_segments, p.ams,
                                  static_cast<double>(kinds[0].bytes()));
            add_stats(j, r.st, p.epochs);
            j.num("mapped", bw.w().mapped(0) ? 1 : 0);
            j.print();
        }
    }
}

// ------------------------------------------------------------------------------- jobs

/// Runs `body` on `ranks` am ranks (pinned to core r when `pin`); rank 0 prints its lines.
int run_job(const plan& p, int ranks, bool pin,
            const std::function<void(am::context&, release&, uint64_t&)>& body) {
    am::config cfg;
    cfg.ranks = ranks;
    cfg.transport =
        p.transport == "threads" ? am::transport_kind::threads : am::transport_kind::shm;
    cfg.segment_bytes = ranks > 16 ? size_t{4} << 20 : size_t{16} << 20;
    std::fflush(nullptr);  // forked ranks must not print what this process buffered
    affinity_guard keep;
    const int status = am::run(cfg, [&](am::context& ctx) {
        if (pin) pin_to_core(ctx.rank());
        release rel;
        rel.h = ctx.handler([&rel](am::token&) { rel.count.fetch_add(1); });
        ctx.barrier();
        uint64_t released = 0;
        body(ctx, rel, released);
        ctx.quiesce();
    });
    if (status != 0) std::fprintf(stderr, "window_bench: am::run failed with status %d\n", status);
    return status;
}

std::string baseline_path() {
    const std::string built = AM_WINDOW_MPI_BASELINE;
    if (!built.empty() && access(built.c_str(), X_OK) == 0) return built;
    std::string self = self_path();
    if (self.empty()) return {};
    self.resize(self.rfind('/') + 1);
    self += "mpi_window_baseline";
    return access(self.c_str(), X_OK) == 0 ? self : std::string{};
}

/// Runs mpi_window_baseline on `ranks` MPI ranks with `args`; its lines go to stdout.
bool run_baseline(const plan& p, int ranks, std::vector<std::string> args) {
    if (!p.baseline) return true;
    const std::string exe = baseline_path();
    if (exe.empty()) {
        std::fprintf(stderr, "window_bench: NO MPI BASELINE: mpi_window_baseline was not built\n");
        return false;
    }
    options o;
    o.mpirun = p.mpirun;
    o.ranks = ranks;
    std::vector<std::string> argv = mpirun_command(o, ranks, ranks <= usable_cores());
    argv.push_back(exe);
    argv.insert(argv.end(), args.begin(), args.end());
    argv.insert(argv.end(), {"--reps", std::to_string(p.reps), "--db", std::to_string(p.db)});
    std::vector<std::string> env;
    if (geteuid() == 0 && launcher_is_open_mpi()) {
        env = {"OMPI_ALLOW_RUN_AS_ROOT=1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1"};
    }
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) return false;
    if (pid == 0) exec_with_env(argv, env, "window_bench");
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        std::fprintf(stderr, "window_bench: NO MPI BASELINE: '%s -n %d ... %s' failed\n",
                     argv[0].c_str(), ranks, exe.c_str());
        return false;
    }
    return true;
}

bool wants(const plan& p, const std::string& f) {
    return std::find(p.figures.begin(), p.figures.end(), f) != p.figures.end();
}

int run_figures(const plan& p) {
    int status = 0;
    bool base_ok = true;
    const bool pin2 = usable_cores() >= 2;
    auto job = [&](int ranks, bool pin, auto&& body) {
        if (status == 0) status = run_job(p, ranks, pin, body);
    };
    for (const auto& [fig, op] : {std::pair{"3a", "search"}, std::pair{"3c", "abssum"}}) {
        if (!wants(p, fig)) continue;
        job(2, pin2,
            [&](am::context& c, release& r, uint64_t& n) { fig_latency(c, p, fig, op, r, n); });
        base_ok &= run_baseline(
            p, 2,
            {"--figure", fig, "--mode", "latency", "--op", op, "--iters", std::to_string(p.iters)});
    }
    for (const auto& [fig, op] : {std::pair{"3b", "search"}, std::pair{"3d", "abssum"}}) {
        if (!wants(p, fig)) continue;
        job(2, pin2,
            [&](am::context& c, release&, uint64_t&) { fig_throughput_units(c, p, fig, op); });
        base_ok &= run_baseline(p, 2,
                                {"--figure", fig, "--mode", "throughput", "--op", op, "--ams",
                                 std::to_string(p.ams * p.epochs)});
    }
    if (wants(p, "4")) {
        job(2, pin2,
            [&](am::context& c, release&, uint64_t&) { fig_buffers(c, p, "4", p.buffers); });
    }
    if (wants(p, "5")) {
        for (uint64_t r : p.ranks5) {
            job(static_cast<int>(r), pin2 && r <= 2,
                [&](am::context& c, release&, uint64_t&) { fig_buffers(c, p, "5", p.buffers5); });
            if (r <= p.baseline_max_ranks) {
                base_ok &= run_baseline(p, static_cast<int>(r),
                                        {"--figure", "5", "--mode", "throughput", "--op", "search",
                                         "--ams", std::to_string(p.ams * p.epochs)});
            }
        }
    }
    if (wants(p, "6")) {
        job(2, pin2, [&](am::context& c, release&, uint64_t&) { fig_ordering(c, p); });
        base_ok &= run_baseline(p, 2,
                                {"--figure", "6", "--mode", "throughput", "--op", "search", "--ams",
                                 std::to_string(p.ams * p.epochs), "--segments",
                                 std::to_string(p.large) + "," + std::to_string(p.small)});
    }
    if (wants(p, "7")) {
        for (uint64_t r : p.ranks7) {
            job(static_cast<int>(r), pin2 && r <= 2,
                [&](am::context& c, release&, uint64_t&) { fig_concurrency(c, p); });
            if (r <= p.baseline_max_ranks) {
                for (const std::string& op : p.ops7) {
                    base_ok &=
                        run_baseline(p, static_cast<int>(r),
                                     {"--figure", "7", "--mode", "throughput", "--op", op,
                                      "--origins", "all", "--ams", std::to_string(p.ams * p.epochs),
                                      "--systems", "mpi_rma,mpi_twosided,mpi_shm"});
                }
            }
        }
    }
    if (status != 0) return status;
    return base_ok ? 0 : no_baseline_status;
}

const char* usage =
    "window_bench: the figures of 'MPI-Interoperable Generalized Active Messages' (section V)\n"
    "on am::window, with the MPI baselines (mpi_window_baseline) in the same invocation.\n"
    "JSON lines on stdout.\n"
    "  --figures 3a,3b,3c,3d,4,5,6,7   figures to run (default all)\n"
    "  --transport shm|threads         am transport (default shm)\n"
    "  --quick                         one point per figure, few AMs (smoke run)\n"
    "  --reps N                        repetitions per point (default 5; --quick 2)\n"
    "  --iters N                       latency: AMs per repetition (default 200)\n"
    "  --ams N                         throughput: AMs per epoch (default 100000)\n"
    "  --epochs N                      throughput: fence epochs per repetition (default 1)\n"
    "  --units a,b,...                 figs 3: pipeline units (default "
    "1,2,4,5,10,20,25,40,50,100)\n"
    "  --buffers a,b,...               fig 4: internal buffers (default 1K,2K,4K,8K,16K,32K,64K)\n"
    "  --buffers5 a,b,...              fig 5: internal buffers (default 1K,8K,64K)\n"
    "  --ranks5 a,b,... --ranks7 ...   figs 5, 7: rank counts (threads up to 64, shm up to 8)\n"
    "  --unit N                        figs 4, 5: pipeline unit (default 20)\n"
    "  --large N --small N             fig 6: segments of the alternating AMs (400, 10)\n"
    "  --ops7 search,abssum            fig 7: operations (default search)\n"
    "  --db N                          search database keys (default 1024)\n"
    "  --attach BYTES                  attached buffer at every rank (default 256K)\n"
    "  --no-baseline                   skip the MPI baselines\n"
    "  --baseline-max-ranks N          figs 5, 7: baselines up to N ranks (default 8)\n"
    "  --mpirun PATH                   launcher of the baselines\n";

plan parse(int argc, char** argv) {
    const args a(argc, argv, usage,
                 {"--figures", "--transport", "--reps", "--iters", "--ams", "--units", "--buffers",
                  "--buffers5", "--ranks5", "--ranks7", "--unit", "--epochs", "--large", "--small",
                  "--ops7", "--db", "--attach", "--baseline-max-ranks", "--mpirun"},
                 {"--quick", "--no-baseline", "--json"});
    plan p;
    p.quick = a.has("--quick");
    p.baseline = !a.has("--no-baseline");
    p.transport = a.get("--transport", "shm");
    if (p.transport != "shm" && p.transport != "threads") args::fail("--transport: shm or threads");
    p.figures = split(a.get("--figures", "3a,3b,3c,3d,4,5,6,7"));
    p.reps = static_cast<int>(a.count("--reps", p.quick ? 2 : 5));
    p.iters = a.count("--iters", p.quick ? 20 : 200);
    p.ams = a.count("--ams", p.quick ? 2000 : 100000);
    p.epochs = a.count("--epochs", 1);
    p.units =
        a.counts("--units", p.quick ? std::vector<uint64_t>{100}
                                    : std::vector<uint64_t>{1, 2, 4, 5, 10, 20, 25, 40, 50, 100});
    p.buffers =
        a.counts("--buffers", p.quick ? std::vector<uint64_t>{8 << 10}
                                      : std::vector<uint64_t>{1 << 10, 2 << 10, 4 << 10, 8 << 10,
                                                              16 << 10, 32 << 10, 64 << 10});
    p.buffers5 =
        a.counts("--buffers5", p.quick ? std::vector<uint64_t>{8 << 10}
                                       : std::vector<uint64_t>{1 << 10, 8 << 10, 64 << 10});
    const bool thr = p.transport == "threads";
    p.ranks5 = a.counts("--ranks5", p.quick ? std::vector<uint64_t>{4}
                                    : thr   ? std::vector<uint64_t>{2, 4, 8, 16, 32, 64}
                                            : std::vector<uint64_t>{2, 4, 8});
    p.ranks7 = a.counts("--ranks7", p.quick ? std::vector<uint64_t>{2}
                                    : thr   ? std::vector<uint64_t>{1, 2, 4, 8, 16, 32, 64}
                                            : std::vector<uint64_t>{1, 2, 4, 8});
    p.unit = a.count("--unit", 20);
    p.large = a.count("--large", 400);
    p.small = a.count("--small", 10);
    p.ops7 = split(a.get("--ops7", "search"));
    p.db = a.count("--db", 1024);
    p.attach = a.count("--attach", 256 << 10);
    p.baseline_max_ranks = a.count("--baseline-max-ranks", 8);
    p.mpirun = a.get("--mpirun", "");
    for (const std::string& f : p.figures) {
        static const std::vector<std::string> known = {"3a", "3b", "3c", "3d", "4", "5", "6", "7"};
        if (std::find(known.begin(), known.end(), f) == known.end()) {
            args::fail("--figures: unknown figure '" + f + "'");
        }
    }
    for (const std::string& op : p.ops7) {
        if (op != "search" && op != "abssum") args::fail("--ops7: search or abssum");
    }
    if (p.reps < 1 || p.iters == 0 || p.ams == 0 || p.epochs == 0 || p.db == 0 || p.attach < 64 ||
        p.large == 0 || p.small == 0 || p.units.empty()) {
        args::fail("counts must be positive");
    }
    for (uint64_t r : p.ranks5) {
        if (r < 2 || r > 256) args::fail("--ranks5: rank counts in [2, 256]");
    }
    for (uint64_t r : p.ranks7) {
        if (r < 1 || r > 256) args::fail("--ranks7: rank counts in [1, 256]");
    }
    return p;
}

}  // namespace
}  // namespace am::bench::window

int main(int argc, char** argv) {
    using namespace am::bench::window;
    const plan p = parse(argc, argv);
    return run_figures(p);
}
