// SPDX-License-Identifier: MIT
/// @file
/// What rpc_bench's parts share (rpc_bench.cpp: options, round trips, rate, the flood, TRPC's
/// round trips; rpc_apps.cpp: the dht and uts applications): the plan from the command line,
/// the job a rank body runs in, and the TRPC state of a rank.
#pragma once

#include "lib/report.hpp"
#include "lib/sys.hpp"
#include "trpc.hpp"
#include "workloads.hpp"

#include <am/am.hpp>
#include <am/rpc.hpp>

#include <sched.h>
#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <memory>
#include <mutex>
#include <new>
#include <stdexcept>
#include <string>
#include <vector>

/// The result of the functions that return nothing (see rpc_bench_null_fn).
struct rpc_bench_nothing {};

namespace am::bench::rpc {

using std::uint64_t;

inline constexpr const char* bench_name = "rpc";
inline constexpr uint64_t in_flight = 64;  // async_rate, dht: calls outstanding per rank

/// What the command line asks for.
struct plan {
    std::vector<std::string> ops;
    std::string transport;
    bool quick = false;
    int reps = 5;
    uint64_t iters = 20000;       // round trips per repetition (am systems)
    uint64_t trpc_iters = 5000;   // round trips per repetition (TRPC)
    uint64_t calls = 200000;      // async_rate: calls per repetition (am systems)
    uint64_t trpc_calls = 50000;  // async_rate: calls per repetition (TRPC)
    uint64_t batch = 1000;        // flood: messages per batch
    uint64_t batches = 20;        // flood: batches per repetition and kind
    uint64_t dht_keys = 1 << 17;  // dht: keys inserted (all ranks)
    std::vector<uint64_t> dht_ranks{2, 4, 8, 16, 32, 64};
    uts_tree tree;
    std::vector<uint64_t> uts_ranks{2, 4};
    uint64_t uts_nodes = 0;   // the tree's nodes, counted sequentially
    int pool = 2;             // TRPC threads per rank
    uint64_t count_loop = 0;  // --count-loop N: the callgrind loops only
};

[[nodiscard]] inline bool wants(const plan& p, const char* op) {
    return std::find(p.ops.begin(), p.ops.end(), op) != p.ops.end();
}

// --------------------------------------------------------------------------- the job

/// Counters the ranks share even as forked processes (shm): anonymous shared memory made
/// before am::run.
struct control {
    std::atomic<uint64_t> go{0};       // flood: batches rank 0 asked for
    std::atomic<uint64_t> filled{0};   // flood: batches rank 1 has sent
    std::atomic<uint64_t> pending{0};  // uts, TRPC: tasks spawned and not yet searched
    std::atomic<uint64_t> nodes{0};    // uts: nodes counted by all ranks
    std::atomic<uint64_t> items{0};    // dht: entries in all ranks' tables
    std::atomic<uint64_t> errors{0};   // wrong results seen by any rank
};

class shared_control {
  public:
    shared_control() {
        void* p = mmap(nullptr, sizeof(control), PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS,
                       -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("rpc_bench: mmap of the control block");
        _c = new (p) control();
    }
    ~shared_control() {
        _c->~control();
        munmap(_c, sizeof(control));
    }
    shared_control(const shared_control&) = delete;
    shared_control& operator=(const shared_control&) = delete;
    control& operator*() const noexcept { return *_c; }

  private:
    control* _c;
};

/// What a rank body gets besides its context.
struct job {
    const plan& p;
    shared_results& out;
    control& ctl;
    bool busy;  // a core per rank: busy-poll
    bool trpc;  // TRPC job: give the core to the pool threads when a poll finds nothing

    /// Polls until `pred()`.
    template <class Pred>
    void wait(am::context& ctx, Pred&& pred) const {
        if (!busy) {
            ctx.wait(pred);
        } else if (trpc) {
            while (!pred()) {
                if (ctx.poll() == 0) sched_yield();
            }
        } else {
            while (!pred()) ctx.poll();
        }
    }
    /// Waits for `pred()` without polling (the flood's hand-shake through `ctl`).
    template <class Pred>
    void spin(Pred&& pred) const {
        while (!pred()) {
            if (busy) {
                __builtin_ia32_pause();
            } else {
                sched_yield();
            }
        }
    }
    /// Rank 0 records one point.
    void report(am::context& ctx, const char* system, const char* op, uint64_t bytes,
                const char* metric, const std::vector<double>& v) const {
        if (ctx.rank() != 0) return;
        out.add(make_result(bench_name, system, p.transport, ctx.size(), op, bytes, metric,
                            summarize(v)));
    }
    void error(am::context& ctx, const std::string& what) const {
        ctl.errors.fetch_add(1);
        std::fprintf(stderr, "rpc_bench: rank %d: WRONG RESULT: %s\n", ctx.rank(), what.c_str());
    }
};

using rank_body = std::function<void(am::context&, const job&)>;

template <class F>
double timed(F&& f) {
    const auto t0 = bench_clock::now();
    f();
    return seconds_since(t0);
}

// --------------------------------------------------------------- TRPC round trips, rate

/// The functions a TRPC call may name.
enum trpc_fn : uint64_t { fn_null, fn_arg8, fn_insert, fn_find, fn_uts };

/// Rank state of a TRPC job (replies may be handled on a pool thread: atomics).
struct trpc_state {
    std::atomic<uint64_t> replies{0}, last{0}, stops{0}, nodes{0};
    uint64_t stops_seen = 0;
    am::handler<am::category::short_am, uint64_t, uint64_t, uint64_t, uint64_t> call;
    am::handler<am::category::short_am, uint64_t, uint64_t, uint64_t> reply;
    am::handler<am::category::short_am> stop;
    std::unique_ptr<dht_table<std::mutex>> table;
    std::unique_ptr<trpc_pool> pool;
};

/// Registers the TRPC handlers of a rank and starts its pool (collective: ends in a barrier).
void register_trpc(am::context& ctx, const job& j, trpc_state& st);

// The applications (rpc_apps.cpp): hand-coded AM and RPC versions alternate in one job (no
// thread_multiple), TRPC runs in its own.
void dht_am_job(am::context& ctx, const job& j);
void dht_trpc_job(am::context& ctx, const job& j);
void uts_am_job(am::context& ctx, const job& j);
void uts_trpc_job(am::context& ctx, const job& j);

}  // namespace am::bench::rpc
