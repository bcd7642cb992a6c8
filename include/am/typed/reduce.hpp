// SPDX-License-Identifier: MIT
/// @file
/// Key/value combining at the source: `am::reducer` and `am::reduce_by_key`, with the cache
/// options of <am/typed/dedup.hpp> (part of <am/typed.hpp>).
#pragma once

#include <am/detail/typed.hpp>
#include <am/typed/dedup.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <mutex>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

namespace am {

namespace detail {
/// The tag of a send made now, checked (no epoch, depth).
inline std::uint64_t current_tag(typed_layer* l, const typed_hot* hot, const char* call) {
    if (hot->threaded) return typed_send_tag(l, call);
    if (hot->tag == no_epoch_tag) typed_check_tag(l, hot->tag, call);
    return hot->tag;
}
/// Key and value of a `<key, value>` message: a struct with members `key` and `value`, or
/// `first` and `second`.
template <class T>
auto& key_of(T& kv) {
    if constexpr (requires { kv.key; }) {
        return kv.key;
    } else {
        return kv.first;
    }
}
template <class T>
auto& value_of(T& kv) {
    if constexpr (requires { kv.value; }) {
        return kv.value;
    } else {
        return kv.second;
    }
}
}  // namespace detail

/// Combines `<key, value>` messages with the same key and destination at the source with
/// `op(held, new)` (AM++ §3.2.3, MapReduce's local combiner), so only one message per key
/// leaves while the cache holds it. The message type is a struct with members `key` and
/// `value`, or `first` and `second` (`std::pair` itself is not trivially copyable). Held messages
/// are sent when evicted, on `flush()` and before the epoch ends; combining never crosses epochs or
/// nesting levels. Not thread-safe (one per thread).
template <class Sender, class Op, class Cache>
class reducer final : public detail::typed_member {
  public:
    using value_type = typename Sender::value_type;
    using key_type = std::remove_cvref_t<decltype(detail::key_of(std::declval<value_type&>()))>;
    static_assert(detail::cacheable_v<key_type>,
                  "am::reduce_by_key: the key type needs operator== and std::hash, or a byte "
                  "representation without padding");

    reducer(Sender& next, Op op, Cache cache)
        : _next(&next),
          _layer(detail::layer_of(next)),
          _hot(detail::typed_hot_of(_layer)),
          _op(std::move(op)) {
        if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
            const std::size_t n = detail::cache_slots(_layer, cache.entries);
            _slots.assign(n, slot{});
            _mask = n - 1;
        } else {
            _max = cache.max_entries == 0 ? 1 : cache.max_entries;
        }
        order = 2;
        detail::typed_attach(_layer, this);
    }
    /// Sends what it still holds (an epoch must be open then), then leaves the epoch's list.
    ~reducer() {
        detail::typed_detach(_layer, this);
        detail::flush_on_destruction(*this, _layer, "am::reducer");
    }
    reducer(const reducer&) = delete;
    reducer& operator=(const reducer&) = delete;

