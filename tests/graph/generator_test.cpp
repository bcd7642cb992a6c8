// SPDX-License-Identifier: MIT
// The generators of graph/generator.hpp and the vertex partition (no ranks): edges do not
// depend on how the index range is split, the parts tile it, the label scrambling is a
// bijection, weights are 24-bit floats in [0, 1), Kronecker degrees are skewed and Erdős–Rényi
// ones are not, the ER cycle is Hamiltonian so the graph is connected, and check_spec names
// the bad field. The partition tiles the vertices and owner() agrees with first()/count().
#include "graph_support.hpp"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

namespace {

using namespace graph_test;
using am::graph::edge;
using am::graph::edge_count;
using am::graph::make_edge;
using am::graph::part_begin;
using am::graph::partition;
using am::graph::vertex_count;

bool same(const edge& a, const edge& b) {
    return a.u == b.u && a.v == b.v && a.w == b.w;
}

std::vector<graph_spec> small_specs() {
    return {kronecker(10, 16), erdos_renyi(9, 8), kronecker(1, 1), erdos_renyi(3, 2),
            kronecker(7, 5, 42)};
}

// Rank r of P generates edges [part_begin(r), part_begin(r + 1)): walking the parts of every
// P = 1..7 in any order yields edge i exactly as generated for the whole range, with every
// endpoint a vertex of the graph.
TEST(graph_generator, edges_do_not_depend_on_partition) {
    for (const graph_spec& s : small_specs()) {
        const std::uint64_t m = edge_count(s);
        std::vector<edge> whole(m);
        for (std::uint64_t i = 0; i < m; ++i) whole[i] = make_edge(s, i);
        for (const edge& e : whole) {
            ASSERT_LT(e.u, vertex_count(s)) << describe(s);
            ASSERT_LT(e.v, vertex_count(s)) << describe(s);
        }
        for (int parts = 1; parts <= 7; ++parts) {
            std::uint64_t mismatched = 0, seen = 0;
            for (int part = parts - 1; part >= 0; --part) {  // last part first: no hidden state
                for (std::uint64_t i = part_begin(s, part, parts);
                     i < part_begin(s, part + 1, parts); ++i) {
                    ++seen;
                    if (!same(make_edge(s, i), whole[i])) ++mismatched;
                }
            }
            EXPECT_EQ(seen, m) << describe(s) << " in " << parts << " parts";
            EXPECT_EQ(mismatched, 0u) << describe(s) << " in " << parts << " parts";
        }
    }
}

// The seed decides the graph: another seed gives (almost) entirely different edges.
TEST(graph_generator, seed_changes_the_graph) {
    for (graph_kind kind : {graph_kind::kronecker, graph_kind::erdos_renyi}) {
        const graph_spec a{kind, 10, 8, 1};
        const graph_spec b{kind, 10, 8, 2};
        std::uint64_t equal = 0;
        for (std::uint64_t i = 0; i < edge_count(a); ++i) {
            if (same(make_edge(a, i), make_edge(b, i))) ++equal;
        }
        EXPECT_LT(equal, edge_count(a) / 100) << describe(a);
    }
}

// The parts tile [0, M): part 0 starts at 0, each part starts where the previous ended, the
// last ends at M, and parts differ in size by at most one; also for the largest graphs (the
// index arithmetic must not overflow).
TEST(graph_generator, parts_tile_the_edge_range) {
    std::vector<graph_spec> specs = small_specs();
    specs.push_back(kronecker(31, 1024));
    specs.push_back(erdos_renyi(30, 1000));
    specs.push_back(kronecker(2, 1));
    for (const graph_spec& s : specs) {
        const std::uint64_t m = edge_count(s);
        for (int parts = 1; parts <= 7; ++parts) {
            EXPECT_EQ(part_begin(s, 0, parts), 0u);
            EXPECT_EQ(part_begin(s, parts, parts), m) << describe(s) << ", " << parts;
            std::uint64_t smallest = m, largest = 0;
            for (int p = 0; p < parts; ++p) {
                const std::uint64_t b = part_begin(s, p, parts), e = part_begin(s, p + 1, parts);
                ASSERT_LE(b, e) << describe(s) << ", part " << p << " of " << parts;
                smallest = std::min(smallest, e - b);
                largest = std::max(largest, e - b);
            }
            EXPECT_LE(largest - smallest, 1u) << describe(s) << ", " << parts << " parts";
        }
    }
    EXPECT_EQ(edge_count(kronecker(10, 16)), 16u << 10);
    EXPECT_EQ(edge_count(erdos_renyi(10, 16)), (16u << 10) + (1u << 10));
}

// scramble() is a bijection of [0, 2^scale) for every scale 1..16 (and two seeds).
TEST(graph_generator, scramble_is_a_bijection) {
    for (std::uint64_t seed : {std::uint64_t{0x5eed}, std::uint64_t{7}}) {
        for (int scale = 1; scale <= 16; ++scale) {
            const graph_spec s = kronecker(scale, 1, seed);
            const std::uint64_t n = vertex_count(s);
            std::vector<char> hit(n, 0);
            std::uint64_t repeats = 0, out_of_range = 0;
            for (std::uint64_t v = 0; v < n; ++v) {
                const std::uint32_t x = am::graph::scramble(s, v);
                if (x >= n) {
                    ++out_of_range;
                } else if (hit[x]++ != 0) {
                    ++repeats;
                }
            }
            EXPECT_EQ(out_of_range, 0u) << "scale " << scale << " seed " << seed;
            EXPECT_EQ(repeats, 0u) << "scale " << scale << " seed " << seed;
        }
    }
}

// Weights are floats in [0, 1) with 24 random bits (multiples of 2^-24), spread over the
// interval (mean near 1/2), on both generators.
TEST(graph_generator, weights_in_unit_interval) {
    for (const graph_spec& s : {kronecker(10, 16), erdos_renyi(10, 16)}) {
        double sum = 0;
        float lo = 1, hi = 0;
        const std::uint64_t m = edge_count(s);
        for (std::uint64_t i = 0; i < m; ++i) {
            const float w = make_edge(s, i).w;
            ASSERT_GE(w, 0.0f) << describe(s) << " edge " << i;
            ASSERT_LT(w, 1.0f) << describe(s) << " edge " << i;
            const float scaled = w * 16777216.0f;
            ASSERT_EQ(scaled, std::floor(scaled)) << describe(s) << " edge " << i << ": " << w;
            sum += w;
            lo = std::min(lo, w);
            hi = std::max(hi, w);
        }
        EXPECT_NEAR(sum / static_cast<double>(m), 0.5, 0.02) << describe(s);
        EXPECT_LT(lo, 0.001f) << describe(s);
        EXPECT_GT(hi, 0.999f) << describe(s);
    }
}

// Kronecker graphs are skewed (the largest degree is many times the mean, and many vertices
// have no edge); Erdős–Rényi graphs are not (degrees stay near the mean, none is isolated).
TEST(graph_generator, kronecker_degrees_are_skewed) {
    const reference kron = make_reference(kronecker(12, 16));
    const reference er = make_reference(erdos_renyi(12, 16));
    auto stats = [](const reference& r, std::uint64_t& max, std::uint64_t& isolated) {
        max = isolated = 0;
        for (std::uint32_t v = 0; v < r.n; ++v) {
            max = std::max(max, r.degree(v));
            if (r.degree(v) == 0) ++isolated;
        }
        return static_cast<double>(r.adj.size()) / r.n;
    };
    std::uint64_t kmax = 0, kisolated = 0, emax = 0, eisolated = 0;
    const double kmean = stats(kron, kmax, kisolated);
    const double emean = stats(er, emax, eisolated);
    EXPECT_GT(static_cast<double>(kmax), 20 * kmean) << "max " << kmax << ", mean " << kmean;
    EXPECT_GT(kisolated, kron.n / 10) << "isolated " << kisolated;
    EXPECT_LT(static_cast<double>(emax), 3 * emean) << "max " << emax << ", mean " << emean;
    EXPECT_EQ(eisolated, 0u);
}

// ER: the last N edges are the cycle π(0) – π(1) – … – π(N−1) – π(0) through every vertex
// once, so the graph is connected (a sequential BFS reaches every vertex), at every scale.
TEST(graph_generator, erdos_renyi_has_a_hamiltonian_cycle) {
    for (int scale = 1; scale <= 12; ++scale) {
        const graph_spec s = erdos_renyi(scale, scale % 3 + 1);
        const std::uint64_t n = vertex_count(s);
        const std::uint64_t m = edge_count(s) - n;
        std::vector<int> visits(n, 0);
        for (std::uint64_t k = 0; k < n; ++k) {
            const edge e = make_edge(s, m + k);
            const edge next = make_edge(s, m + (k + 1) % n);
            ASSERT_EQ(e.v, next.u) << "scale " << scale << ": cycle edge " << k << " of " << n
                                   << " does not continue at the next one";
            ASSERT_NE(e.u, e.v) << "scale " << scale << ": cycle edge " << k << " is a loop";
            ++visits[e.u];
        }
        EXPECT_EQ(std::count(visits.begin(), visits.end(), 1), static_cast<std::ptrdiff_t>(n))
            << "scale " << scale << ": the cycle does not pass every vertex exactly once";
        const reference r = make_reference(s);
        const std::vector<std::int32_t> level = bfs_levels(r, 0);
        EXPECT_EQ(std::count(level.begin(), level.end(), -1), 0) << "scale " << scale;
    }
}

template <class F>
void expect_invalid(F&& f, const std::string& field, const std::string& value) {
    try {
        f();
        ADD_FAILURE() << "no exception for " << field << " " << value;
    } catch (const std::invalid_argument& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(field + " " + value), std::string::npos) << what;
    }
}

