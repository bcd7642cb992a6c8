// SPDX-License-Identifier: MIT
// rpc_bench's applications: a distributed hash table and unbalanced tree search, each written
// as hand-coded active messages, as RPC (am::rpc / am::rpc_ff, am::mutex) and as TRPC.
#include "rpc_bench.hpp"

#include <cstdio>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace am::bench::rpc {
namespace {

// ------------------------------------------------------------------------------- dht

/// This rank's share of the keys.
uint64_t dht_share(const job& j, const am::context& ctx) {
    return j.p.dht_keys / static_cast<uint64_t>(ctx.size());
}

std::size_t dht_buckets(const job& j, const am::context& ctx) {
    return std::max<std::size_t>(1024, dht_share(j, ctx) / 4);
}

/// One timed run of a dht version: `insert(key)` / `find(key)` issue the operations, with at
/// most `in_flight` outstanding (`wait_window(limit)` waits until at most `limit` are);
/// `items()` counts this rank's entries afterwards. Rank 0 gets the seconds.
template <class Insert, class Find, class Window, class Items>
double dht_run(am::context& ctx, const job& j, Insert&& insert, Find&& find, Window&& wait_window,
               Items&& items) {
    const uint64_t n = dht_share(j, ctx);
    ctx.barrier();
    const auto t0 = bench_clock::now();
    for (uint64_t i = 0; i < n; ++i) {
        wait_window(in_flight - 1);
        insert(dht_key(ctx.rank(), i));
    }
    wait_window(0);
    ctx.barrier();
    for (uint64_t i = 0; i < n; ++i) {
        wait_window(in_flight - 1);
        find(dht_key(ctx.rank(), i));
    }
    wait_window(0);
    ctx.barrier();
    const double s = seconds_since(t0);
    j.ctl.items.fetch_add(items());
    ctx.barrier();
    if (ctx.rank() == 0) {
        const uint64_t want = n * static_cast<uint64_t>(ctx.size());
        const uint64_t got = j.ctl.items.exchange(0);
        if (got != want) {
            j.error(ctx, "dht: " + std::to_string(got) + " entries, " + std::to_string(want) +
                             " keys inserted");
        }
    }
    ctx.barrier();
    return s;
}

void dht_report(am::context& ctx, const job& j, const char* system, const std::vector<double>& s) {
    const uint64_t ops = 2 * dht_share(j, ctx) * static_cast<uint64_t>(ctx.size());
    j.report(ctx, system, "dht", 8, "seconds", s);
    std::vector<double> r;
    for (double x : s) r.push_back(static_cast<double>(ops) / x / 1e6);
    j.report(ctx, system, "dht", 8, "rate_Mops", r);
}

/// Hand-coded AM: handlers insert and find (handlers of a rank run one at a time: no lock)
/// and reply; the rank keeps at most `in_flight` requests unanswered.
class dht_handcoded {
  public:
    using table = dht_table<no_lock>;
    dht_handcoded(am::context& ctx, const job& j) : _ctx(ctx), _j(j) {
        auto ack = ctx.handler([this](am::token&) { ++_acks; });
        auto found = ctx.handler([this](am::token& t, uint64_t key, uint64_t v) {
            if (v != dht_value(key)) _j.error(t.ctx(), "hand-coded dht find");
            ++_acks;
        });
        _insert = ctx.handler([this, ack](am::token& t, uint64_t key, uint64_t v) {
            table::insert(_t->of(key), key, v);
            t.reply(ack);
        });
        _find = ctx.handler([this, found](am::token& t, uint64_t key) {
            t.reply(found, key, table::find(_t->of(key), key));
        });
    }
    double once() {
        _t = std::make_unique<table>(dht_buckets(_j, _ctx));
        const int size = _ctx.size();
        return dht_run(
            _ctx, _j,
            [&](uint64_t k) {
                ++_issued;
                _ctx.request(dht_owner(k, size), _insert, k, dht_value(k));
            },
            [&](uint64_t k) {
                ++_issued;
                _ctx.request(dht_owner(k, size), _find, k);
            },
            [&](uint64_t limit) { _j.wait(_ctx, [&] { return _issued - _acks <= limit; }); },
            [&] { return _t->items(); });
    }

