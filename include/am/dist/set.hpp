// SPDX-License-Identifier: MIT
/// @file
/// `am::dist::set<K, Hash>` and `am::dist::counting_set<K, Hash>` (counts per key, top-k), spread
/// over a team by `Hash`. Semantics common to the containers: <am/dist/object.hpp>.
#pragma once

#include <am/dist/object.hpp>

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace am::dist {

namespace detail {
/// Serialises a range of `K` for a gather.
template <class K, class Range>
std::vector<std::byte> pack_keys(const Range& r, std::size_t n) {
    std::vector<std::byte> out;
    serial_writer w(out);
    am::detail::write_length(w, n);
    for (const auto& k : r) serializer<K>::write(w, k);
    return out;
}
}  // namespace detail

template <class K, class Hash = std::hash<K>>
class set : public object_base {
    static_assert(detail::check_element<K>());

  public:
    using key_type = K;
    explicit set(const coll::team& t) : object_base(t, typeid(set).name(), "am::dist::set") {
        publish(this);
    }
    /// Collective: waits for the operations in flight (a barrier), then leaves the team.
    ~set() { retire(); }
    explicit set(context& ctx) : set(coll::world(ctx)) {}

    [[nodiscard]] int owner(const K& k) const { return detail::owner_of<Hash>(k, team().size()); }
    /// Adds `k` at its owner.
    void insert(const K& k) { this->template send<add>(owner(k), "am::dist::set::insert", k); }
    /// Removes `k` at its owner.
    void erase(const K& k) { this->template send<remove>(owner(k), "am::dist::set::erase", k); }
    /// Calls `f(key)` for every key this rank keeps.
    template <class F>
    void for_all(F&& f) const {
        for (const K& k : _local) f(k);
    }
    [[nodiscard]] const std::unordered_set<K, Hash>& local() const noexcept { return _local; }
    [[nodiscard]] std::size_t local_size() const noexcept { return _local.size(); }
    /// Collective: keys on the team (after a barrier).
    [[nodiscard]] std::size_t size() {
        return team_sum([&] { return _local.size(); });
    }
    /// Collective: removes every key (after a barrier).
    void clear() {
        team_clear([&] { _local.clear(); });
    }
    /// Collective: every key on team rank `root` (empty elsewhere), after a barrier.
    [[nodiscard]] std::vector<K> gather(int root) {
        barrier();
        std::vector<K> out;
        for (const auto& part :
             coll::gather(team(), detail::pack_keys<K>(_local, _local.size()), root)) {
            serial_reader r(part);
            const std::size_t n = am::detail::read_length(r);
            for (std::size_t i = 0; i < n; ++i) out.push_back(serializer<K>::read(r));
        }
        return out;
    }

  private:
    struct add {
        void operator()(context& ctx, object_ref r, K k) const {
            detail::local_of<set>(ctx, r, "am::dist::set::insert")._local.insert(std::move(k));
        }
    };
    struct remove {
        void operator()(context& ctx, object_ref r, K k) const {
            detail::local_of<set>(ctx, r, "am::dist::set::erase")._local.erase(k);
        }
    };
    std::unordered_set<K, Hash> _local;
};

/// Counts per key (word counts, degree counts): `add(k)` adds one at `k`'s owner.
template <class K, class Hash = std::hash<K>>
class counting_set : public object_base {
    static_assert(detail::check_element<K>());

  public:
    using key_type = K;
    explicit counting_set(const coll::team& t)
        : object_base(t, typeid(counting_set).name(), "am::dist::counting_set") {
        publish(this);
    }
    /// Collective: waits for the operations in flight (a barrier), then leaves the team.
    ~counting_set() { retire(); }
    explicit counting_set(context& ctx) : counting_set(coll::world(ctx)) {}

    [[nodiscard]] int owner(const K& k) const { return detail::owner_of<Hash>(k, team().size()); }
    /// Adds `n` to `k`'s count at its owner. From the rank's own code, adds are combined
    /// first in a cache of `cache_slots` keys on this rank (AM++'s combining: a frequent key
    /// travels once per eviction, not once per add); the team's barrier sends what it holds.
    void add(const K& k, std::uint64_t n = 1) {
        if (in_handler()) {  // a handler may run on another thread: no shared cache
            this->template send<bump>(owner(k), "am::dist::counting_set::add", k, n);
            return;
        }
        slot& s = _cache[static_cast<std::size_t>(Hash{}(k)) % cache_slots];
        if (s.used) {
            if (s.key == k) {
                s.count += n;
                return;
            }
            this->template send<bump>(owner(s.key), "am::dist::counting_set::add", s.key, s.count);
        } else if (_cached++ == 0) {
            hold();
        }
        s.key = k;
        s.count = n;
        s.used = true;
    }
    /// Keys the cache of `add` holds at most.
    static constexpr std::size_t cache_slots = 1024;
    /// Calls `f(key, count)` for every key this rank keeps.
    template <class F>
    void for_all(F&& f) const {
        for (const auto& [k, c] : _local) f(k, c);
    }
    [[nodiscard]] const std::unordered_map<K, std::uint64_t, Hash>& local() const noexcept {
        return _local;
    }
    [[nodiscard]] std::size_t local_size() const noexcept { return _local.size(); }
    /// Collective: distinct keys on the team (after a barrier).
    [[nodiscard]] std::size_t size() {
        return team_sum([&] { return _local.size(); });
    }
    /// Collective: the count of `k` on every member (0 when absent), after a barrier.
    [[nodiscard]] std::uint64_t count(const K& k) {
        barrier();
        const auto it = _local.find(k);
        const std::uint64_t mine = it == _local.end() ? 0 : it->second;
        return coll::broadcast(team(), mine, owner(k));
    }
    /// Collective: the `n` keys with the largest counts on every member, largest first (ties
    /// broken by key when `K` is ordered), after a barrier.
    [[nodiscard]] std::vector<std::pair<K, std::uint64_t>> topk(std::size_t n) {
        barrier();
        const auto mine =
            best(std::vector<std::pair<K, std::uint64_t>>(_local.begin(), _local.end()), n);
        return best(detail::unpack_pairs<K, std::uint64_t>(coll::allgather(
                        team(), detail::pack_pairs<K, std::uint64_t>(mine, mine.size()))),
                    n);
    }
    /// Collective: every (key, count) on team rank `root`, after a barrier.
    [[nodiscard]] std::vector<std::pair<K, std::uint64_t>> gather(int root) {
        barrier();
        return detail::unpack_pairs<K, std::uint64_t>(coll::gather(
            team(), detail::pack_pairs<K, std::uint64_t>(_local, _local.size()), root));
    }
    /// Collective: removes every key (after a barrier).
    void clear() {
        team_clear([&] { _local.clear(); });
    }

  private:
    struct slot {
        K key{};
        std::uint64_t count = 0;
        bool used = false;
    };
    void flush_local() override {
        for (slot& s : _cache) {
            if (!s.used) continue;
            s.used = false;
            this->template send<bump>(owner(s.key), "am::dist::counting_set::add", s.key, s.count);
        }
        _cached = 0;
    }
    std::vector<slot> _cache = std::vector<slot>(cache_slots);
    std::size_t _cached = 0;
    static std::vector<std::pair<K, std::uint64_t>> best(std::vector<std::pair<K, std::uint64_t>> v,
                                                         std::size_t n) {
        auto before = [](const auto& a, const auto& b) {
            if (a.second != b.second) return a.second > b.second;
            if constexpr (requires { a.first < b.first; }) {
                return a.first < b.first;
            } else {
                return false;
            }
        };
        const std::size_t keep = std::min(n, v.size());
        std::partial_sort(v.begin(), v.begin() + static_cast<std::ptrdiff_t>(keep), v.end(),
                          before);
        v.resize(keep);
        return v;
    }
    struct bump {
        void operator()(context& ctx, object_ref r, K k, std::uint64_t n) const {
            detail::local_of<counting_set>(ctx, r, "am::dist::counting_set::add")._local[k] += n;
        }
    };
    std::unordered_map<K, std::uint64_t, Hash> _local;
};

}  // namespace am::dist
