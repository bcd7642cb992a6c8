// SPDX-License-Identifier: MIT
// atomic_bench: remote fetch_add from rank 0 on a word of rank 1, and 1 MiB puts into rank 1's
// memory, on am (ucx, mpi and mapped paths) and MPI one-sided communication, in the same MPI
// job (the same processes, the same cores):
//
//   mpirun -n 2 --bind-to core build/bench/atomic_bench [--json] [--reps 7] [--iters 20000]
//                                                       [--transports ucx,mpi,mpishm]
//
// am, for each transport (one am::run on MPI_COMM_WORLD each; rank 1 polls in a barrier):
//   ucx      AM_TRANSPORT=ucx, node size 1: UCP atomics (over shared memory or TCP here UCX
//            runs them in software at the target, which polls);
//   mpi      the mpi transport, node size 1: a request executed at the owner, reply with the
//            old value;
//   mpishm   the mpi transport, node size 0: rank 1's segment is mapped, a CPU atomic.
// ops:
//   fetch_add latency   ctx.fetch_add(p, 1), blocking; µs per call (median of --reps reps of
//                       --iters calls).
//   fetch_add rate      --iters split-phase ctx.atomic(p, add, 1, flag) back to back, then
//                       wait for the flag; million atomics per second.
//   put bandwidth       --put-iters blocking ctx.put(dst, src, 1 MiB) (each returns when the
//                       data is in rank 1's segment); GB/s.
// MPI baseline (op names alike, system "mpi", transport "mpi"): an MPI_Win_allocate window of
// one word on each rank, MPI_Win_lock_all; latency = MPI_Fetch_and_op(MPI_SUM) +
// MPI_Win_flush(1) per call; rate = --iters MPI_Fetch_and_op then one MPI_Win_flush(1); put =
// MPI_Put of 1 MiB + MPI_Win_flush(1) per put into a 1 MiB MPI_Win_allocate window. The target
// waits in MPI_Barrier (MPI's progress) meanwhile.
// Every run checks the final word: exactly the number of adds made.
#include "lib/report.hpp"

#include <am/am.hpp>
#include <am/mpi.hpp>

#include <mpi.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace {

namespace ab = am::bench;
using clk = std::chrono::steady_clock;

constexpr std::size_t put_bytes = std::size_t{1} << 20;

struct opts {
    int reps = 7;
    std::uint64_t iters = 20000;
    std::uint64_t put_iters = 200;
    std::vector<std::string> transports{"ucx", "mpi", "mpishm"};
    bool json = false;
};

[[noreturn]] void usage(const char* why) {
    std::fprintf(stderr,
                 "atomic_bench: %s\nusage: atomic_bench [--json] [--reps N] [--iters N] "
                 "[--transports ucx,mpi,mpishm]\n",
                 why);
    std::exit(2);
}

opts parse(int argc, char** argv) {
    opts o;
    for (int i = 1; i < argc; ++i) {
        const std::string a = argv[i];
        auto value = [&] {
            if (i + 1 >= argc) usage(("missing value of " + a).c_str());
            return std::string(argv[++i]);
        };
        if (a == "--json") {
            o.json = true;
        } else if (a == "--reps") {
            o.reps = std::atoi(value().c_str());
        } else if (a == "--iters") {
            o.iters = std::strtoull(value().c_str(), nullptr, 10);
        } else if (a == "--put-iters") {
            o.put_iters = std::strtoull(value().c_str(), nullptr, 10);
        } else if (a == "--transports") {
            o.transports.clear();
            std::stringstream ss(value());
            for (std::string t; std::getline(ss, t, ',');) o.transports.push_back(t);
        } else {
            usage(("unknown option " + a).c_str());
        }
    }
    if (o.reps < 1 || o.iters < 1) usage("--reps and --iters must be positive");
    return o;
}

double seconds_since(clk::time_point t0) {
    return std::chrono::duration<double>(clk::now() - t0).count();
}

/// Latency and rate summaries of one system (rank 0's).
struct figures {
    ab::summary latency{}, rate{}, bandwidth{};
};