  private:
    am::context& _ctx;
    const job& _j;
    std::unique_ptr<table> _t;
    uint64_t _acks = 0, _issued = 0;
    am::handler<am::category::short_am, uint64_t, uint64_t> _insert;
    am::handler<am::category::short_am, uint64_t> _find;
};

/// RPC: am::rpc of functions that take the bucket's am::mutex; a ring of `in_flight` futures
/// per rank, the oldest settled before its slot is reused.
class dht_rpc {
  public:
    using table = dht_table<am::mutex>;
    dht_rpc(am::context& ctx, const job& j)
        : _ctx(ctx), _j(j), _wi(in_flight), _wf(in_flight), _keys(in_flight) {
        _insert = am::rpc_register(ctx, [this](uint64_t key, uint64_t v) {
            auto& b = _t->of(key);
            std::lock_guard<am::mutex> g(b.lock);
            table::insert(b, key, v);
            return rpc_bench_nothing{};  // as void (see rpc_bench_null_fn)
        });
        _find = am::rpc_register(ctx, [this](uint64_t key) -> uint64_t {
            auto& b = _t->of(key);
            std::lock_guard<am::mutex> g(b.lock);
            return table::find(b, key);
        });
    }
    double once() {
        _t = std::make_unique<table>(dht_buckets(_j, _ctx), _ctx);
        const int size = _ctx.size();
        return dht_run(
            _ctx, _j,
            [&](uint64_t k) {
                _wi[_slot++ % in_flight] =
                    am::rpc(_ctx, dht_owner(k, size), _insert, k, dht_value(k));
            },
            [&](uint64_t k) {
                _keys[_slot % in_flight] = k;
                _wf[_slot++ % in_flight] = am::rpc(_ctx, dht_owner(k, size), _find, k);
            },
            [&](uint64_t limit) {
                if (limit != 0) return settle(_slot % in_flight);  // the slot about to be reused
                for (uint64_t s = 0; s < in_flight; ++s) settle(s);
            },
            [&] { return _t->items(); });
    }

  private:
    void settle(uint64_t s) {
        if (_wi[s].valid()) (void)_wi[s].get();
        if (_wf[s].valid() && _wf[s].get() != dht_value(_keys[s]))
            _j.error(_ctx, "am::rpc dht find");
    }

