// SPDX-License-Identifier: MIT
/// @file
/// Per-destination coalescing over a message type: `am::coalesce_options`, `am::coalesced`
/// and `am::coalesce` (part of <am/typed.hpp>).
#pragma once

#include <am/detail/typed.hpp>
#include <am/error.hpp>
#include <am/typed/message_type.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace am {

/// Options of a coalescing layer.
struct coalesce_options {
    /// Bytes of each per-destination buffer: a buffer is sent as one message when it is full,
    /// on `flush()` and at the end of the epoch. At most `context::max_medium()`; 0 (default)
    /// takes 16 KiB, less beyond 256 ranks so that a layer's buffers stay within 8 MiB per rank
    /// (4 MiB / ranks per half, at least 1 KiB: 4 KiB at 1024 ranks), and at most
    /// `max_medium()` (docs/scaling.md).
    std::size_t bytes = 0;
};

/// Per-destination coalescing over a message type (AM++ §3.2.1). `send` appends to the
/// destination's buffer — a handful of instructions, no lock, no atomic — and a full buffer
/// goes out as one core message. The epoch's end flushes every buffer, also the ones its
/// handlers fill while the epoch ends. Thread-safety: with `thread_multiple` or a progress
/// thread every sending thread gets its own buffers, taken with an uncontended lock per
/// message (no lock is shared between threads on the common path); all threads' sends must
/// happen before the rank's thread ends the epoch. `T` must be default-constructible. Not
/// copyable or movable (the epoch knows its address); create it with `am::coalesce` or
/// directly.
template <class T>
class coalesced final : public detail::typed_member {
  public:
    using value_type = T;

    coalesced(message_type<T>& type, coalesce_options opt = {})
        : _type(&type),
          _layer(type.layer()),
          _hot(detail::typed_hot_of(_layer)),
          _ranks(static_cast<std::uint32_t>(detail::typed_size(_layer))) {
        const std::size_t room = detail::typed_max_batch_bytes(_layer);
        if (opt.bytes == 0)
            opt.bytes = detail::default_coalesce_bytes(static_cast<int>(_ranks), room);
        if (opt.bytes < sizeof(T) || opt.bytes > room) {
            detail::typed_fail(
                _layer, errc::too_large, "am::coalesce",
                "buffer of " + std::to_string(opt.bytes) + " bytes: it must hold one message of " +
                    std::to_string(sizeof(T)) +
                    " bytes and at most max_medium() = " + std::to_string(room) + " bytes");
        }
        _cap = static_cast<std::uint32_t>(opt.bytes / sizeof(T));
        _threaded = _hot->threaded;
        _serial = detail::typed_new_serial();
        init(_main);
        order = 1;
        detail::typed_attach(_layer, this);
    }
    /// Sends what it still holds (an epoch must be open then), then leaves the epoch's list.
    ~coalesced() {
        detail::typed_detach(_layer, this);
        detail::flush_on_destruction(*this, _layer, "am::coalesced");
    }
    coalesced(const coalesced&) = delete;
    coalesced& operator=(const coalesced&) = delete;

    /// Appends `value` to `dest`'s buffer; sends the buffer when it is full. Throws
    /// `am::error` for a bad rank (errc::bad_rank) or outside an epoch (errc::bad_context);
    /// nothing is appended then.
    void send(const T& value, int dest) {
        if (!_threaded) [[likely]] {
            append(_main, value, dest, _hot->tag);
        } else {
            buffers& s = thread_buffers();
            std::lock_guard lock(s.mutex);
            append(s, value, dest, detail::typed_send_tag(_layer, call));
        }
    }
    /// Internal: appends `value` in the epoch and level of `tag` (a layer that held it).
    void send_tagged(const T& value, int dest, std::uint64_t tag) {
        if (!_threaded) {
            append(_main, value, dest, tag);
        } else {
            buffers& s = thread_buffers();
            std::lock_guard lock(s.mutex);
            append(s, value, dest, tag);
        }
    }
    /// Sends every non-empty buffer of the calling thread (the epoch's end sends all threads').
    void flush() {
        if (!_threaded) {
            (void)flush_all(_main);
        } else {
            buffers& s = thread_buffers();
            std::lock_guard lock(s.mutex);
            (void)flush_all(s);
        }
    }
    /// Messages per buffer.
    [[nodiscard]] std::size_t capacity() const noexcept { return _cap; }
    /// Bytes of buffer storage allocated on this rank: per sending thread, two halves of
    /// `capacity()` messages and one bookkeeping entry for every rank (the buffers exist for
    /// every destination from construction on, so this is O(ranks); pages the program never
    /// filled are reserved but need not be resident). Not synchronised with threads that are
    /// registering their first send.
    [[nodiscard]] std::size_t buffer_bytes() const noexcept {
        const std::size_t per_set =
            static_cast<std::size_t>(_ranks) * (2 * _cap * sizeof(T) + sizeof(buffer_meta));
        return per_set * (1 + _sets.size());
    }
    [[nodiscard]] message_type<T>& type() const noexcept { return *_type; }

