// SPDX-License-Identifier: MIT
/// @file
/// Shared by containers_bench (am::dist) and its MPI baseline (mpi_dist_baseline): the ops,
/// the key types and distributions, the keys every rank draws (both sides and the
/// single-threaded std::unordered_map reference draw the same ones), the owner of a key (am's
/// own hash: `am::dist::detail::owner_of`), what a received operation does to a local
/// std::unordered_map / set / vector, and the options these programs add to the shared ones.
/// Header-only; needs no MPI, and of am only the header of that hash.
#pragma once

#include "coll/coll_bench.hpp"
#include "lib/options.hpp"
#include "lib/report.hpp"
#include "lib/sys.hpp"

#include <am/dist/object.hpp>

#include <algorithm>
#include <cmath>
#include <compare>
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>
#include <vector>

namespace am::bench::dist {

constexpr const char* bench_name = "dist";
/// The system of the single-threaded std::unordered_map reference, and the metrics of the ratio
/// lines (system "am/mpi": over mpi_alltoallv; "am/std": am per rank over std_umap).
constexpr const char* std_system = "std_umap";
constexpr const char* mpi_ratio = "ratio_am_over_mpi";
constexpr const char* std_ratio = "ratio_am_rank_over_std";

/// Every op, in the order a job runs them:
///   map_insert    am::dist::map<K, uint64_t>::insert(k, v)        (try_emplace at the owner)
///   set_insert    am::dist::set<K>::insert(k)
///   counting_set  am::dist::counting_set<K>::add(k)                (count += 1 at the owner)
///   visit         am::dist::map<K, uint64_t>::async_visit(k, v += x, x = 1)
///   bag           am::dist::bag<K>::insert(k)                      (round-robin)
///   dsu           am::dist::disjoint_set<K>::async_union(k, k')    (edges of a random graph)
inline const std::vector<std::string> all_ops = {"map_insert", "counting_set", "set_insert",
                                                 "visit",      "bag",          "dsu"};

inline bool known_op(std::string_view op) {
    return std::find(all_ops.begin(), all_ops.end(), op) != all_ops.end();
}

/// Whether the op sends a uint64 beside the key (map_insert: the value; visit: the addend).
inline bool with_value(std::string_view op) {
    return op == "map_insert" || op == "visit";
}

/// The 32-byte key: a trivially copyable struct of four words (am sends it as its bytes).
struct key32 {
    std::uint64_t w[4];
    friend auto operator<=>(const key32&, const key32&) = default;
};
/// Its hash: the four words mixed (the owner then mixes it again, as for any key).
struct key32_hash {
    std::size_t operator()(const key32& k) const noexcept {
        std::uint64_t h = k.w[0];
        for (int i = 1; i < 4; ++i)
            h = (h ^ (k.w[i] + (h << 6) + (h >> 2))) * 0x9e3779b97f4a7c15ull;
        return static_cast<std::size_t>(h);
    }
};

/// The hash of a key type: std::hash for uint64 (8 B keys), key32_hash for key32 (32 B).
template <class K>
struct hash_of {
    using type = std::hash<K>;
};
template <>
struct hash_of<key32> {
    using type = key32_hash;
};
template <class K>
using hash_t = typename hash_of<K>::type;

/// The rank (of `ranks`) that keeps `k`: the hash am::dist's containers use.
template <class K>
int owner(const K& k, int ranks) {
    return am::dist::detail::owner_of<hash_t<K>>(k, ranks);
}

/// splitmix64's finaliser.
constexpr std::uint64_t mix(std::uint64_t x) {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

/// Power-law keys: a Zipf-like draw (exponent 1) over this many distinct keys.
inline constexpr std::uint64_t powerlaw_universe = std::uint64_t{1} << 20;

/// Key `i` of rank `rank`'s stream. uniform: 64 random bits (practically all distinct);
/// powerlaw: index floor((U + 1)^u) - 1 for uniform u in [0, 1) (density ~ 1/x, Zipf with
/// s = 1, continuous), then mixed so that the hot keys spread over the owners. The same hot
/// keys on every rank.
inline std::uint64_t draw(int rank, std::uint64_t i, bool powerlaw) {
    const std::uint64_t r = mix((static_cast<std::uint64_t>(rank) << 40) ^ i);
    if (!powerlaw) return r;
    const double u = static_cast<double>(r >> 11) * 0x1.0p-53;
    auto x = static_cast<std::uint64_t>(std::exp(u * std::log(double(powerlaw_universe) + 1)));
    x = std::min(std::max<std::uint64_t>(x, 1), powerlaw_universe) - 1;
    return mix(x ^ 0x5bd1e995ull);
}

template <class K>
K make_key(std::uint64_t x) {
    if constexpr (std::is_same_v<K, key32>) {
        return key32{{x, mix(x ^ 1), mix(x ^ 2), mix(x ^ 3)}};
    } else {
        return x;
    }
}

/// The `n` keys rank `rank` operates on.
template <class K>
std::vector<K> keys_of(int rank, std::uint64_t n, bool powerlaw) {
    std::vector<K> v;
    v.reserve(n);
    for (std::uint64_t i = 0; i < n; ++i) v.push_back(make_key<K>(draw(rank, i, powerlaw)));
    return v;
}

/// dsu: operation i of a rank joins keys[i] and keys[partner(rank, i, n)] (a random graph of n
/// edges over the rank's keys; ranks meet on shared keys, the hot ones of a power law).
inline std::uint64_t partner(int rank, std::uint64_t i, std::uint64_t n) {
    return mix(i ^ (static_cast<std::uint64_t>(rank) << 32) ^ 0xd5a61266ull) % n;
}

/// The value map_insert inserts, and visit's addend.
template <class K>
std::uint64_t value_of(const K&) {
    return 1;
}

/// The ops as types, so that the loops that time them test nothing per operation.
enum class kind { map_insert, counting_set, set_insert, visit, bag, dsu };
template <kind O>
using kind_t = std::integral_constant<kind, O>;

/// Calls `f(kind_t<O>{})` for op `op` (one of `all_ops`).
template <class F>
decltype(auto) with_kind(std::string_view op, F&& f) {
    if (op == "map_insert") return f(kind_t<kind::map_insert>{});
    if (op == "counting_set") return f(kind_t<kind::counting_set>{});
    if (op == "set_insert") return f(kind_t<kind::set_insert>{});
    if (op == "visit") return f(kind_t<kind::visit>{});
    if (op == "bag") return f(kind_t<kind::bag>{});
    return f(kind_t<kind::dsu>{});
}

/// What the batch baselines (MPI_Alltoallv, std::unordered_map) keep: the state an am
/// container keeps on its owner, with the same update per operation.
template <class K>
struct local_state {
    std::unordered_map<K, std::uint64_t, hash_t<K>> map;  // map_insert, visit, counting_set
    std::unordered_set<K, hash_t<K>> set;                 // set_insert
    std::vector<K> bag;                                   // bag
    std::unordered_map<K, K, hash_t<K>> parent;           // dsu

    /// One operation of kind `O` on key `k` (with `v`: map_insert's value, visit's addend).
    template <kind O>
    void apply(kind_t<O>, const K& k, std::uint64_t v) {
        if constexpr (O == kind::map_insert) {
            map.try_emplace(k, v);
        } else if constexpr (O == kind::visit) {
            map[k] += v;
        } else if constexpr (O == kind::counting_set) {
            map[k] += 1;
        } else if constexpr (O == kind::set_insert) {
            set.insert(k);
        } else {
            bag.push_back(k);
        }
    }
    /// dsu, sequentially: union by the smaller root (as am's: every set's representative is its
    /// smallest item), path halving.
    K find(const K& k) {
        K cur = k;
        K* p = &parent.try_emplace(k, k).first->second;
        while (!(*p == cur)) {
            K* pp = &parent.find(*p)->second;
            *p = *pp;  // halving: point at the grandparent
            cur = *p;
            p = &parent.find(cur)->second;
        }
        return cur;
    }
    void unite(const K& a, const K& b) {
        const K ra = find(a), rb = find(b);
        if (ra == rb) return;
        if (ra < rb) {
            parent.find(rb)->second = ra;
        } else {
            parent.find(ra)->second = rb;
        }
    }
};

/// Options of containers_bench and its baseline besides the shared ones (--ranks and
/// --transports as collectives_bench takes them).
struct extra_options {
    collectives::extra_options coll;  ///< --ranks, --transports (and --quick)
    std::vector<std::uint64_t> keys;  ///< --keys 8,32
    std::vector<std::string> dists;   ///< --dist uniform,powerlaw
    std::uint64_t n = 0;              ///< --n: operations per rank (0: default)
};

inline std::vector<option_spec> extra_table(extra_options& x) {
    std::vector<option_spec> t;
    for (option_spec& s : collectives::extra_table(x.coll)) {
        if (s.name == "--ranks" || s.name == "--transports") t.push_back(std::move(s));
    }
    t.push_back({"--keys", "8,32",
                 "key bytes: 8 (uint64_t), 32 (a trivially copyable struct of 4 uint64_t)\n"
                 "(default 8,32)",
                 [&x](const std::string& v) {
                     x.keys.clear();
                     for (std::uint64_t b : to_counts("--keys", v, 8, 32)) {
                         if (b != 8 && b != 32) throw std::invalid_argument("--keys: 8 or 32");
                         x.keys.push_back(b);
                     }
                 }});
    t.push_back({"--dist", "a,b", "key distributions: uniform, powerlaw (default both)",
                 [&x](const std::string& v) {
                     x.dists = to_choices("--dist", v, {"uniform", "powerlaw"});
                 }});
    t.push_back({"--n", "N", "operations per rank and repetition (default 1M; --quick 2000)",
                 store_count(x.n, "--n", 2)});
    t.push_back({"--quick", nullptr, "smoke run: 2 ranks, threads and shm, --n 2000, 3 repetitions",
                 store_flag(x.coll.quick)});
    return t;
}

/// The op name of a point: the op, with ".powerlaw" for power-law keys (the JSON lines have no
/// key of their own for the distribution).
inline std::string op_name(const std::string& op, bool powerlaw) {
    return powerlaw ? op + ".powerlaw" : op;
}

/// Operations per second of every rank together from the slowest rank's seconds.
inline double ops_per_s(int ranks, std::uint64_t n, double slowest) {
    return static_cast<double>(ranks) * static_cast<double>(n) / slowest;
}

/// The single-threaded reference: one std::unordered_map (set, vector; dsu: a sequential
/// union-find) doing the operations of every one of `ranks` ranks on their keys, one thread.
/// Operations per second per repetition (after an untimed warm-up repetition).
template <class K>
std::vector<double> std_reference(const std::string& op, int ranks, std::uint64_t n, bool powerlaw,
                                  int reps) {
    std::vector<std::vector<K>> keys;
    for (int r = 0; r < ranks; ++r) keys.push_back(keys_of<K>(r, n, powerlaw));
    std::vector<double> v;
    for (int rep = -1; rep < reps; ++rep) {
        local_state<K> s;
        const auto t0 = bench_clock::now();
        with_kind(op, [&]<kind O>(kind_t<O> o) {
            for (int r = 0; r < ranks; ++r) {
                const std::vector<K>& ks = keys[static_cast<std::size_t>(r)];
                if constexpr (O == kind::dsu) {
                    for (std::uint64_t i = 0; i < n; ++i) s.unite(ks[i], ks[partner(r, i, n)]);
                } else {
                    for (const K& k : ks) s.apply(o, k, value_of(k));
                }
            }
        });
        const double t = seconds_since(t0);
        if (rep >= 0) v.push_back(ops_per_s(ranks, n, t));
    }
    return v;
}

}  // namespace am::bench::dist
