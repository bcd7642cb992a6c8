// SPDX-License-Identifier: MIT
#include "am_harness.hpp"

#include "baseline.hpp"

#ifdef AM_HAVE_MPI
#include "mpi_hop.hpp"

#include <am/mpi.hpp>
#endif

#include <sched.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace am::bench {

std::uint64_t read_sum(std::span<const std::byte> p) noexcept {
    std::uint64_t acc[4] = {0, 0, 0, 0};
    std::size_t i = 0;
    for (; i + 32 <= p.size(); i += 32) {
        for (std::size_t k = 0; k < 4; ++k) {
            std::uint64_t w;
            std::memcpy(&w, p.data() + i + 8 * k, 8);
            acc[k] += w;
        }
    }
    for (; i + 8 <= p.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p.data() + i, 8);
        acc[0] += w;
    }
    for (; i < p.size(); ++i) acc[1] += static_cast<std::uint64_t>(p[i]);
    return acc[0] + acc[1] + acc[2] + acc[3];
}

void fill_pattern(std::span<std::byte> p) noexcept {
    for (std::size_t i = 0; i < p.size(); ++i) {
        p[i] = static_cast<std::byte>(1 + (i * 131 + (i >> 12)) % 251);  // never 0
    }
}

namespace {

bool under_amrun() {
    return std::getenv("AM_SHM_NAME") != nullptr;
}

int node_size_of(const options& o) {
    return o.node_size < 0 ? 1 : o.node_size;
}

void sleep_us(long us) {
    timespec ts{us / 1000000, (us % 1000000) * 1000};
    nanosleep(&ts, nullptr);
}

#ifdef AM_HAVE_MPI

/// This process is one rank of an MPI job running the am side (--transport mpi or ucx under
/// mpirun).
bool mpi_in_job(const options& o) {
    return mpi_job(o.transport) && o.mpi_ok && am::launched_by_mpi() && !under_amrun();
}

bool mpi_owned = false;  // this program initialised MPI, so it finalises it

void mpi_start() {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (initialized) return;
    // As the MPI baseline does: plain MPI_Init (MPI_THREAD_SINGLE), enough for am without a
    // progress thread when am::run is called from this thread. Any higher level turns on
    // Open MPI's internal locks, which cost the am side a good part of its latency and rate.
    MPI_Init(nullptr, nullptr);
    mpi_owned = true;
}

/// A barrier that sleeps while it waits (MPI_Barrier spins): ranks waiting for rank 0's MPI
/// baseline, or for the cache-line hop of ranks 0 and 1, leave the cores to those.
void lazy_barrier() {
    mpi_start();
    MPI_Request r;
    MPI_Ibarrier(MPI_COMM_WORLD, &r);
    long us = 20;
    for (int done = 0;;) {
        MPI_Test(&r, &done, MPI_STATUS_IGNORE);
        if (done != 0) return;
        sleep_us(us);
        us = std::min(us * 2, 5000L);
    }
}

void mpi_end() {
    lazy_barrier();
    if (mpi_owned) MPI_Finalize();
}

/// Cores of the machine: an MPI rank may be bound to one, so the count comes from the program
/// that started the job (AM_BENCH_CORES), else from the system.
int machine_cores() {
    if (const char* v = std::getenv("AM_BENCH_CORES")) {
        const int n = std::atoi(v);
        if (n > 0) return n;
    }
    const long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? static_cast<int>(n) : 1;
}

/// Pins the process to the `index`-th core of the machine (not of its current mask).
void pin_to_machine_core(int index) {
    cpu_set_t all;
    CPU_ZERO(&all);
    const long n = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &all);
    sched_setaffinity(0, sizeof all, &all);  // the kernel keeps only the cores we may use
    pin_to_core(index);
}

/// Where the ranks of one host are, as the transport groups them: per world rank, whether it
/// shares rank 0's node. Also this rank's index and the rank count on its host.
struct placement {
    std::vector<bool> same_node_as_0;
    int host_rank = 0;
    int host_size = 1;
};

