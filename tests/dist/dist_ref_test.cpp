// SPDX-License-Identifier: MIT
// am::dist containers against sequential references. Every rank draws a deterministic sequence
// of operations (the same draws on every rank, so each rank knows every other rank's sequence)
// and every rank computes the final state sequentially, then compares it with gather(), size(),
// count(), topk(), for_all() and the owner of each local entry. Operations whose result
// depends on their order across senders are kept to per-sender key ranges (one sender's
// operations to one destination run in order); across senders only commutative operations
// (+=, max) share keys. Keys and values: 8-byte integers, std::string (empty and 100 KB),
// std::vector<std::uint64_t>, a struct with an am::serializer specialisation, a custom Hash.
#include "support/spmd.hpp"

#include <am/dist.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <string>
#include <vector>

// A key and value type that is not trivially copyable: sent through its own serializer.
struct dist_ref_point {
    std::string name;
    std::uint64_t id = 0;
    friend bool operator==(const dist_ref_point&, const dist_ref_point&) = default;
    friend auto operator<=>(const dist_ref_point&, const dist_ref_point&) = default;
};

template <>
struct am::serializer<dist_ref_point> {
    static void write(serial_writer& w, const dist_ref_point& p) {
        serializer<std::string>::write(w, p.name);
        serializer<std::uint64_t>::write(w, p.id);
    }
    static dist_ref_point read(serial_reader& r) {
        dist_ref_point p;
        p.name = serializer<std::string>::read(r);
        p.id = serializer<std::uint64_t>::read(r);
        return p;
    }
};