// check_spec rejects scale 0 and 32 (and negative), edgefactor 0 (and out of 1..1024, or
// more than 2^40 edges), with a message naming the field and its value; it accepts the limits
// (2^30 vertices with 1024 edges each are exactly 2^40 edges).
TEST(graph_generator, check_spec_names_the_bad_field) {
    for (int scale : {0, 32, -1, 40}) {
        expect_invalid([&] { am::graph::check_spec(kronecker(scale, 16)); }, "scale",
                       std::to_string(scale));
    }
    for (int ef : {0, -3, 1025}) {
        expect_invalid([&] { am::graph::check_spec(erdos_renyi(10, ef)); }, "edgefactor",
                       std::to_string(ef));
    }
    // More than 2^40 edges (documented limit): 2^31 vertices with 1024 edges each, or ER's
    // 2^31 · 512 + 2^31.
    expect_invalid([] { am::graph::check_spec(kronecker(31, 1024)); }, "edgefactor", "1024");
    expect_invalid([] { am::graph::check_spec(erdos_renyi(31, 512)); }, "edgefactor", "512");
    for (const graph_spec& s : {kronecker(1, 1), kronecker(31, 16), erdos_renyi(31, 1),
                                kronecker(20, 1024), kronecker(30, 1024)}) {
        EXPECT_NO_THROW(am::graph::check_spec(s)) << describe(s);
    }
}

