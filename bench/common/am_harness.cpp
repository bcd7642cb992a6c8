// SPDX-License-Identifier: MIT
#include "am_harness.hpp"

#include <atomic>
#include <cstdio>
#include <cstdlib>

namespace am::bench {

void rank_env::report(am::context& ctx, const char* bench, const char* op, std::size_t bytes,
                      const char* metric, const std::vector<double>& per_rep,
                      const char* system) const {
    if (ctx.rank() != 0) return;
    const bool single_core = std::string_view(system) == "memcpy";
    const char* tp = single_core ? "none" : _transport.c_str();
    const int ranks = single_core ? 1 : std::string_view(system) == "cacheline" ? 2 : ctx.size();
    _out.add(make_result(bench, system, tp, ranks, op, bytes, metric, summarize(per_rep)));
}

int run_am_job(const options& o, const job_params& p, const rank_body& body, reporter& rep,
               bool& reporting) {
    am::config cfg;
    cfg.ranks = o.ranks;
    cfg.transport =
        o.transport == "threads" ? am::transport_kind::threads : am::transport_kind::shm;
    while (cfg.segment_bytes < p.segment_bytes) cfg.segment_bytes *= 2;
    cfg.rma = p.rma;
    // Under `amrun` the job's shape comes from the launcher, whatever the options say.
    const bool under_amrun = std::getenv("AM_SHM_NAME") != nullptr;
    const std::string transport = under_amrun ? "shm" : o.transport;
    const int cores = usable_cores();

    shared_results out;
    std::atomic<bool> rank0_here{false};
    std::atomic<int> ranks_here{0};
    int status = 0;
    {
        affinity_guard keep_main_thread_mask;
        status = am::run(cfg, [&](am::context& ctx) {
            ranks_here.fetch_add(1);
            if (ctx.rank() == 0) rank0_here.store(true);
            const bool pin = o.pin < 0 ? ctx.size() <= cores : o.pin != 0;
            if (pin) pin_to_core(ctx.rank());
            rank_env env(o, transport, out, ctx.size() <= cores);
            // The raw cache-line hop between the cores of ranks 0 and 1, the floor of every
            // latency: the vCPUs of a VM may land on cores close or far apart, so it is
            // measured in every run (and by the MPI baseline too). Needs memory shared by
            // the ranks (not under amrun) and a core per rank (it spins).
            if (p.hop && !under_amrun && ctx.size() >= 2 && ctx.size() <= cores && ctx.rank() < 2) {
                const auto v = cacheline_hop(out.hop(), ctx.rank(), o.reps, 20000);
                env.report(ctx, o.bench.c_str(), "hop", 8, "latency_us", v, "cacheline");
            }
            body(ctx, env);
        });
    }
    reporting = rank0_here.load() || ranks_here.load() == 0;
    if (reporting) {
        for (const result& r : out.take()) rep.add(r);
    }
    if (status != 0) std::fprintf(stderr, "bench: am::run failed with status %d\n", status);
    return status;
}

int run_rounds(const options& o, output mode, const round_fn& round,
               std::vector<std::vector<result>>* kept) {
    int n = o.rounds > 0 ? o.rounds : 1;
    if (std::getenv("AM_SHM_NAME") != nullptr) n = 1;  // amrun attaches a rank only once
    std::vector<std::vector<result>> all;
    for (int k = 0; k < n; ++k) {
        reporter rep(n == 1 ? mode : output::quiet);
        bool reporting = true;
        const int status = round(rep, reporting);
        if (!reporting || status != 0) return status;
        all.push_back(rep.results());
    }
    if (n > 1) {
        reporter rep(mode);
        for (const result& r : pool_rounds(all)) rep.add(r);
    }
    if (kept != nullptr) *kept = std::move(all);
    return 0;
}

}  // namespace am::bench