placement place_ranks(int rank, int size, int node_size) {
    placement pl;
    MPI_Comm host;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &host);
    MPI_Comm_rank(host, &pl.host_rank);
    MPI_Comm_size(host, &pl.host_size);
    int leader = rank;  // the world rank of the host's first rank names the host
    MPI_Bcast(&leader, 1, MPI_INT, 0, host);
    MPI_Comm_free(&host);
    const int mine[2] = {leader, node_size > 0 ? pl.host_rank / node_size : 0};
    std::vector<int> all(2 * static_cast<std::size_t>(size));
    MPI_Allgather(mine, 2, MPI_INT, all.data(), 2, MPI_INT, MPI_COMM_WORLD);
    for (int r = 0; r < size; ++r) {
        const std::size_t i = 2 * static_cast<std::size_t>(r);
        pl.same_node_as_0.push_back(all[i] == all[0] && all[i + 1] == all[1]);
    }
    return pl;
}

/// The cache-line hop between the cores of ranks 0 and 1 when they share a host: one-way µs
/// per repetition on rank 0, empty elsewhere. Collective over MPI_COMM_WORLD.
std::vector<double> mpi_hop(int rank, int reps) {
    std::vector<double> v;
    MPI_Comm pair = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank < 2 ? 0 : MPI_UNDEFINED, rank, &pair);
    if (pair == MPI_COMM_NULL) return v;
    MPI_Comm shared = MPI_COMM_NULL;
    MPI_Comm_split_type(pair, MPI_COMM_TYPE_SHARED, rank, MPI_INFO_NULL, &shared);
    int n = 0;
    MPI_Comm_size(shared, &n);
    int both = n == 2 ? 1 : 0;  // same answer on both ranks of the pair
    MPI_Allreduce(MPI_IN_PLACE, &both, 1, MPI_INT, MPI_MIN, pair);
    if (both != 0) v = mpi_cacheline_hop(rank, reps, shared);
    MPI_Comm_free(&shared);
    MPI_Comm_free(&pair);
    return v;
}

/// This process as one rank of an MPI job running the am side.
int run_mpi_rank(const options& o, const job_params& p, const rank_body& body, reporter& rep,
                 bool& reporting) {
    mpi_start();
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const int node_size = node_size_of(o);
    const placement pl = place_ranks(rank, size, node_size);

    // Placement: with a core per rank of the host, mpirun's binding (--bind-to core) is kept,
    // or rank r pinned to core r if it was not bound; with more ranks than cores, rank 0 gets
    // core 0 and the others share the rest (they sleep while they take no part in a point).
    const int cores = machine_cores();
    const bool enough = pl.host_size <= cores;
    const bool pin = o.pin == 1 || (o.pin < 0 && (!enough || usable_cores() > 1));
    if (pin) {
        const int spare = std::max(cores - 1, 1);
        pin_to_machine_core(enough              ? pl.host_rank
                            : pl.host_rank == 0 ? 0
                                                : 1 + (pl.host_rank - 1) % spare);
    }
    const bool busy = enough || (pin && cores >= 2);

    shared_results out;
    const bool ucx = o.transport == "ucx";
    const std::string label = node_size == 1 ? o.transport : ucx ? "mixed-ucx" : "mixed";
    if (p.hop && size >= 2 && busy) {
        const std::vector<double> v = mpi_hop(rank, o.reps);
        if (rank == 0 && !v.empty()) {
            out.add(make_result(o.bench, "cacheline", "am-" + label, 2, "hop", 8, "latency_us",
                                summarize(v)));
        }
    }
    lazy_barrier();  // the other ranks slept while 0 and 1 measured the hop

    am::config cfg;
    cfg.transport = ucx ? am::transport_kind::ucx : am::transport_kind::mpi;
    cfg.node_size = node_size;
    while (cfg.segment_bytes < p.segment_bytes) cfg.segment_bytes *= 2;
    cfg.rma = p.rma;
    idle_state idle;
    const int status = am::run(MPI_COMM_WORLD, cfg, [&](am::context& ctx) {
        idle.release = ctx.handler([&idle](am::token&) { ++idle.released; });
        rank_env env(o, label, out, busy);
        env.set_mpi(&idle, pl.same_node_as_0);
        body(ctx, env);
    });
    if (status != 0) std::fprintf(stderr, "bench: am::run failed with status %d\n", status);
    if (rank != 0 || status != 0) {
        reporting = false;
        return status;
    }
    if (o.mpi_child) {  // the program that started the job reports
        reporter child(output::json_only);
        for (const result& r : out.take()) child.add(r);
        reporting = false;
        return 0;
    }
    reporting = true;
    for (const result& r : out.take()) rep.add(r);
    return 0;
}

#endif  // AM_HAVE_MPI