namespace {

using am_test::mix;
using am_test::spmd_test;

// Hashes for the key types std::hash lacks, and a deliberately poor one (many keys collide in
// the local table; the owner mix still spreads them).
struct dist_ref_vec_hash {
    std::size_t operator()(const std::vector<std::uint64_t>& v) const noexcept {
        std::uint64_t h = 7;
        for (const auto x : v) h = mix(h ^ x);
        return static_cast<std::size_t>(h);
    }
};
struct dist_ref_point_hash {
    std::size_t operator()(const dist_ref_point& p) const noexcept {
        return std::hash<std::string>{}(p.name) ^ static_cast<std::size_t>(mix(p.id));
    }
};
struct dist_ref_poor_hash {
    std::size_t operator()(std::uint64_t k) const noexcept {
        return static_cast<std::size_t>(k % 7);
    }
};

// Keys and values made from a number, injective in it.
template <class T>
T dist_ref_make(std::uint64_t i);
template <>
std::uint64_t dist_ref_make<std::uint64_t>(std::uint64_t i) {
    return i * 0x10001ull + 3;
}
template <>
std::string dist_ref_make<std::string>(std::uint64_t i) {
    if (i == 0) return {};  // the empty string is a key and a value like any other
    return "s" + std::to_string(i) + std::string(static_cast<std::size_t>(i % 11), 'x');
}
template <>
std::vector<std::uint64_t> dist_ref_make<std::vector<std::uint64_t>>(std::uint64_t i) {
    std::vector<std::uint64_t> v(static_cast<std::size_t>(i % 5));
    for (std::size_t j = 0; j < v.size(); ++j) v[j] = mix(i + j);
    v.push_back(i);  // distinct for distinct i
    return v;
}
template <>
dist_ref_point dist_ref_make<dist_ref_point>(std::uint64_t i) {
    return {i % 3 == 0 ? std::string() : "p" + std::to_string(i % 97), i};
}

// A value far larger than a message (travels in fragments).
template <class T>
T dist_ref_big(std::uint64_t i) {
    if constexpr (std::is_same_v<T, std::string>) {
        std::string s(100 * 1024, 'a');
        for (std::size_t j = 0; j < s.size(); j += 4099)
            s[j] = static_cast<char>('b' + (i + j) % 20);
        return s;
    } else if constexpr (std::is_same_v<T, std::vector<std::uint64_t>>) {
        std::vector<std::uint64_t> v(20000);
        std::iota(v.begin(), v.end(), i);
        return v;
    } else if constexpr (std::is_same_v<T, dist_ref_point>) {
        return {std::string(100 * 1024, static_cast<char>('a' + i % 26)), i};
    } else {
        return dist_ref_make<T>(i);
    }
}

// The commutative combination shared keys use: += for integers, max otherwise.
template <class V>
void dist_ref_combine(V& v, const V& x) {
    if constexpr (std::is_same_v<V, std::uint64_t>) {
        v += x;
    } else if (v < x) {
        v = x;
    }
}
template <class K, class V>
struct dist_ref_map_visit {
    void operator()(const K&, V& v, V x) const { dist_ref_combine(v, x); }
};

/// Team-independent draws: op `j` of rank `r` in round `round` of test `salt`.
std::uint64_t dist_ref_draw(std::uint64_t salt, int r, int round, int j) {
    return mix(salt * 0x9e37ull +
               mix(static_cast<std::uint64_t>(r) * 1000003ull +
                   static_cast<std::uint64_t>(round) * 7919ull + static_cast<std::uint64_t>(j)));
}

class dist_ref : public spmd_test {
  protected:
    /// Operations per rank and round: fewer at larger rank counts.
    [[nodiscard]] int ops() const { return ranks() <= 3 ? 160 : 60; }
};

// ----------------------------------------------------------------------------------- map

// A visitor given the map: it forwards a share to a shared key (commutative there).
template <class M>
struct dist_ref_forward {
    using K = typename M::key_type;
    using V = typename M::mapped_type;
    void operator()(M& m, const K&, V& v, V x, std::uint64_t shared_index) const {
        dist_ref_combine(v, x);
        m.async_visit(dist_ref_make<K>(shared_index), dist_ref_map_visit<K, V>{}, x);
    }
};

template <class K, class V, class Hash>
void dist_ref_map_case(am::context& ctx, int ops, std::uint64_t salt) {
    const am::team w = am::coll::world(ctx);
    const int n = ctx.size(), me = ctx.rank();
    am::dist::map<K, V, Hash> m(w);
    std::map<K, V> want;
    constexpr std::uint64_t shared_keys = 9, private_keys = 12;
    const auto private_key = [&](int r, std::uint64_t i) {
        return dist_ref_make<K>(1000 + static_cast<std::uint64_t>(r) * 100 + i);
    };
    for (int round = 0; round < 2; ++round) {
        for (int r = 0; r < n; ++r) {
            for (int j = 0; j < ops; ++j) {
                const std::uint64_t d = dist_ref_draw(salt, r, round, j);
                const std::uint64_t kind = d % 7, ki = (d >> 8) % private_keys;
                const V v = dist_ref_make<V>((d >> 20) % 50);
                const K pk = private_key(r, ki);
                const K sk = dist_ref_make<K>((d >> 40) % shared_keys);
                const bool mine = r == me;
                switch (kind) {
                    case 0:
                        if (mine) m.insert(pk, v);
                        want.try_emplace(pk, v);
                        break;
                    case 1:
                        if (mine) m.insert_or_assign(pk, v);
                        want.insert_or_assign(pk, v);
                        break;
                    case 2:
                        if (mine) m.erase(pk);
                        want.erase(pk);
                        break;
                    case 3:
                        if (mine) m.async_visit(pk, dist_ref_map_visit<K, V>{}, v);
                        dist_ref_combine(want[pk], v);
                        break;
                    case 4:
                        if (mine) m.async_visit_if_exists(pk, dist_ref_map_visit<K, V>{}, v);
                        if (const auto it = want.find(pk); it != want.end()) {
                            dist_ref_combine(it->second, v);
                        }
                        break;
                    case 5:
                        if (mine) m.async_visit(sk, dist_ref_map_visit<K, V>{}, v);
                        dist_ref_combine(want[sk], v);
                        break;
                    default:
                        // On a private key, forwarding v to a shared key from the owner's visitor.
                        if (mine)
                            m.async_visit(pk, dist_ref_forward<am::dist::map<K, V, Hash>>{}, v,
                                          (d >> 40) % shared_keys);
                        dist_ref_combine(want[pk], v);
                        dist_ref_combine(want[sk], v);
                        break;
                }
            }
            // One large value per rank and round, on a key of its own (a call larger than a
            // message may overtake the sender's earlier ones, so no other call names its key).
            const K bk = dist_ref_make<K>(900000 + static_cast<std::uint64_t>(r) * 10 +
                                          static_cast<std::uint64_t>(round));
            const V bv = dist_ref_big<V>(static_cast<std::uint64_t>(r * 2 + round));
            if (r == me) m.insert_or_assign(bk, bv);
            want.insert_or_assign(bk, bv);
        }
        // Check: size everywhere, gather at a root that moves, the owner of every local entry.
        EXPECT_EQ(m.size(), want.size()) << "round " << round;
        std::size_t local = 0;
        m.for_all([&](const K& k, V&) {
            ++local;
            EXPECT_EQ(m.owner(k), me);
        });
        EXPECT_EQ(local, m.local_size());
        const int root = (round + n - 1) % n;
        const auto got = m.gather(root);
        if (me == root) {
            EXPECT_EQ(got.size(), want.size()) << "round " << round;
            const std::map<K, V> got_map(got.begin(), got.end());
            EXPECT_EQ(got_map.size(), got.size()) << "a key gathered twice";
            EXPECT_TRUE(got_map == want) << "round " << round << ": the map differs";
        } else {
            EXPECT_TRUE(got.empty());
        }
        // The next round's operations must not reach a member still reading this round's
        // state (a barrier completes operations sent before it, not ones sent after it).
        am::coll::barrier(w);
    }
    m.clear();
    EXPECT_EQ(m.size(), 0u);
    EXPECT_EQ(m.local_size(), 0u);
}

TEST_P(dist_ref, map_u64) {
    const int k = ops();
    ASSERT_EQ(run([k](am::context& ctx) {
                  dist_ref_map_case<std::uint64_t, std::uint64_t, std::hash<std::uint64_t>>(ctx, k,
                                                                                            1);
                  dist_ref_map_case<std::uint64_t, std::uint64_t, dist_ref_poor_hash>(ctx, k, 2);
              }),
              0);
}

TEST_P(dist_ref, map_strings_vectors_structs) {
    const int k = ops() / 2;
    ASSERT_EQ(run([k](am::context& ctx) {
                  dist_ref_map_case<std::string, std::string, std::hash<std::string>>(ctx, k, 3);
                  dist_ref_map_case<std::vector<std::uint64_t>, std::vector<std::uint64_t>,
                                    dist_ref_vec_hash>(ctx, k, 4);
                  dist_ref_map_case<dist_ref_point, dist_ref_point, dist_ref_point_hash>(ctx, k, 5);
                  dist_ref_map_case<std::string, std::uint64_t, std::hash<std::string>>(ctx, k, 6);
              }),
              0);
}

// ------------------------------------------------------------------------- set, counting_set

template <class K, class Hash>
void dist_ref_set_case(am::context& ctx, int ops, std::uint64_t salt) {
    const am::team w = am::coll::world(ctx);
    const int n = ctx.size(), me = ctx.rank();
    am::dist::set<K, Hash> s(w);
    std::set<K> want;
    for (int round = 0; round < 2; ++round) {
        for (int r = 0; r < n; ++r) {
            for (int j = 0; j < ops; ++j) {
                const std::uint64_t d = dist_ref_draw(salt, r, round, j);
                const K pk =
                    dist_ref_make<K>(1000 + static_cast<std::uint64_t>(r) * 100 + (d >> 8) % 15);
                const K sk = dist_ref_make<K>((d >> 30) % 10);
                switch (d % 3) {
                    case 0:
                        if (r == me) s.insert(pk);
                        want.insert(pk);
                        break;
                    case 1:
                        if (r == me) s.erase(pk);
                        want.erase(pk);
                        break;
                    default:
                        if (r == me) s.insert(sk);  // the same key from several ranks: once
                        want.insert(sk);
                        break;
                }
            }
        }
        EXPECT_EQ(s.size(), want.size()) << "round " << round;
        s.for_all([&](const K& k) { EXPECT_EQ(s.owner(k), me); });
        const auto got = s.gather(0);
        if (me == 0) {
            const std::set<K> got_set(got.begin(), got.end());
            EXPECT_EQ(got.size(), got_set.size()) << "a key gathered twice";
            EXPECT_TRUE(got_set == want) << "round " << round << ": the set differs";
        }
        am::coll::barrier(w);  // as in the map's rounds
    }
    s.clear();
    EXPECT_EQ(s.size(), 0u);
}

TEST_P(dist_ref, set) {
    const int k = ops();
    ASSERT_EQ(run([k](am::context& ctx) {
                  dist_ref_set_case<std::uint64_t, std::hash<std::uint64_t>>(ctx, k, 11);
                  dist_ref_set_case<std::string, std::hash<std::string>>(ctx, k, 12);
                  dist_ref_set_case<std::vector<std::uint64_t>, dist_ref_vec_hash>(ctx, k / 2, 13);
                  dist_ref_set_case<dist_ref_point, dist_ref_point_hash>(ctx, k / 2, 14);
              }),
              0);
}

template <class K, class Hash>
void dist_ref_counting_case(am::context& ctx, int ops, std::uint64_t salt) {
    const am::team w = am::coll::world(ctx);
    const int n = ctx.size(), me = ctx.rank();
    am::dist::counting_set<K, Hash> cs(w);
    std::map<K, std::uint64_t> want;
    for (int r = 0; r < n; ++r) {
        for (int j = 0; j < ops; ++j) {
            const std::uint64_t d = dist_ref_draw(salt, r, 0, j);
            // Skewed: small indices often (distinct counts, so topk has few ties).
            const std::uint64_t i = (d >> 8) % (1 + (d >> 20) % 30);
            const std::uint64_t by = (d % 4 == 0) ? 1 + (d >> 50) % 5 : 1;
            const K k = dist_ref_make<K>(i);
            if (r == me) {
                if (by == 1 && (d & 1) != 0) {
                    cs.add(k);
                } else {
                    cs.add(k, by);
                }
            }
            want[k] += by;
        }
    }
    EXPECT_EQ(cs.size(), want.size());
    cs.for_all([&](const K& k, std::uint64_t) { EXPECT_EQ(cs.owner(k), me); });
    const auto got = cs.gather(n - 1);
    if (me == n - 1) {
        const std::map<K, std::uint64_t> got_map(got.begin(), got.end());
        EXPECT_EQ(got.size(), got_map.size());
        EXPECT_TRUE(got_map == want) << "the counts differ";
    }
    // count(): present keys and an absent one, on every rank.
    for (std::uint64_t i = 0; i < 4; ++i) {
        const K k = dist_ref_make<K>(i);
        const auto it = want.find(k);
        EXPECT_EQ(cs.count(k), it == want.end() ? 0u : it->second) << "key index " << i;
    }
    EXPECT_EQ(cs.count(dist_ref_make<K>(777777)), 0u);
    // topk: largest counts first, ties by key.
    std::vector<std::pair<K, std::uint64_t>> order(want.begin(), want.end());
    std::stable_sort(order.begin(), order.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    for (const std::size_t k : {std::size_t{1}, std::size_t{3}, order.size() + 5}) {
        const auto top = cs.topk(k);
        const std::size_t m = std::min(k, order.size());
        ASSERT_EQ(top.size(), m) << "topk(" << k << ")";
        for (std::size_t i = 0; i < m; ++i) {
            EXPECT_TRUE(top[i].first == order[i].first) << "topk(" << k << ") entry " << i;
            EXPECT_EQ(top[i].second, order[i].second) << "topk(" << k << ") entry " << i;
        }
    }
    cs.clear();
    EXPECT_EQ(cs.size(), 0u);
    EXPECT_TRUE(cs.topk(3).empty());
}

TEST_P(dist_ref, counting_set) {
    const int k = ops();
    ASSERT_EQ(run([k](am::context& ctx) {
                  dist_ref_counting_case<std::uint64_t, std::hash<std::uint64_t>>(ctx, k, 21);
                  dist_ref_counting_case<std::uint64_t, dist_ref_poor_hash>(ctx, k, 22);
                  dist_ref_counting_case<std::string, std::hash<std::string>>(ctx, k, 23);
                  dist_ref_counting_case<dist_ref_point, dist_ref_point_hash>(ctx, k / 2, 24);
              }),
              0);
}

// ------------------------------------------------------------------------------------ bag

template <class T>
void dist_ref_bag_case(am::context& ctx, int ops, std::uint64_t salt) {
    const am::team w = am::coll::world(ctx);
    const int n = ctx.size(), me = ctx.rank();
    am::dist::bag<T> b(w);
    std::vector<T> want;
    std::vector<std::size_t> per_member(static_cast<std::size_t>(n));
    for (int r = 0; r < n; ++r) {
        int next = r;
        for (int j = 0; j < ops; ++j) {
            const std::uint64_t d = dist_ref_draw(salt, r, 0, j);
            const T v = dist_ref_make<T>(d % 40);
            int to = 0;
            if (d % 3 == 0) {
                to = static_cast<int>((d >> 16) % static_cast<std::uint64_t>(n));
                if (r == me) b.insert(v, to);
            } else {
                next = (next + 1) % n;  // round-robin, starting after the sender
                to = next;
                if (r == me) b.insert(v);
            }
            want.push_back(v);
            ++per_member[static_cast<std::size_t>(to)];
        }
    }
    EXPECT_EQ(b.size(), want.size());
    EXPECT_EQ(b.local_size(), per_member[static_cast<std::size_t>(me)]);
    std::size_t seen = 0;
    b.for_all([&](T&) { ++seen; });
    EXPECT_EQ(seen, b.local_size());
    auto got = b.gather(0);
    if (me == 0) {
        std::sort(got.begin(), got.end());
        std::sort(want.begin(), want.end());
        EXPECT_TRUE(got == want) << "the bag differs: " << got.size() << " items, want "
                                 << want.size();
    }
    b.clear();
    EXPECT_EQ(b.size(), 0u);
}

TEST_P(dist_ref, bag) {
    const int k = ops();
    ASSERT_EQ(run([k](am::context& ctx) {
                  dist_ref_bag_case<std::uint64_t>(ctx, k, 31);
                  dist_ref_bag_case<std::string>(ctx, k, 32);
                  dist_ref_bag_case<std::vector<std::uint64_t>>(ctx, k / 2, 33);
                  dist_ref_bag_case<dist_ref_point>(ctx, k / 2, 34);
              }),
              0);
}

// ---------------------------------------------------------------------------------- array

template <class T>
struct dist_ref_array_add {
    void operator()(std::uint64_t, T& e, T x) const { dist_ref_combine(e, x); }
};
// Given the array: combines at its element and forwards x to a shared (odd) index.
template <class T>
struct dist_ref_array_forward {
    void operator()(am::dist::array<T>& a, std::uint64_t, T& e, T x, std::uint64_t to) const {
        dist_ref_combine(e, x);
        a.async_visit(to, dist_ref_array_add<T>{}, x);
    }
};

template <class T>
void dist_ref_array_case(am::context& ctx, int ops, std::uint64_t salt, std::uint64_t len,
                         am::dist::layout lay) {
    const am::team w = am::coll::world(ctx);
    const int n = ctx.size(), me = ctx.rank();
    const T init = dist_ref_make<T>(5);
    am::dist::array<T> a(w, len, lay, init);
    ASSERT_EQ(a.size(), len);
    std::vector<T> want(static_cast<std::size_t>(len), init);
    // Even indices are written (set, combined) by one rank each, odd ones only combined.
    const auto writer = [&](std::uint64_t i) {
        return static_cast<int>((i / 2) % static_cast<std::uint64_t>(n));
    };
    std::vector<std::uint64_t> odd;
    for (std::uint64_t i = 1; i < len; i += 2) odd.push_back(i);
    for (int r = 0; r < n; ++r) {
        std::vector<std::uint64_t> own;
        for (std::uint64_t i = 0; i < len; i += 2) {
            if (writer(i) == r) own.push_back(i);
        }
        for (int j = 0; j < ops; ++j) {
            const std::uint64_t d = dist_ref_draw(salt, r, 0, j);
            const T v = dist_ref_make<T>((d >> 8) % 60);
            const std::uint64_t kind = d % 4;
            if (kind <= 2 && own.empty()) continue;
            if (kind == 3 && odd.empty()) continue;
            const std::uint64_t pi = own.empty() ? 0 : own[(d >> 32) % own.size()];
            const std::uint64_t si = odd.empty() ? 0 : odd[(d >> 40) % odd.size()];
            auto& wp = want[static_cast<std::size_t>(pi)];
            if (kind == 0) {
                if (r == me) a.set(pi, v);
                wp = v;
            } else if (kind == 1) {
                if (r == me) a.async_visit(pi, dist_ref_array_add<T>{}, v);
                dist_ref_combine(wp, v);
            } else if (kind == 2 && !odd.empty()) {
                if (r == me) a.async_visit(pi, dist_ref_array_forward<T>{}, v, si);
                dist_ref_combine(wp, v);
                dist_ref_combine(want[static_cast<std::size_t>(si)], v);
            } else if (kind == 3) {
                if (r == me) a.async_visit(si, dist_ref_array_add<T>{}, v);
                dist_ref_combine(want[static_cast<std::size_t>(si)], v);
            }
        }
    }
    a.barrier();
    std::uint64_t local = 0;
    a.for_all([&](std::uint64_t i, T& e) {
        ++local;
        ASSERT_LT(i, len);
        EXPECT_EQ(a.owner(i), me) << "index " << i;
        EXPECT_TRUE(e == want[static_cast<std::size_t>(i)]) << "index " << i;
    });
    EXPECT_EQ(local, a.local_size());
    EXPECT_EQ(am::coll::allreduce(w, local, am::coll::sum{}), len);
    const int root = n / 2;
    const auto got = a.gather(root);
    if (me == root) {
        EXPECT_TRUE(got == want) << "the array differs (length " << len << ")";
    } else {
        EXPECT_TRUE(got.empty());
    }
}

TEST_P(dist_ref, array) {
    const int k = ops();
    ASSERT_EQ(
        run([k](am::context& ctx) {
            const int n = ctx.size();
            for (const auto lay : {am::dist::layout::block, am::dist::layout::cyclic}) {
                SCOPED_TRACE(lay == am::dist::layout::block ? "block" : "cyclic");
                // Lengths around the rank count: fewer elements than ranks, not a
                // multiple, one.
                for (const std::uint64_t len :
                     {std::uint64_t{1}, static_cast<std::uint64_t>(n + 1), std::uint64_t{37}}) {
                    dist_ref_array_case<std::uint64_t>(ctx, k, 41 + len, len, lay);
                }
                dist_ref_array_case<std::string>(ctx, k / 2, 51, 23, lay);
                dist_ref_array_case<std::vector<std::uint64_t>>(ctx, k / 2, 52, 11, lay);
            }
            am::dist::array<std::uint64_t> empty(ctx, 0);
            EXPECT_EQ(empty.local_size(), 0u);
            EXPECT_TRUE(empty.gather(0).empty());
        }),
        0);
}

// ---------------------------------------------------------------------------- disjoint_set

template <class T>
struct dist_ref_uf {
    std::map<T, T> parent;
    T find(const T& x) {
        auto it = parent.try_emplace(x, x).first;
        if (it->second == x) return x;
        const T r = find(it->second);
        parent[x] = r;
        return r;
    }
    void unite(const T& a, const T& b) {
        const T ra = find(a), rb = find(b);
        if (ra == rb) return;
        if (ra < rb) {
            parent[rb] = ra;
        } else {
            parent[ra] = rb;
        }
    }
};

template <class T, class Hash>
void dist_ref_ds_case(am::context& ctx, int ops, std::uint64_t salt, std::uint64_t items) {
    const am::team w = am::coll::world(ctx);
    const int n = ctx.size(), me = ctx.rank();
    am::dist::disjoint_set<T, Hash> ds(w);
    dist_ref_uf<T> want;
    for (int r = 0; r < n; ++r) {
        for (int j = 0; j < ops; ++j) {
            const std::uint64_t d = dist_ref_draw(salt, r, 0, j);
            const T a = dist_ref_make<T>((d >> 8) % items);
            // Never a == b: async_union(a, a) is dist_bugs.disjoint_set_self_union_adds_the_item.
            const std::uint64_t ai = (d >> 8) % items, bi = (d >> 32) % items;
            const T b = dist_ref_make<T>(ai == bi ? (bi + 1) % items : bi);
            if (d % 5 == 0) {
                if (r == me) ds.insert(a);  // a singleton unless joined elsewhere
                (void)want.find(a);
            } else {
                if (r == me) ds.async_union(a, b);
                want.unite(a, b);
            }
        }
    }
    std::size_t sets = 0;
    std::map<T, T> roots;
    for (const auto& [x, p] : want.parent) {
        (void)p;
        roots[x] = want.find(x);
        sets += roots[x] == x ? 1 : 0;
    }
    EXPECT_EQ(ds.size(), roots.size());
    ds.all_compress();
    EXPECT_EQ(ds.num_sets(), sets);
    ds.for_all([&](const T& x, const T& p) {
        EXPECT_EQ(ds.owner(x), me);
        const auto it = roots.find(x);
        ASSERT_TRUE(it != roots.end()) << "an item never named";
        EXPECT_TRUE(p == it->second) << "after all_compress, the parent is the smallest item";
    });
    const auto got = ds.gather(0);
    if (me == 0) {
        const std::map<T, T> got_map(got.begin(), got.end());
        EXPECT_EQ(got.size(), got_map.size());
        EXPECT_TRUE(got_map == roots) << "the components differ";
    }
}

TEST_P(dist_ref, disjoint_set) {
    const int k = ops();
    ASSERT_EQ(run([k](am::context& ctx) {
                  // Sparse (many components) and dense (few), integers and strings.
                  dist_ref_ds_case<std::uint64_t, std::hash<std::uint64_t>>(ctx, k / 2, 61, 400);
                  dist_ref_ds_case<std::uint64_t, std::hash<std::uint64_t>>(ctx, k, 62, 60);
                  dist_ref_ds_case<std::uint64_t, dist_ref_poor_hash>(ctx, k, 63, 120);
                  dist_ref_ds_case<std::string, std::hash<std::string>>(ctx, k, 64, 90);
                  dist_ref_ds_case<dist_ref_point, dist_ref_point_hash>(ctx, k / 2, 65, 70);
              }),
              0);
}

// A path: every rank joins its stretch of a chain whose smallest item is at the far end, the
// deepest case for pointer jumping.
TEST_P(dist_ref, disjoint_set_long_chain) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            am::dist::disjoint_set<std::uint64_t> ds(ctx);
            constexpr std::uint64_t len = 600;
            for (std::uint64_t i = static_cast<std::uint64_t>(me); i + 1 < len;
                 i += static_cast<std::uint64_t>(n)) {
                ds.async_union(len - i, len - i - 1);  // high to low
            }
            EXPECT_EQ(ds.num_sets(), 1u);
            EXPECT_EQ(ds.size(), len);
            ds.all_compress();
            ds.for_all([](std::uint64_t x, std::uint64_t p) { EXPECT_EQ(p, 1u) << "item " << x; });
        }),
        0);
}

AM_INSTANTIATE(dist_ref, am_test::make_params({1, 2, 3, 5}, {2, 3}));

}  // namespace