    /// Sends every buffer of every thread (the epoch's end). With several threads, another
    /// thread's buffers are taken only when their lock is free at once, and sent after it is
    /// released: that thread may itself be waiting in a send for this rank to make progress.
    std::size_t flush_held() override {
        if (!_threaded) return flush_all(_main);
        struct taken {
            int dest;
            std::uint64_t tag;
            std::vector<T> values;
        };
        std::vector<taken> out;
        {
            std::lock_guard lock(_sets_mutex);
            for (auto& s : _sets) {
                std::unique_lock set_lock(s->mutex, std::try_to_lock);
                if (!set_lock.owns_lock()) continue;  // its owner is sending; asked again later
                for (std::size_t d = 0; d < s->meta.size(); ++d) {
                    buffer_meta& m = s->meta[d];
                    if (m.count == 0) continue;
                    const T* data = s->active(static_cast<int>(d), _cap);
                    out.push_back(taken{static_cast<int>(d), m.tag, {data, data + m.count}});
                    m.count = 0;
                }
            }
        }
        std::size_t n = 0;
        for (const taken& t : out) {
            detail::typed_send(_layer, _type->id(), t.dest, t.tag, t.values.data(), t.values.size(),
                               call);
            n += t.values.size();
        }
        return n;
    }
    /// True while any buffer holds values (or, with several threads, one cannot be looked at
    /// now because its owner is sending).
    [[nodiscard]] bool holds() const override {
        auto any = [](const buffers& s) {
            return std::any_of(s.meta.begin(), s.meta.end(),
                               [](const buffer_meta& m) { return m.count != 0; });
        };
        if (!_threaded) return any(_main);
        std::lock_guard lock(_sets_mutex);
        return std::any_of(_sets.begin(), _sets.end(), [&](const std::unique_ptr<buffers>& s) {
            std::unique_lock set_lock(s->mutex, std::try_to_lock);
            return !set_lock.owns_lock() || any(*s);
        });
    }

  private:
    static constexpr const char* call = "am::coalesced::send";
    struct buffer_meta {
        // Epoch and level of the buffered values; at first none, so that the first send
        // checks its tag (an epoch must be open).
        std::uint64_t tag = detail::unset_tag;
        std::uint32_t count = 0;
        std::uint32_t which = 0;  // which half of the destination's storage is being filled
        bool sending = false;     // the other half is being sent (a flush polls meanwhile)
    };
    struct buffers {
        std::vector<buffer_meta> meta;
        std::unique_ptr<T[]> store;  // [dest][2][cap]
        // With several sending threads: the owner takes it per message (uncontended), the
        // epoch's end to flush; recursive because a send polls and handlers may append.
        std::recursive_mutex mutex;
        T* active(int dest, std::uint32_t cap) noexcept {
            return store.get() + (static_cast<std::size_t>(dest) * 2 +
                                  meta[static_cast<std::size_t>(dest)].which) *
                                     cap;
        }
    };

