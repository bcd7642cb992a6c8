// SPDX-License-Identifier: MIT
/// @file
/// Graph500 Kronecker and Erdős–Rényi edge generators (header-only, no dependency on `am`).
///
/// Every edge is a pure function of the parameters and its index, drawn from a counter-based
/// (splittable) random stream: rank r of P generates edges [r·M/P, (r+1)·M/P) and the union
/// over ranks is the same graph whatever P is. The PBGL baseline includes this header so both
/// systems traverse the very same graph.
///
/// - Kronecker (Graph500): N = 2^scale vertices, M = edgefactor·N edges; at each of the
///   `scale` levels an edge picks a quadrant with probabilities A = 0.57, B = C = 0.19,
///   D = 0.05; vertex labels are then scrambled by a bijection of [0, N).
/// - Erdős–Rényi G(n, M) plus a Hamiltonian cycle (AM++ §4.2): M = edgefactor·N uniform
///   edges, then N cycle edges (π(i), π(i+1 mod N)) through a scrambled order π, so the graph
///   is connected.
///
/// Weights are uniform in [0, 1) (floats with 24 random bits). Self-loops and duplicates are
/// generated as drawn; the CSR drops self-loops and keeps duplicates.
/// Thread-safety: all functions are pure.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>

namespace am::graph {

/// Which generator.
enum class graph_kind { kronecker, erdos_renyi };

/// Generator parameters: the whole graph is a function of these.
struct graph_spec {
    graph_kind kind = graph_kind::kronecker;
    int scale = 16;               ///< N = 2^scale vertices, 1 ≤ scale ≤ 31
    int edgefactor = 16;          ///< edges per vertex (before the cycle for ER)
    std::uint64_t seed = 0x5eed;  ///< one seed for endpoints, weights, scrambling and roots
};

/// One generated undirected edge.
struct edge {
    std::uint32_t u;
    std::uint32_t v;
    float w;
};

namespace detail {

/// Unsigned 128-bit integer (a GCC/Clang extension) for multiply-high reductions.
__extension__ using u128 = unsigned __int128;

/// SplitMix64's finaliser: a bijective 64-bit mix, the core of the counter-based stream.
constexpr std::uint64_t mix64(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

/// Stream `stream` of the generator at counter `i`: independent for distinct (stream, i).
constexpr std::uint64_t draw(std::uint64_t seed, std::uint64_t stream, std::uint64_t i) noexcept {
    return mix64(mix64(seed ^ (stream * 0xd1b54a32d192ed03ULL)) + i);
}

/// Uniform in [0, 1) from 24 random bits: exactly representable as a float.
constexpr float unit_float(std::uint64_t r) noexcept {
    return static_cast<float>(r >> 40) * (1.0f / 16777216.0f);
}

/// Uniform integer in [0, n) by a multiply-high reduction.
constexpr std::uint64_t below(std::uint64_t r, std::uint64_t n) noexcept {
    return static_cast<std::uint64_t>((static_cast<u128>(r) * n) >> 64);
}

enum : std::uint64_t {
    stream_endpoints = 1,
    stream_weights = 2,
    stream_scramble = 3,
    stream_roots = 4,
    stream_er = 5
};

}  // namespace detail

/// Number of vertices, 2^scale.
constexpr std::uint64_t vertex_count(const graph_spec& s) noexcept {
    return std::uint64_t{1} << s.scale;
}

/// Number of generated edges: edgefactor·N (Kronecker), edgefactor·N + N (ER with cycle).
constexpr std::uint64_t edge_count(const graph_spec& s) noexcept {
    const std::uint64_t n = vertex_count(s);
    const std::uint64_t m = static_cast<std::uint64_t>(s.edgefactor) * n;
    return s.kind == graph_kind::kronecker ? m : m + n;
}

/// Throws std::invalid_argument naming the bad field (scale outside 1..31, edgefactor < 1 or
/// more than 2^40 edges).
inline void check_spec(const graph_spec& s) {
    if (s.scale < 1 || s.scale > 31) {
        throw std::invalid_argument("graph: scale " + std::to_string(s.scale) +
                                    " outside 1..31 (vertex ids are 32-bit)");
    }
    if (s.edgefactor < 1 || s.edgefactor > 1024) {
        throw std::invalid_argument("graph: edgefactor " + std::to_string(s.edgefactor) +
                                    " outside 1..1024");
    }
    if (edge_count(s) > (std::uint64_t{1} << 40)) {
        throw std::invalid_argument("graph: edgefactor " + std::to_string(s.edgefactor) +
                                    " at scale " + std::to_string(s.scale) +
                                    " gives more than 2^40 edges");
    }
}

/// The label scrambling: a bijection of [0, 2^scale) (multiplications by odd constants,
/// additions and right xor-shifts, all modulo 2^scale, are each invertible).
constexpr std::uint32_t scramble(const graph_spec& s, std::uint64_t v) noexcept {
    const std::uint64_t mask = vertex_count(s) - 1;
    const std::uint64_t k = detail::draw(s.seed, detail::stream_scramble, 0);
    const int shift = s.scale / 2 + 1;
    v = (v * (k | 1)) & mask;
    v = (v + (k >> 32)) & mask;
    v ^= v >> shift;
    v = (v * 0x2545f4914f6cdd1dULL) & mask;
    v ^= v >> shift;
    v = (v + (k >> 17)) & mask;
    return static_cast<std::uint32_t>(v);
}

/// Edge `i` (0 ≤ i < edge_count(s)) of the graph.
inline edge make_edge(const graph_spec& s, std::uint64_t i) noexcept {
    std::uint64_t u = 0, v = 0;
    if (s.kind == graph_kind::kronecker) {
        // One 32-bit uniform per level; two levels per 64-bit draw.
        constexpr auto a = static_cast<std::uint32_t>(0.57 * 4294967296.0);
        constexpr auto ab = static_cast<std::uint32_t>((0.57 + 0.19) * 4294967296.0);
        constexpr auto abc = static_cast<std::uint32_t>((0.57 + 0.19 + 0.19) * 4294967296.0);
        std::uint64_t r = 0;
        for (int level = 0; level < s.scale; ++level) {
            if ((level & 1) == 0)
                r = detail::draw(s.seed, detail::stream_endpoints, i * 16 + level / 2);
            const auto x = static_cast<std::uint32_t>(r);
            r >>= 32;
            const std::uint64_t bu = x >= ab ? 1 : 0;                         // C or D
            const std::uint64_t bv = (x >= a && x < ab) || x >= abc ? 1 : 0;  // B or D
            u = (u << 1) | bu;
            v = (v << 1) | bv;
        }
        u = scramble(s, u);
        v = scramble(s, v);
    } else {
        const std::uint64_t n = vertex_count(s);
        const std::uint64_t m = static_cast<std::uint64_t>(s.edgefactor) * n;
        if (i < m) {
            u = detail::below(detail::draw(s.seed, detail::stream_er, 2 * i), n);
            v = detail::below(detail::draw(s.seed, detail::stream_er, 2 * i + 1), n);
        } else {
            const std::uint64_t k = i - m;
            u = scramble(s, k);
            v = scramble(s, (k + 1) & (n - 1));
        }
    }
    const float w = detail::unit_float(detail::draw(s.seed, detail::stream_weights, i));
    return {static_cast<std::uint32_t>(u), static_cast<std::uint32_t>(v), w};
}

/// The first edge index of part `part` of `parts` equal parts (the last takes the remainder).
constexpr std::uint64_t part_begin(const graph_spec& s, int part, int parts) noexcept {
    return static_cast<std::uint64_t>(
        (static_cast<detail::u128>(edge_count(s)) * static_cast<unsigned>(part)) /
        static_cast<unsigned>(parts));
}

/// Root candidate `k` (Graph500 draws search keys from a random stream and skips vertices
/// without edges and repeats; the caller applies those rules).
constexpr std::uint32_t root_candidate(const graph_spec& s, std::uint64_t k) noexcept {
    return static_cast<std::uint32_t>(
        detail::below(detail::draw(s.seed, detail::stream_roots, k), vertex_count(s)));
}

}  // namespace am::graph
