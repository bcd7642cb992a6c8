// SPDX-License-Identifier: MIT
// A degree histogram with am::dist::map (docs/containers.md): every rank reads its byte range of
// an edge list ("u,v" per line, CSV), counts each vertex's degree at the vertex's owner with
// async_visit, then counts how many vertices have each degree in a second map, and rank 0
// prints the histogram. Without a file it writes and reads a generated edge list. `--check`
// compares with a sequential count and exits non-zero on any difference.
//
//   AM_TRANSPORT=shm AM_RANKS=2 build/examples/dist_degrees edges.csv
#include <am/am.hpp>
#include <am/dist.hpp>

#include <unistd.h>
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

namespace {

std::uint64_t number(std::string_view s) {
    std::uint64_t v = 0;
    const auto r = std::from_chars(s.data(), s.data() + s.size(), v);
    if (r.ec != std::errc{})
        throw std::runtime_error("dist_degrees: not a vertex: " + std::string(s));
    return v;
}

void write_edges(const std::string& path, int edges) {
    std::ofstream out(path);
    std::uint64_t x = 7;
    for (int i = 0; i < edges; ++i) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        const std::uint64_t u = (x >> 33) % 1000, v = (x >> 13) % (u + 1);  // low ids: high degree
        out << u << ',' << v << '\n';
    }
}

}  // namespace

int main(int argc, char** argv) {
    bool check = false;
    std::string path;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--check") {
            check = true;
        } else {
            path = argv[i];
        }
    }
    std::string generated;
    if (path.empty()) {
        path = generated = "/tmp/am_degrees_" + std::to_string(::getpid()) + ".csv";
        write_edges(path, 20000);
    }
    const int status = am::run(argc, argv, [&](am::context& ctx) {
        const am::team world = am::coll::world(ctx);
        am::dist::map<std::uint64_t, std::uint64_t> degree(world);
        (void)am::dist::read_lines(world, {path}, [&](std::string_view line) {
            const auto f = am::dist::split_fields(line);
            if (f.size() != 2) return;
            for (const auto v : f) {
                degree.async_visit(number(v), [](const std::uint64_t&, std::uint64_t& d) { ++d; });
            }
        });
        degree.barrier();
        am::dist::map<std::uint64_t, std::uint64_t> histogram(world);
        degree.for_all([&](const std::uint64_t&, std::uint64_t d) {
            histogram.async_visit(d, [](const std::uint64_t&, std::uint64_t& c) { ++c; });
        });
        auto h = histogram.gather(0);
        std::map<std::uint64_t, std::uint64_t> sorted(h.begin(), h.end());
        if (ctx.rank() == 0) {
            std::printf("degree histogram on %d ranks (degree: vertices), first 10:\n", ctx.size());
            int shown = 0;
            for (const auto& [d, c] : sorted) {
                if (shown++ == 10) break;
                std::printf("  %llu: %llu\n", static_cast<unsigned long long>(d),
                            static_cast<unsigned long long>(c));
            }
        }
        if (!check || ctx.rank() != 0) return;
        std::unordered_map<std::uint64_t, std::uint64_t> deg;
        std::ifstream in(path);
        for (std::string line; std::getline(in, line);) {
            const auto f = am::dist::split_fields(line);
            if (f.size() != 2) continue;
            for (const auto v : f) ++deg[number(v)];
        }
        std::map<std::uint64_t, std::uint64_t> want;
        for (const auto& [v, d] : deg) ++want[d];
        std::printf("check: %zu degrees, %s\n", want.size(),
                    want == sorted ? "equal" : "DIFFERENT");
        if (want != sorted) throw std::runtime_error("dist_degrees: histogram differs");
    });
    if (!generated.empty()) std::remove(generated.c_str());
    return status;
}