/// Starts this program again as an MPI job (--mpi-child) on am transport `transport` (mpi or
/// ucx) and adds what its rank 0 reports. The ucx job's UCX uses --ucx-tls, as the UCX
/// baseline does.
int launch_mpi_job(const options& o, const std::string& transport, reporter& rep, bool& reporting) {
    reporting = true;
#ifndef AM_HAVE_MPI
    (void)o;
    (void)transport;
    (void)rep;
    std::fprintf(stderr,
                 "bench: --transport mpi: am was built without MPI (MPI not found at configure "
                 "time, or -DAM_WITH_MPI=OFF)\n");
    return 2;
#else
    std::vector<std::string> argv = mpirun_command(o, o.ranks, o.pin != 0);
    if (o.ranks > usable_cores() && launcher_is_open_mpi() &&
        std::getenv("OMPI_MCA_mpi_yield_when_idle") == nullptr) {
        // Oversubscribed, Open MPI would call sched_yield in every MPI poll that finds nothing,
        // on the two ranks that measure too; here idle ranks sleep in rank_env::idle instead.
        argv.insert(argv.begin() + 1, {"--mca", "mpi_yield_when_idle", "0"});
    }
    argv.push_back(self_path());
    argv.insert(argv.end(), o.args.begin(), o.args.end());
    argv.insert(argv.end(), {"--transport", transport, "--mpi-child"});  // the last one wins
    std::vector<std::string> env{"AM_BENCH_CORES=" + std::to_string(usable_cores())};
    if (transport == "ucx") env.push_back("UCX_TLS=" + o.ucx_tls);
    const child_outcome c = run_collecting(argv, env, rep);
    if (c.status == 0 && c.results > 0) return 0;
    std::fprintf(stderr,
                 "bench: the am job (transport %s) under '%s -n %d' failed (status %d, %d "
                 "results)\n",
                 transport.c_str(), argv[0].c_str(), o.ranks, c.status, c.results);
    return c.status > 0 ? c.status : 1;
#endif
}

}  // namespace

void rank_env::report(am::context& ctx, const char* bench, const char* op, std::size_t bytes,
                      const char* metric, const std::vector<double>& per_rep,
                      const char* system) const {
    if (ctx.rank() != 0) return;
    const bool single_core = std::string_view(system) == "memcpy";
    const char* tp = single_core ? "none" : _transport.c_str();
    const int ranks = single_core ? 1 : std::string_view(system) == "cacheline" ? 2 : ctx.size();
    _out.add(make_result(bench, system, tp, ranks, op, bytes, metric, summarize(per_rep)));
}

std::vector<int> rank_env::peers(const am::context& ctx) const {
    std::vector<int> v;
    for (int r : _o.peers) {
        if (r >= 1 && r < ctx.size() && std::find(v.begin(), v.end(), r) == v.end()) {
            v.push_back(r);
        }
    }
    if (!_o.peers.empty()) return v;
    if (ctx.size() == 1) return {0};
    v.push_back(1);
    if (_idle != nullptr && node_size_of(_o) != 1) {  // mixed: a peer on another node too
        for (int r = 1; r < ctx.size(); ++r) {
            if (!_same_node[static_cast<std::size_t>(r)]) {
                if (r != 1) v.push_back(r);
                break;
            }
        }
    }
    return v;
}

void rank_env::use_peer(int peer) {
    if (_idle == nullptr || node_size_of(_o) == 1) return;
    _transport = _same_node[static_cast<std::size_t>(peer)] ? "mixed-shm"
                 : _o.transport == "ucx"                    ? "mixed-ucx"
                                                            : "mixed-mpi";
}

void rank_env::idle(am::context& ctx) const {
    if (_idle == nullptr) return;
    ++_idle->waits;
    long us = 50;
    while (_idle->released < _idle->waits) {
        if (ctx.poll() == 0) {
            sleep_us(us);
            us = std::min(us * 2, 2000L);
        }
    }
}

void rank_env::release_idle(am::context& ctx, int peer) const {
    if (_idle == nullptr) return;
    for (int r = 1; r < ctx.size(); ++r) {
        if (r != peer) ctx.request(r, _idle->release);
    }
}

void allow_mpi_transport(options& o) {
    o.mpi_ok = true;
    if (!o.transport_given && am::launched_by_mpi() && !under_amrun()) {
        o.transport = "mpi";
        o.transports = {"mpi"};
    }
}

