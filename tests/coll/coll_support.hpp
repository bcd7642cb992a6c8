// SPDX-License-Identifier: MIT
// Test support for am::coll: the job shapes, deterministic data (the same on every rank, so
// each rank can compute every other rank's contribution and the sequential reference), the
// roots a test tries, and a user type with its own am::serializer.
#pragma once

#include "support/spmd.hpp"

#include <am/coll.hpp>

#include <cstdint>
#include <string>
#include <vector>

namespace coll_test {

/// Threads at 1, 2, 3, 5, 7, 8 and 64 ranks, shm at 1-4; with MPI, mpi at 2 and 4 and mpimix at
/// 4 (make_params) and mpi at 1 and 3 besides (odd sizes and a team of one over MPI).
inline std::vector<am_test::spmd_param> params() {
    auto v = am_test::make_params({1, 2, 3, 5, 7, 8, 64}, {1, 2, 3, 4});
#ifdef AM_HAVE_MPI
    v.push_back({am::transport_kind::mpi, 1, 1});
    v.push_back({am::transport_kind::mpi, 3, 1});
#endif
    return v;
}

/// Rounds of a randomised test: fewer at 64 ranks (2 cores run them all).
inline int rounds(int n) {
    return n > 8 ? 1 : 3;
}

/// A deterministic 64-bit draw for (what, round, rank, index): seeded, the same on every rank.
inline std::uint64_t draw(std::uint64_t what, int round, int rank, std::uint64_t i = 0) {
    using am_test::mix;
    return mix(mix(mix(what) ^ static_cast<std::uint64_t>(round)) ^
               (static_cast<std::uint64_t>(rank) << 32 | (i & 0xffffffffu)));
}

/// The roots a rooted collective tries: every rank up to 8 ranks, else 0, the last and one
/// that changes with the round.
inline std::vector<int> roots(int n, int round) {
    std::vector<int> v;
    if (n <= 8) {
        for (int r = 0; r < n; ++r) v.push_back(r);
    } else {
        v = {0, n - 1, (7 * round + 5) % n};
    }
    return v;
}

/// A 2x2 matrix of integers (mod 2^64): its product is not commutative, so a result in any
/// order but the ranks' differs.
struct mat {
    std::uint64_t a, b, c, d;
    friend bool operator==(const mat&, const mat&) = default;
};
inline mat mat_mul(const mat& x, const mat& y) {
    return {x.a * y.a + x.b * y.c, x.a * y.b + x.b * y.d, x.c * y.a + x.d * y.c,
            x.c * y.b + x.d * y.d};
}
struct mat_mul_op {
    mat operator()(const mat& x, const mat& y) const { return mat_mul(x, y); }
};

/// A type that travels through its own am::serializer (not trivially copyable).
struct record {
    std::string name;
    std::vector<std::uint32_t> xs;
    std::int64_t weight = 0;
    friend bool operator==(const record&, const record&) = default;
};

/// Non-commutative on record: names and xs concatenated, weights summed.
struct record_join {
    record operator()(record x, const record& y) const {
        x.name += y.name;
        x.xs.insert(x.xs.end(), y.xs.begin(), y.xs.end());
        x.weight += y.weight;
        return x;
    }
};

inline record make_record(std::uint64_t what, int round, int rank) {
    record r;
    const std::uint64_t d = draw(what, round, rank);
    r.name = std::to_string(rank) + std::string(d % 4, static_cast<char>('a' + rank % 26)) + ";";
    for (std::uint64_t i = 0; i < (d >> 8) % 5; ++i) {
        r.xs.push_back(static_cast<std::uint32_t>(draw(what + 1, round, rank, i)));
    }
    r.weight = static_cast<std::int64_t>(d >> 40) - (std::int64_t{1} << 23);
    return r;
}

/// A string of `draw`-chosen length 0-6 that names its rank.
inline std::string make_string(std::uint64_t what, int round, int rank) {
    const std::uint64_t d = draw(what, round, rank);
    return std::string(d % 7, static_cast<char>('A' + rank % 26)) + std::to_string(rank % 10);
}

}  // namespace coll_test

template <>
struct am::serializer<coll_test::record> {
    static void write(serial_writer& w, const coll_test::record& r) {
        serializer<std::string>::write(w, r.name);
        serializer<std::vector<std::uint32_t>>::write(w, r.xs);
        serializer<std::int64_t>::write(w, r.weight);
    }
    static coll_test::record read(serial_reader& r) {
        coll_test::record v;
        v.name = serializer<std::string>::read(r);
        v.xs = serializer<std::vector<std::uint32_t>>::read(r);
        v.weight = serializer<std::int64_t>::read(r);
        return v;
    }
};
