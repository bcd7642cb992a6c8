// SPDX-License-Identifier: MIT
/// @file
/// The two applications of rpc_bench, independent of how their calls travel: a distributed
/// hash table's per-rank table (buckets of 8-byte keys and values, a lock per bucket of the
/// caller's choosing) and the unbalanced tree of the UTS benchmark (a geometric tree whose
/// shape follows from hashes of node ids, so every rank and the sequential count agree).
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace am::bench::rpc {

/// splitmix64's finaliser: the source of every "random" choice (keys, owners, tree shape).
inline std::uint64_t mix(std::uint64_t z) noexcept {
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

// ------------------------------------------------------------------------------------- dht

/// The `i`-th key of `rank` (uniform random 8 B, distinct with overwhelming probability).
inline std::uint64_t dht_key(int rank, std::uint64_t i) noexcept {
    return mix((static_cast<std::uint64_t>(rank) << 40) + i + 0x5eed);
}
/// The value stored under `key` (so a find can be checked without a copy of the table).
inline std::uint64_t dht_value(std::uint64_t key) noexcept {
    return mix(key ^ 0xabcdef12345ull) | 1;  // never 0: 0 means "not found"
}
/// The rank that owns `key`.
inline int dht_owner(std::uint64_t key, int ranks) noexcept {
    return static_cast<int>((key >> 32) % static_cast<std::uint64_t>(ranks));
}

/// One rank's part of the table: `n` buckets, each a short vector under a lock `Lock`
/// (am::mutex for the RPC version, std::mutex for TRPC, none for hand-coded AM, whose
/// handlers run one at a time). The caller locks; `insert` and `find` do not.
template <class Lock>
class dht_table {
  public:
    struct bucket {
        Lock lock;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> items;
        template <class... A>
        explicit bucket(A&... a) : lock(a...) {}
    };

    /// `lock_args` are passed to every bucket's lock (an am::context& for am::mutex).
    template <class... A>
    dht_table(std::size_t n, A&... lock_args) {
        _buckets.reserve(n);
        for (std::size_t i = 0; i < n; ++i)
            _buckets.push_back(std::make_unique<bucket>(lock_args...));
    }
    bucket& of(std::uint64_t key) noexcept {
        return *_buckets[static_cast<std::size_t>(key % _buckets.size())];
    }
    static void insert(bucket& b, std::uint64_t key, std::uint64_t value) {
        for (auto& kv : b.items) {
            if (kv.first == key) {
                kv.second = value;
                return;
            }
        }
        b.items.emplace_back(key, value);
    }
    static std::uint64_t find(const bucket& b, std::uint64_t key) noexcept {
        for (const auto& kv : b.items) {
            if (kv.first == key) return kv.second;
        }
        return 0;
    }
    /// Entries in the table (not thread-safe; after the run).
    [[nodiscard]] std::size_t items() const noexcept {
        std::size_t n = 0;
        for (const auto& b : _buckets) n += b->items.size();
        return n;
    }

  private:
    std::vector<std::unique_ptr<bucket>> _buckets;
};

/// No lock (hand-coded AM).
struct no_lock {
    void lock() noexcept {}
    void unlock() noexcept {}
};

// ------------------------------------------------------------------------------------- uts

/// A UTS-style geometric tree: the root has `root_children` children; every other node at
/// depth d < `max_depth` has a geometric number of children with mean `b0` (P(k) = (1-p)^k p,
/// p = 1/(1+b0)), drawn from a hash of its id; nodes at `max_depth` are leaves. Subtrees whose
/// root lies more than `local_levels` above the leaves are spawned as tasks on random ranks;
/// deeper ones are searched where they were reached.
struct uts_tree {
    std::uint64_t root = 0x1234567;
    std::uint64_t root_children = 64;
    double b0 = 4.0;
    std::uint64_t max_depth = 9;
    std::uint64_t local_levels = 3;

    [[nodiscard]] std::uint64_t children(std::uint64_t id, std::uint64_t depth) const noexcept {
        if (depth >= max_depth) return 0;
        if (depth == 0) return root_children;
        const double u = static_cast<double>((mix(id) >> 11) + 1) * 0x1.0p-53;  // (0, 1]
        return static_cast<std::uint64_t>(std::log(u) / std::log(b0 / (1.0 + b0)));
    }
    [[nodiscard]] static std::uint64_t child(std::uint64_t id, std::uint64_t i) noexcept {
        return mix(id + (i + 1) * 0x9e3779b97f4a7c15ull);
    }
    /// Whether a node at `depth` is the root of a task of its own (sent to another rank).
    [[nodiscard]] bool spawned(std::uint64_t depth) const noexcept {
        return depth + local_levels < max_depth;
    }
    /// The rank a spawned task of node `id` goes to.
    [[nodiscard]] static int rank_of(std::uint64_t id, int ranks) noexcept {
        return static_cast<int>((id >> 20) % static_cast<std::uint64_t>(ranks));
    }

    /// Searches the task rooted at (`id`, `depth`): counts its nodes, calls `spawn(child,
    /// child_depth)` for each child that is a task of its own instead of searching it.
    /// Returns the nodes counted.
    template <class Spawn>
    std::uint64_t search(std::uint64_t id, std::uint64_t depth, Spawn&& spawn) const {
        std::uint64_t nodes = 0;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> stack{{id, depth}};
        while (!stack.empty()) {
            const auto [n, d] = stack.back();
            stack.pop_back();
            ++nodes;
            const std::uint64_t k = children(n, d);
            for (std::uint64_t i = 0; i < k; ++i) {
                const std::uint64_t c = child(n, i);
                if (spawned(d + 1)) {
                    spawn(c, d + 1);
                } else {
                    stack.emplace_back(c, d + 1);
                }
            }
        }
        return nodes;
    }

    /// Nodes of the whole tree, counted sequentially (the reference).
    [[nodiscard]] std::uint64_t count() const {
        std::uint64_t total = 0;
        std::vector<std::pair<std::uint64_t, std::uint64_t>> tasks{{root, 0}};
        while (!tasks.empty()) {
            const auto [n, d] = tasks.back();
            tasks.pop_back();
            total +=
                search(n, d, [&](std::uint64_t c, std::uint64_t cd) { tasks.emplace_back(c, cd); });
        }
        return total;
    }
};

}  // namespace am::bench::rpc