int run_am_job(const options& o, const job_params& p, const rank_body& body, reporter& rep,
               bool& reporting) {
    if (mpi_job(o.transport)) {
        const bool in_job = am::launched_by_mpi();
        if (!o.mpi_ok || under_amrun() || (in_job && o.transports.size() > 1)) {
            std::fprintf(stderr, "bench: --transport %s: %s\n", o.transport.c_str(),
                         under_amrun() ? "not under amrun (start the program with mpirun)"
                         : !o.mpi_ok   ? "only am_pingpong and am_flood support it"
                                       : "one transport under mpirun (a list only when the "
                                         "program starts its am jobs itself)");
            reporting = true;
            return 2;
        }
        if (!in_job) {
            for (const std::string& t : o.transports) {
                if (const int st = launch_mpi_job(o, t, rep, reporting); st != 0) return st;
            }
            return 0;
        }
#ifdef AM_HAVE_MPI
        return run_mpi_rank(o, p, body, rep, reporting);
#else
        return launch_mpi_job(o, o.transport, rep, reporting);  // says am has no MPI
#endif
    }
    am::config cfg;
    cfg.ranks = o.ranks;
    cfg.transport =
        o.transport == "threads" ? am::transport_kind::threads : am::transport_kind::shm;
    while (cfg.segment_bytes < p.segment_bytes) cfg.segment_bytes *= 2;
    cfg.rma = p.rma;
    // Under `amrun` the job's shape comes from the launcher, whatever the options say.
    const bool amrun = under_amrun();
    const std::string transport = amrun ? "shm" : o.transport;
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
            if (p.hop && !amrun && ctx.size() >= 2 && ctx.size() <= cores && ctx.rank() < 2) {
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
    if (under_amrun() || o.mpi_child) n = 1;  // amrun attaches a rank only once
    bool in_job = false;
#ifdef AM_HAVE_MPI
    in_job = mpi_in_job(o);
#endif
    std::vector<std::vector<result>> all;
    for (int k = 0; k < n; ++k) {
#ifdef AM_HAVE_MPI
        if (in_job) lazy_barrier();  // rank 0 may still be running the previous baseline
#endif
        reporter rep(n == 1 ? mode : output::quiet);
        bool reporting = true;
        const int status = round(rep, reporting);
        if (status != 0) return status;
        if (!reporting) {
            if (in_job) continue;  // an MPI rank other than 0: the next round, silently
            return status;
        }
        all.push_back(rep.results());
    }
#ifdef AM_HAVE_MPI
    if (in_job) mpi_end();
#endif
    if (all.empty()) return 0;
    if (n > 1) {
        reporter rep(mode);
        for (const result& r : pool_rounds(all)) rep.add(r);
    }
    if (kept != nullptr) *kept = std::move(all);
    return 0;
}

options bench_options(int argc, char** argv, const char* name, const char* summary,
                      std::span<const option_spec> extra, bool mpi_ok) {
    options o = parse_options(argc, argv, summary, extra);
    o.bench = name;
    if (mpi_ok) allow_mpi_transport(o);
    return o;
}

int bench_main(const options& o, const round_parts& parts, output mode,
               std::vector<std::vector<result>>* kept) {
    bool baseline_ok = true;
    auto round = [&](reporter& rep, bool& reporting) {
        const int st = parts.am(rep, reporting);
        if (reporting && st == 0 && parts.baselines) {
            baseline_ok = parts.baselines(rep) && baseline_ok;
        }
        return st;
    };
    const int status = run_rounds(o, mode, round, kept);
    return status != 0 ? status : baseline_ok ? 0 : no_baseline_status;
}

int bench_main(const options& o, const round_parts& parts) {
    return bench_main(o, parts, o.json ? output::json : output::table);
}

int bench_main(int argc, char** argv, const bench_program& p) {
    const options o = bench_options(argc, argv, p.name, p.summary);
    return bench_main(o, {[&](reporter& rep, bool& reporting) { return p.am(o, rep, reporting); },
                          [&](reporter& rep) { return p.baselines(o, rep); }});
}

bool baseline_skipped(const options& o) {
    if (o.baseline) return false;
    std::fprintf(stderr, "%s: MPI baseline skipped (--no-baseline)\n", o.bench.c_str());
    return true;
}

std::vector<std::string> baseline_args(const options& o, const std::vector<std::size_t>& sizes) {
    std::vector<std::string> args = forwarded_options(o);
    args.insert(args.end(), {"--bench", o.bench, "--sizes", join_sizes(sizes)});
    return args;
}

}  // namespace am::bench
