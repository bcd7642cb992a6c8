// SPDX-License-Identifier: MIT
/// @file
/// Duplicate elimination at the source: the cache options `am::direct_mapped_cache` and
/// `am::hash_cache` (also used by <am/typed/reduce.hpp>), `am::dedup_layer` and `am::dedup`
/// (part of <am/typed.hpp>).
#pragma once

#include <am/detail/typed.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <unordered_set>
#include <vector>

namespace am {

/// Duplicate elimination with a direct-mapped cache (AM++ §3.2.3): a value sent to a
/// destination whose slot still holds the same value and destination is dropped. Fast and
/// approximate: a colliding value evicts the entry, so some duplicates pass.
struct direct_mapped_cache {
    std::size_t entries = std::size_t{1} << 16;  ///< rounded up to a power of two
};
/// Duplicate elimination or combining with a hash table: exact until it holds `max_entries`,
/// then it is emptied (combining: sent) and starts again.
struct hash_cache {
    std::size_t max_entries = std::size_t{1} << 20;
};

/// Drops repeated messages at the source: only for idempotent messages (a second copy would
/// change nothing at the target, like "visit v" in a BFS). The cache is kept across epochs
/// until `clear()`. `Sender` is a `message_type<T>` or `coalesced<T>`; not thread-safe (one
/// per thread).
template <class Sender, class Cache>
class dedup_layer final : public detail::typed_member {
  public:
    using value_type = typename Sender::value_type;
    static_assert(detail::cacheable_v<value_type>,
                  "am::dedup: the message type needs operator== and std::hash, or a byte "
                  "representation without padding");

    dedup_layer(Sender& next, Cache cache)
        : _next(&next), _layer(detail::layer_of(next)), _hot(detail::typed_hot_of(_layer)) {
        if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
            const std::size_t n = detail::cache_slots(_layer, cache.entries);
            _slots.assign(n, slot{});
            _mask = n - 1;
        } else {
            _max = cache.max_entries == 0 ? 1 : cache.max_entries;
        }
        detail::typed_attach(_layer, this);
    }
    ~dedup_layer() { detail::typed_detach(_layer, this); }
    dedup_layer(const dedup_layer&) = delete;
    dedup_layer& operator=(const dedup_layer&) = delete;

    /// Sends `value` to `dest` unless the cache has seen that pair (then counts a hit).
    /// Outside an epoch (or deeper than its depth) it throws `errc::bad_context` like the
    /// sender, also for a value it would drop.
    void send(const value_type& value, int dest) {
        if (seen(value, dest)) {
            check_context();
            ++_hits;
            return;
        }
        // Remembered before it is sent: the send makes progress, and a handler run meanwhile
        // may send the same value through this layer. A refused send is forgotten again.
        const slot before = remember(value, dest);
        try {
            _next->send(value, dest);
        } catch (...) {
            forget(value, dest, before);
            throw;
        }
    }
    /// Messages dropped so far.
    [[nodiscard]] std::uint64_t hits() const noexcept { return _hits; }
    /// Forgets every value (e.g. when messages stop being idempotent).
    void clear() {
        if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
            std::fill(_slots.begin(), _slots.end(), slot{});
        } else {
            _seen.clear();
        }
    }
    std::size_t flush_held() override { return 0; }
    void add_counts(std::uint64_t& dedup_hits, std::uint64_t&) const override {
        dedup_hits += _hits;
    }

  private:
    // A hit sends nothing, but is refused where a send would be: one comparison at the top
    // level of an open epoch without other threads, the full check otherwise.
    void check_context() const {
        const std::uint64_t tag = _hot->tag;
        if (_hot->threaded || tag == detail::no_epoch_tag || (tag & 0xff) != 0) [[unlikely]]
            (void)detail::typed_send_tag(_layer, "am::dedup::send");
    }
    struct slot {
        value_type value;
        int dest = -1;
    };
    struct key {
        value_type value;
        int dest;
        bool operator==(const key& o) const noexcept {
            return dest == o.dest && detail::same_value(value, o.value);
        }
    };
    struct key_hash {
        std::size_t operator()(const key& k) const noexcept {
            return static_cast<std::size_t>(detail::hash_value(k.value) ^
                                            static_cast<std::uint64_t>(k.dest) *
                                                0x9e3779b97f4a7c15ull);
        }
    };
    [[nodiscard]] std::uint64_t slot_hash(const value_type& v, int dest) const noexcept {
        return detail::hash_value(v) ^ static_cast<std::uint64_t>(dest) * 0x9e3779b97f4a7c15ull;
    }
    [[nodiscard]] bool seen(const value_type& v, int dest) const {
        if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
            const slot& s = _slots[slot_hash(v, dest) & _mask];
            return s.dest == dest && detail::same_value(s.value, v);
        } else {
            return _seen.count(key{v, dest}) != 0;
        }
    }
    // Returns what the direct-mapped slot held before (to put back if the send is refused).
    slot remember(const value_type& v, int dest) {
        if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
            slot& s = _slots[slot_hash(v, dest) & _mask];
            const slot before = s;
            s.value = v;
            s.dest = dest;
            return before;
        } else {
            if (_seen.size() >= _max) _seen.clear();
            _seen.insert(key{v, dest});
            return slot{};
        }
    }
    void forget(const value_type& v, int dest, const slot& before) {
        if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
            slot& s = _slots[slot_hash(v, dest) & _mask];
            if (s.dest == dest && detail::same_value(s.value, v)) s = before;
        } else {
            _seen.erase(key{v, dest});
        }
    }

    Sender* _next;
    detail::typed_layer* _layer;
    detail::typed_hot* _hot;
    std::vector<slot> _slots;
    std::size_t _mask = 0;
    std::size_t _max = 0;
    std::unordered_set<key, key_hash> _seen;
    std::uint64_t _hits = 0;
};

/// Duplicate elimination over `sender` with `cache` (`direct_mapped_cache` or `hash_cache`).
template <class Sender, class Cache>
[[nodiscard]] dedup_layer<Sender, Cache> dedup(Sender& sender, Cache cache) {
    return dedup_layer<Sender, Cache>(sender, cache);
}

}  // namespace am
