// SPDX-License-Identifier: MIT
// Connected components with am::dist::disjoint_set (docs/containers.md): every rank adds its
// share of the edges of a random graph with async_union, all_compress points every vertex at its
// component's smallest vertex, and rank 0 prints the number of components. `--check` compares
// with a sequential union-find over the same edges and exits non-zero on any difference.
//
//   AM_TRANSPORT=shm AM_RANKS=2 build/examples/dist_components --vertices 100000 --edges 60000
#include <am/am.hpp>
#include <am/dist.hpp>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <stdexcept>
#include <string_view>
#include <vector>

namespace {

std::uint64_t mix(std::uint64_t x) {  // splitmix64
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Edge i of the graph: the same on every rank.
std::pair<std::uint64_t, std::uint64_t> edge(std::uint64_t i, std::uint64_t vertices) {
    return {mix(2 * i) % vertices, mix(2 * i + 1) % vertices};
}

std::uint64_t find(std::vector<std::uint64_t>& p, std::uint64_t v) {
    while (p[v] != v) v = p[v] = p[p[v]];
    return v;
}

}  // namespace

int main(int argc, char** argv) {
    std::uint64_t vertices = 20000, edges = 12000;
    bool check = false;
    for (int i = 1; i < argc; ++i) {
        const std::string_view a = argv[i];
        if (a == "--check") {
            check = true;
        } else if (a == "--vertices" && i + 1 < argc) {
            vertices = std::strtoull(argv[++i], nullptr, 10);
        } else if (a == "--edges" && i + 1 < argc) {
            edges = std::strtoull(argv[++i], nullptr, 10);
        }
    }
    return am::run(argc, argv, [&](am::context& ctx) {
        const am::team world = am::coll::world(ctx);
        am::dist::disjoint_set<std::uint64_t> sets(world);
        const auto me = static_cast<std::uint64_t>(ctx.rank());
        const auto n = static_cast<std::uint64_t>(ctx.size());
        for (std::uint64_t v = me; v < vertices; v += n) sets.insert(v);
        for (std::uint64_t i = me; i < edges; i += n) {
            const auto [a, b] = edge(i, vertices);
            sets.async_union(a, b);
        }
        sets.all_compress();
        const std::size_t components = sets.num_sets();
        if (ctx.rank() == 0) {
            std::printf("%llu vertices, %llu edges: %zu components on %d ranks\n",
                        static_cast<unsigned long long>(vertices),
                        static_cast<unsigned long long>(edges), components, ctx.size());
        }
        if (!check) return;
        // Sequential union-find; every vertex's representative is its component's smallest.
        std::vector<std::uint64_t> p(vertices);
        std::iota(p.begin(), p.end(), 0);
        for (std::uint64_t i = 0; i < edges; ++i) {
            const auto [a, b] = edge(i, vertices);
            const auto ra = find(p, a), rb = find(p, b);
            if (ra != rb) p[std::max(ra, rb)] = std::min(ra, rb);
        }
        std::size_t wrong = 0, roots = 0;
        for (std::uint64_t v = 0; v < vertices; ++v) roots += find(p, v) == v ? 1 : 0;
        sets.for_all(
            [&](std::uint64_t v, std::uint64_t root) { wrong += find(p, v) == root ? 0 : 1; });
        wrong = am::coll::allreduce(world, wrong, am::coll::sum{});
        if (ctx.rank() == 0) {
            std::printf("check: %zu components expected, %zu wrong\n", roots, wrong);
        }
        if (wrong != 0 || roots != components) throw std::runtime_error("dist_components: wrong");
    });
}