    void append(buffers& s, const T& value, int dest, std::uint64_t tag) {
        if (static_cast<std::uint32_t>(dest) >= _ranks) [[unlikely]]
            bad_rank(dest);
        buffer_meta& m = s.meta[static_cast<std::size_t>(dest)];
        if (m.tag != tag || m.count == _cap) [[unlikely]]
            make_room(s, dest, tag);
        s.active(dest, _cap)[m.count++] = value;
    }
    void init(buffers& s) {
        s.meta.assign(_ranks, buffer_meta{});
        s.store = std::make_unique_for_overwrite<T[]>(static_cast<std::size_t>(_ranks) * 2 * _cap);
    }
    // The calling thread's buffers: a thread-local cache hit in the common case, a locked
    // registration on a thread's first send.
    buffers& thread_buffers() {
        struct cache {
            const void* owner = nullptr;
            std::uint64_t serial = 0;
            buffers* set = nullptr;
        };
        static thread_local cache t_cache;
        if (t_cache.owner == this && t_cache.serial == _serial) [[likely]]
            return *t_cache.set;
        std::lock_guard lock(_sets_mutex);
        const std::thread::id me = std::this_thread::get_id();
        buffers* found = nullptr;
        for (std::size_t i = 0; i < _owners.size(); ++i) {
            if (_owners[i] == me) found = _sets[i].get();
        }
        if (found == nullptr) {
            _sets.push_back(std::make_unique<buffers>());
            _owners.push_back(me);
            found = _sets.back().get();
            init(*found);
        }
        t_cache = cache{this, _serial, found};
        return *found;
    }
    [[noreturn, gnu::cold]] void bad_rank(int dest) const {
        detail::typed_fail(_layer, errc::bad_rank, call,
                           "destination " + std::to_string(dest) + " out of range [0, " +
                               std::to_string(_ranks) + ")");
    }
    // A send polls, and handlers may fill the buffer again meanwhile: repeat until there is
    // room for a value of this tag.
    [[gnu::noinline]] void make_room(buffers& s, int dest, std::uint64_t tag) {
        buffer_meta& m = s.meta[static_cast<std::size_t>(dest)];
        if (m.tag != tag) detail::typed_check_tag(_layer, tag, call);
        while (m.count != 0 && (m.tag != tag || m.count == _cap)) send_buffer(s, dest);
        m.tag = tag;
    }
    // Sends `dest`'s filled half. The send may poll (waiting for room) and so run handlers
    // that append to this very buffer: they fill the other half meanwhile. A handler that
    // fills that half too sends it at once (a send from a handler copies before returning).
    void send_buffer(buffers& s, int dest) {
        buffer_meta& m = s.meta[static_cast<std::size_t>(dest)];
        const std::uint32_t n = m.count;
        const std::uint64_t tag = m.tag;
        T* data = s.active(dest, _cap);
        m.count = 0;
        if (m.sending) {
            detail::typed_send(_layer, _type->id(), dest, tag, data, n, call);
            return;
        }
        m.which ^= 1u;
        m.sending = true;
        struct done {
            buffer_meta& m;
            ~done() { m.sending = false; }
        } guard{m};
        detail::typed_send(_layer, _type->id(), dest, tag, data, n, call);
    }
    std::size_t flush_all(buffers& s) {
        std::size_t n = 0;
        for (std::size_t d = 0; d < s.meta.size(); ++d) {
            if (s.meta[d].count != 0) {
                n += s.meta[d].count;
                send_buffer(s, static_cast<int>(d));
            }
        }
        return n;
    }

    message_type<T>* _type;
    detail::typed_layer* _layer;
    detail::typed_hot* _hot;
    std::uint32_t _ranks;
    std::uint32_t _cap = 0;
    bool _threaded = false;
    std::uint64_t _serial;  // tells this coalescer from an earlier one at the same address
    buffers _main;
    mutable std::mutex _sets_mutex;
    std::vector<std::unique_ptr<buffers>> _sets;
    std::vector<std::thread::id> _owners;
};

/// A coalescing layer over `type` (see `coalesced`).
template <class T>
[[nodiscard]] coalesced<T> coalesce(message_type<T>& type, coalesce_options opt = {}) {
    return coalesced<T>(type, opt);
}

}  // namespace am