    /// Folds `kv` into the held message with the same key for `dest`, or holds it.
    void send(const value_type& kv, int dest) {
        const std::uint64_t tag = detail::current_tag(_layer, _hot, "am::reducer::send");
        if (static_cast<unsigned>(dest) >= static_cast<unsigned>(detail::typed_size(_layer)))
            [[unlikely]] {
            _next->send(kv, dest);  // reports the bad rank
            return;
        }
        std::vector<slot> out;  // what leaves: sent after the lock is released
        {
            const guard g(*this);
            if (tag != _checked) [[unlikely]] {  // the epoch and depth rules, once per tag
                detail::typed_check_tag(_layer, tag, "am::reducer::send");
                _checked = tag;
            }
            const key_type& k = detail::key_of(kv);
            if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
                slot& s = _slots[hash(k, dest) & _mask];
                if (s.dest == dest && s.tag == tag && detail::same_value(detail::key_of(s.kv), k)) {
                    detail::value_of(s.kv) = _op(detail::value_of(s.kv), detail::value_of(kv));
                    ++_combined;
                    return;
                }
                // The new message takes the slot before the evicted one is sent: the send
                // makes progress, and handlers run meanwhile may use the slot too.
                if (s.dest >= 0) out.push_back(s);
                s = slot{kv, dest, tag};
            } else {
                auto [it, fresh] = _held.try_emplace(key{k, dest, tag}, kv);
                if (!fresh) {
                    detail::value_of(it->second) =
                        _op(detail::value_of(it->second), detail::value_of(kv));
                    ++_combined;
                    return;
                }
                if (_held.size() >= _max) take_all(out);
            }
        }
        for (const slot& o : out) _next->send_tagged(o.kv, o.dest, o.tag);
    }
    /// Sends every held message.
    void flush() { (void)flush_held(); }
    /// Messages folded into another so far.
    [[nodiscard]] std::uint64_t combined() const noexcept {
        const guard g(*this);
        return _combined;
    }

    std::size_t flush_held() override {
        std::vector<slot> out;
        {
            const guard g(*this);
            take_all(out);
        }
        for (const slot& o : out) _next->send_tagged(o.kv, o.dest, o.tag);
        return out.size();
    }
    void add_counts(std::uint64_t&, std::uint64_t& combined) const override {
        const guard g(*this);
        combined += _combined;
    }
    [[nodiscard]] bool holds() const override {
        const guard g(*this);
        if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
            return std::any_of(_slots.begin(), _slots.end(),
                               [](const slot& s) { return s.dest >= 0; });
        } else {
            return !_held.empty();
        }
    }

  private:
    struct slot {
        value_type kv{};
        int dest = -1;
        std::uint64_t tag = 0;
    };
    struct key {
        key_type k;
        int dest;
        std::uint64_t tag;
        bool operator==(const key& o) const noexcept {
            return dest == o.dest && tag == o.tag && detail::same_value(k, o.k);
        }
    };
    static std::uint64_t hash(const key_type& k, int dest) noexcept {
        return detail::hash_value(k) ^ static_cast<std::uint64_t>(dest) * 0x9e3779b97f4a7c15ull;
    }
    // With a progress thread or thread_multiple, handlers on another thread may use this layer
    // while the epoch's end flushes it: its state is then locked, never across a send.
    struct guard {
        explicit guard(const reducer& r) : _m(r._threaded ? &r._mutex : nullptr) {
            if (_m != nullptr) _m->lock();
        }
        ~guard() {
            if (_m != nullptr) _m->unlock();
        }
        guard(const guard&) = delete;
        guard& operator=(const guard&) = delete;
        std::mutex* _m;
    };
    void take_all(std::vector<slot>& out) {
        if constexpr (std::is_same_v<Cache, direct_mapped_cache>) {
            for (slot& s : _slots) {
                if (s.dest < 0) continue;
                out.push_back(s);
                s.dest = -1;
            }
        } else {
            for (const auto& [k, kv] : _held) out.push_back(slot{kv, k.dest, k.tag});
            _held.clear();
        }
    }
    struct key_hash {
        std::size_t operator()(const key& k) const noexcept {
            return static_cast<std::size_t>(hash(k.k, k.dest) ^ k.tag);
        }
    };

    Sender* _next;
    detail::typed_layer* _layer;
    const detail::typed_hot* _hot;
    Op _op;
    std::vector<slot> _slots;
    std::size_t _mask = 0;
    std::size_t _max = 0;
    std::unordered_map<key, value_type, key_hash> _held;
    std::uint64_t _combined = 0;
    std::uint64_t _checked = detail::unset_tag;  // the last tag that passed typed_check_tag
    bool _threaded = _hot->threaded;
    mutable std::mutex _mutex;
};

/// Key/value combining over `sender` with `op` and `cache`.
template <class Sender, class Op, class Cache>
[[nodiscard]] reducer<Sender, Op, Cache> reduce_by_key(Sender& sender, Op op, Cache cache) {
    return reducer<Sender, Op, Cache>(sender, std::move(op), cache);
}

}  // namespace am