// Root candidates are vertices of the graph.
TEST(graph_generator, root_candidates_in_range) {
    for (const graph_spec& s : small_specs()) {
        for (std::uint64_t k = 0; k < 1000; ++k) {
            ASSERT_LT(am::graph::root_candidate(s, k), vertex_count(s)) << describe(s);
        }
    }
}

// The block partition: chunks are multiples of 64 (a bitmap word never straddles two
// ranks), ranks own consecutive blocks that tile [0, n) in rank order (trailing ranks own
// nothing when n < 64·ranks), and owner(v) is the rank whose block holds v — for every v of
// small graphs and at every block boundary of large ones, for rank counts that are not powers
// of two.
TEST(graph_partition, blocks_tile_the_vertices) {
    const std::vector<std::uint64_t> sizes = {1,    2,    63,   64,   65,      100,     128,
                                              1000, 4096, 5000, 4097, 1 << 20, 3 << 20, 1u << 31};
    const std::vector<int> rank_counts = {1, 2, 3, 4, 5, 6, 7, 9, 13, 64, 100, 1000};
    for (std::uint64_t n : sizes) {
        for (int ranks : rank_counts) {
            const partition p(n, ranks);
            const std::string where =
                "n " + std::to_string(n) + ", " + std::to_string(ranks) + " ranks";
            ASSERT_EQ(p.n(), n) << where;
            EXPECT_EQ(p.chunk() % 64, 0u) << where;
            EXPECT_GE(p.chunk() * static_cast<std::uint64_t>(ranks), n) << where;
            std::uint64_t next = 0;
            for (int r = 0; r < ranks; ++r) {
                ASSERT_EQ(p.first(r), next) << where << ", rank " << r;
                ASSERT_LE(p.count(r), p.chunk()) << where << ", rank " << r;
                if (p.count(r) < p.chunk()) {  // only the last owning rank has a short block
                    EXPECT_EQ(next + p.count(r), n) << where << ", rank " << r;
                }
                next += p.count(r);
                for (std::uint64_t v :
                     {std::uint64_t{p.first(r)}, std::uint64_t{p.first(r)} + p.count(r) - 1}) {
                    if (p.count(r) == 0) break;
                    ASSERT_EQ(p.owner(static_cast<std::uint32_t>(v)), r) << where << ", v " << v;
                }
            }
            EXPECT_EQ(next, n) << where;
            if (n <= 5000) {
                for (std::uint64_t v = 0; v < n; ++v) {
                    const int r = p.owner(static_cast<std::uint32_t>(v));
                    ASSERT_TRUE(r >= 0 && r < ranks) << where << ", v " << v;
                    ASSERT_TRUE(v >= p.first(r) && v < std::uint64_t{p.first(r)} + p.count(r))
                        << where << ", v " << v << " owned by " << r;
                }
            }
        }
    }
}

}  // namespace