/// One am job on `transport`: rank 0 measures, rank 1 (the owner) polls in barriers.
figures run_am(const opts& o, const std::string& transport, ab::reporter& rep) {
    am::config cfg = am::config::from_env();
    cfg.transport = transport == "ucx" ? am::transport_kind::ucx : am::transport_kind::mpi;
    cfg.node_size = transport == "mpishm" ? 0 : 1;
    std::vector<double> lat, rate, bw;
    std::uint64_t final_word = 0, adds = 0;
    const int rc = am::run(MPI_COMM_WORLD, cfg, [&](am::context& ctx) {
        auto mine = ctx.allocate<std::uint64_t>(1);
        *ctx.local(mine) = 0;
        const auto all = ctx.exchange(mine);
        const auto target = all[1];
        const auto buffers = ctx.exchange(ctx.allocate<std::byte>(put_bytes));
        std::vector<std::byte> src(put_bytes, std::byte{7});
        for (int r = 0; r < o.reps + 1; ++r) {  // the first repetition warms up
            if (ctx.rank() == 0) {
                auto t0 = clk::now();
                for (std::uint64_t i = 0; i < o.iters; ++i) (void)ctx.fetch_add(target, 1);
                const double l = seconds_since(t0) * 1e6 / static_cast<double>(o.iters);
                am::counter flag(ctx);
                t0 = clk::now();
                for (std::uint64_t i = 0; i < o.iters; ++i)
                    ctx.atomic(target, am::atomic_op::add, 1, flag);
                while (flag.value() < o.iters) ctx.poll();
                const double m = static_cast<double>(o.iters) / seconds_since(t0) / 1e6;
                t0 = clk::now();
                for (std::uint64_t i = 0; i < o.put_iters; ++i)
                    ctx.put(buffers[1], src.data(), put_bytes);
                const double b =
                    static_cast<double>(put_bytes * o.put_iters) / seconds_since(t0) / 1e9;
                if (r > 0) {
                    lat.push_back(l);
                    rate.push_back(m);
                    bw.push_back(b);
                }
                adds += 2 * o.iters;
            }
            ctx.barrier();
        }
        if (ctx.rank() == 1) {
            final_word = *ctx.local(mine);
            const std::byte* got = ctx.local(buffers[1]);
            for (std::size_t i = 0; i < put_bytes; i += 4096) {
                if (got[i] != std::byte{7}) final_word = ~0ull;  // the put's data is not there
            }
        }
        ctx.barrier();
    });
    if (rc != 0) throw std::runtime_error("am::run failed on " + transport);
    // The check: rank 1's word counts every add rank 0 made.
    MPI_Bcast(&adds, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (me == 1 && final_word != adds) {
        std::fprintf(stderr, "atomic_bench: %s: the word is %llu, not %llu\n", transport.c_str(),
                     static_cast<unsigned long long>(final_word),
                     static_cast<unsigned long long>(adds));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    figures f;
    if (me == 0) {
        f = {ab::summarize(lat), ab::summarize(rate), ab::summarize(bw)};
        rep.add(ab::make_result("atomic_bench", "am", transport, 2, "fetch_add", 8, "latency_us",
                                f.latency));
        rep.add(ab::make_result("atomic_bench", "am", transport, 2, "fetch_add", 8, "rate_Mopsps",
                                f.rate));
        rep.add(ab::make_result("atomic_bench", "am", transport, 2, "put", put_bytes,
                                "bandwidth_GBps", f.bandwidth));
    }
    return f;
}

/// The MPI baseline: MPI_Fetch_and_op on an MPI_Win_allocate window, passive target.
figures run_mpi(const opts& o, ab::reporter& rep) {
    int me = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    std::uint64_t* word = nullptr;
    MPI_Win win;
    MPI_Win_allocate(sizeof(std::uint64_t), sizeof(std::uint64_t), MPI_INFO_NULL, MPI_COMM_WORLD,
                     &word, &win);
    *word = 0;
    MPI_Barrier(MPI_COMM_WORLD);
    std::byte* pbuf = nullptr;
    MPI_Win pwin;
    MPI_Win_allocate(static_cast<MPI_Aint>(put_bytes), 1, MPI_INFO_NULL, MPI_COMM_WORLD, &pbuf,
                     &pwin);
    std::vector<std::byte> src(put_bytes, std::byte{7});
    MPI_Win_lock_all(0, win);
    MPI_Win_lock_all(0, pwin);
    std::vector<double> lat, rate, bw;
    std::uint64_t adds = 0;
    const std::uint64_t one = 1;
    std::uint64_t old = 0;
    for (int r = 0; r < o.reps + 1; ++r) {
        if (me == 0) {
            auto t0 = clk::now();
            for (std::uint64_t i = 0; i < o.iters; ++i) {
                MPI_Fetch_and_op(&one, &old, MPI_UINT64_T, 1, 0, MPI_SUM, win);
                MPI_Win_flush(1, win);
            }
            const double l = seconds_since(t0) * 1e6 / static_cast<double>(o.iters);
            std::vector<std::uint64_t> olds(o.iters);
            t0 = clk::now();
            for (std::uint64_t i = 0; i < o.iters; ++i)
                MPI_Fetch_and_op(&one, &olds[i], MPI_UINT64_T, 1, 0, MPI_SUM, win);
            MPI_Win_flush(1, win);
            const double m = static_cast<double>(o.iters) / seconds_since(t0) / 1e6;
            t0 = clk::now();
            for (std::uint64_t i = 0; i < o.put_iters; ++i) {
                MPI_Put(src.data(), static_cast<int>(put_bytes), MPI_BYTE, 1, 0,
                        static_cast<int>(put_bytes), MPI_BYTE, pwin);
                MPI_Win_flush(1, pwin);
            }
            const double b = static_cast<double>(put_bytes * o.put_iters) / seconds_since(t0) / 1e9;
            if (r > 0) {
                lat.push_back(l);
                rate.push_back(m);
                bw.push_back(b);
            }
            adds += 2 * o.iters;
        }
        MPI_Barrier(MPI_COMM_WORLD);
    }
    MPI_Win_unlock_all(win);
    MPI_Win_unlock_all(pwin);
    MPI_Barrier(MPI_COMM_WORLD);
    MPI_Bcast(&adds, 1, MPI_UINT64_T, 0, MPI_COMM_WORLD);
    if (me == 1 && *word != adds) {
        std::fprintf(stderr, "atomic_bench: mpi: the word is %llu, not %llu\n",
                     static_cast<unsigned long long>(*word), static_cast<unsigned long long>(adds));
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    MPI_Win_free(&win);
    MPI_Win_free(&pwin);
    figures f;
    if (me == 0) {
        f = {ab::summarize(lat), ab::summarize(rate), ab::summarize(bw)};
        rep.add(ab::make_result("atomic_bench", "mpi", "mpi", 2, "put", put_bytes, "bandwidth_GBps",
                                f.bandwidth));
        rep.add(ab::make_result("atomic_bench", "mpi", "mpi", 2, "fetch_add", 8, "latency_us",
                                f.latency));
        rep.add(ab::make_result("atomic_bench", "mpi", "mpi", 2, "fetch_add", 8, "rate_Mopsps",
                                f.rate));
    }
    return f;
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    const opts o = parse(argc, argv);
    int me = 0, size = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    if (size != 2) {
        if (me == 0) std::fprintf(stderr, "atomic_bench: run it as 2 MPI processes\n");
        MPI_Finalize();
        return 2;
    }
    ab::reporter rep(me == 0 ? (o.json ? ab::output::json : ab::output::table) : ab::output::quiet);
    std::vector<figures> am;
    for (const std::string& t : o.transports) am.push_back(run_am(o, t, rep));
    const figures mpi = run_mpi(o, rep);
    if (me == 0) {  // am/MPI per transport, from this run
        for (std::size_t i = 0; i < am.size(); ++i) {
            const std::string& t = o.transports[i];
            rep.add(ab::make_result("atomic_bench", "am/mpi", t, 2, "fetch_add", 8, "latency_ratio",
                                    ab::ratio_of(am[i].latency, mpi.latency)));
            rep.add(ab::make_result("atomic_bench", "am/mpi", t, 2, "fetch_add", 8, "rate_ratio",
                                    ab::ratio_of(am[i].rate, mpi.rate)));
            rep.add(ab::make_result("atomic_bench", "am/mpi", t, 2, "put", put_bytes,
                                    "bandwidth_ratio",
                                    ab::ratio_of(am[i].bandwidth, mpi.bandwidth)));
        }
    }
    MPI_Finalize();
    return 0;
}