    am::context& _ctx;
    const job& _j;
    std::unique_ptr<table> _t;
    am::remote<rpc_bench_nothing(uint64_t, uint64_t)> _insert;
    am::remote<uint64_t(uint64_t)> _find;
    std::vector<am::future<rpc_bench_nothing>> _wi;
    std::vector<am::future<uint64_t>> _wf;
    std::vector<uint64_t> _keys;
    uint64_t _slot = 0;
};

/// Hand-coded AM and RPC versions, alternating per repetition.
void dht_am_job_impl(am::context& ctx, const job& j) {
    dht_handcoded am(ctx, j);
    dht_rpc rpc(ctx, j);
    ctx.barrier();
    (void)am.once();  // warm-up
    (void)rpc.once();
    std::vector<double> a, r;
    for (int rep = 0; rep < j.p.reps; ++rep) {
        a.push_back(am.once());
        r.push_back(rpc.once());
    }
    dht_report(ctx, j, "am_handcoded", a);
    dht_report(ctx, j, "am_rpc", r);
    ctx.quiesce();
}

void dht_trpc_job_impl(am::context& ctx, const job& j) {
    trpc_state st;
    register_trpc(ctx, j, st);
    const int size = ctx.size();
    uint64_t issued = 0;
    auto once = [&] {
        st.table = std::make_unique<dht_table<std::mutex>>(dht_buckets(j, ctx));
        const uint64_t base = st.replies.load();
        issued = 0;
        return dht_run(
            ctx, j,
            [&](uint64_t k) {
                ++issued;
                ctx.request(dht_owner(k, size), st.call, uint64_t{fn_insert}, k, dht_value(k), 0);
            },
            [&](uint64_t k) {
                ++issued;
                ctx.request(dht_owner(k, size), st.call, uint64_t{fn_find}, k, 0, 0);
            },
            [&](uint64_t limit) {
                j.wait(ctx, [&] { return issued - (st.replies.load() - base) <= limit; });
            },
            [&] { return st.table->items(); });
    };
    (void)once();
    std::vector<double> s;
    for (int rep = 0; rep < j.p.reps; ++rep) s.push_back(once());
    dht_report(ctx, j, "trpc", s);
    ctx.quiesce();
    st.pool.reset();
}

// ------------------------------------------------------------------------------- uts

/// Checks the nodes all ranks counted against the sequential count (rank 0; says so when `say`),
/// resets them.
void uts_check(am::context& ctx, const job& j, uint64_t mine, const char* system, bool say) {
    j.ctl.nodes.fetch_add(mine);
    ctx.barrier();
    if (ctx.rank() == 0) {
        const uint64_t got = j.ctl.nodes.exchange(0), want = j.p.uts_nodes;
        if (got != want) {
            j.error(ctx, std::string("uts ") + system + ": " + std::to_string(got) +
                             " nodes, the sequential count is " + std::to_string(want));
        } else if (say) {
            std::fprintf(stderr,
                         "rpc_bench: uts %s on %d ranks: %llu nodes, as counted sequentially\n",
                         system, ctx.size(), static_cast<unsigned long long>(got));
        }
    }
    ctx.barrier();
}

void uts_report(am::context& ctx, const job& j, const char* system, const std::vector<double>& s) {
    j.report(ctx, system, "uts", 16, "seconds", s);
    const double nodes = static_cast<double>(j.p.uts_nodes);
    std::vector<double> r;
    for (double x : s) r.push_back(nodes / x / 1e6);
    j.report(ctx, system, "uts", 16, "rate_Mops", r);
}

/// Hand-coded AM and RPC versions, alternating per repetition.
void uts_am_job_impl(am::context& ctx, const job& j) {
    const uts_tree& t = j.p.tree;
    uint64_t nodes = 0;
    am::handler<am::category::short_am, uint64_t, uint64_t> task;
    am::remote<void(uint64_t, uint64_t)> rtask;
    task = ctx.handler([&](am::token& tk, uint64_t id, uint64_t d) {
        am::context& c = tk.ctx();
        nodes += t.search(id, d, [&](uint64_t ch, uint64_t cd) {
            c.request(uts_tree::rank_of(ch, c.size()), task, ch, cd);
        });
    });
    rtask = am::rpc_register(ctx, [&](am::context& c, uint64_t id, uint64_t d) {
        nodes += t.search(id, d, [&](uint64_t ch, uint64_t cd) {
            am::rpc_ff(c, uts_tree::rank_of(ch, c.size()), rtask, ch, cd);
        });
    });
    ctx.barrier();
    auto once = [&](bool rpc, bool first = false) {
        nodes = 0;
        ctx.barrier();
        const auto t0 = bench_clock::now();
        if (ctx.rank() == 0) {
            if (rpc) {
                am::rpc_ff(ctx, 0, rtask, t.root, uint64_t{0});
            } else {
                ctx.request(0, task, t.root, uint64_t{0});
            }
        }
        ctx.quiesce();
        const double s = seconds_since(t0);
        uts_check(ctx, j, nodes, rpc ? "am_rpc" : "am_handcoded", first);
        return s;
    };
    (void)once(false, true);  // warm-up
    (void)once(true, true);
    std::vector<double> a, r;
    for (int rep = 0; rep < j.p.reps; ++rep) {
        a.push_back(once(false));
        r.push_back(once(true));
    }
    uts_report(ctx, j, "am_handcoded", a);
    uts_report(ctx, j, "am_rpc", r);
}

void uts_trpc_job_impl(am::context& ctx, const job& j) {
    trpc_state st;
    register_trpc(ctx, j, st);
    auto once = [&](bool first = false) {
        st.nodes.store(0);
        ctx.barrier();
        const auto t0 = bench_clock::now();
        if (ctx.rank() == 0) {
            j.ctl.pending.fetch_add(1);
            ctx.request(0, st.call, uint64_t{fn_uts}, j.p.tree.root, uint64_t{0}, uint64_t{0});
        }
        // Handlers only queue tasks: the core cannot see the pool's work, so the ranks wait
        // for the count of tasks in flight to reach 0 before the quiescence.
        j.wait(ctx, [&] { return j.ctl.pending.load() == 0; });
        ctx.quiesce();
        const double s = seconds_since(t0);
        uts_check(ctx, j, st.nodes.load(), "trpc", first);
        return s;
    };
    (void)once(true);  // warm-up
    std::vector<double> s;
    for (int rep = 0; rep < j.p.reps; ++rep) s.push_back(once());
    uts_report(ctx, j, "trpc", s);
    st.pool.reset();
}

}  // namespace

void dht_am_job(am::context& ctx, const job& j) {
    dht_am_job_impl(ctx, j);
}
void dht_trpc_job(am::context& ctx, const job& j) {
    dht_trpc_job_impl(ctx, j);
}
void uts_am_job(am::context& ctx, const job& j) {
    uts_am_job_impl(ctx, j);
}
void uts_trpc_job(am::context& ctx, const job& j) {
    uts_trpc_job_impl(ctx, j);
}

}  // namespace am::bench::rpc
