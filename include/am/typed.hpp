// SPDX-License-Identifier: MIT
/// @file
/// The typed layer (AM++): message types, per-destination coalescing, duplicate elimination,
/// key/value combining, and epochs that end only when every message sent in them — including
/// messages sent by handlers, to any depth — has been handled on every rank.
///
/// ```cpp
/// struct visit { std::uint64_t vertex; std::uint32_t level; };
/// am::message_type<visit> visits(ctx, [&](const visit& v) { ... });   // collective
/// auto sender = am::coalesce(visits, {.bytes = 16 << 10});
/// {
///     am::epoch epoch(ctx);             // collective
///     sender.send(visit{v, 1}, owner(v));
/// }                                     // every visit, nested ones too, has been handled
/// ```
///
/// Thread-safety: by default a rank's typed objects are used by the rank's thread (and its
/// handlers). With `config::thread_multiple` (or `progress_thread`) several threads of a rank
/// may send through one `message_type` or coalescing layer at once; `dedup` and
/// `reduce_by_key` layers are then used by one thread each.
#pragma once

#include <am/context.hpp>
#include <am/error.hpp>

#include <algorithm>
#include <atomic>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <type_traits>
#include <typeinfo>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

namespace am {

/// Statistics of one epoch on one rank.
struct epoch_stats {
    std::uint64_t epoch = 0;             ///< the epoch's number on this rank (1, 2, ...)
    std::uint64_t messages_sent = 0;     ///< typed messages this rank sent in it (after dedup
                                         ///< and combining)
    std::uint64_t messages_handled = 0;  ///< typed messages of the epoch handled on this rank
    std::uint64_t batches_sent = 0;      ///< core messages that carried them
    std::uint64_t bytes_sent = 0;        ///< payload bytes of those core messages
    std::uint64_t dedup_hits = 0;        ///< messages dropped by `dedup` layers
    std::uint64_t combined = 0;          ///< messages folded into another by `reduce_by_key`
    std::uint64_t waves = 0;             ///< reduction rounds the termination detector ran
    double seconds = 0;                  ///< from the epoch's start to its end on this rank
    /// Messages per core message (1 without coalescing); 0 when nothing was sent.
    [[nodiscard]] double coalescing_ratio() const noexcept {
        return batches_sent == 0
                   ? 0.0
                   : static_cast<double>(messages_sent) / static_cast<double>(batches_sent);
    }
    /// One line of text, e.g. "epoch 3: sent 1000 in 2 batches (ratio 500.0) ...".
    [[nodiscard]] std::string to_string() const;
};

/// How an epoch detects its end.
struct epoch_options {
    /// -1 (default): handlers may send to any depth; the general detector (four counters
    /// over a sum reduction) needs at least two reduction rounds. d ≥ 0: a promise that
    /// messages nest at most d deep (0: handlers send nothing; 1: handlers of messages sent by
    /// the rank's code may send, their handlers may not; at most 6). The epoch then ends after
    /// a single reduction round when everything has arrived, and a send deeper than d throws
    /// `am::error` (errc::bad_context).
    int depth = -1;
};

namespace detail {

class typed_layer;

/// Tag carried by every typed message: epoch number and nesting level.
inline constexpr std::uint64_t no_epoch_tag = ~std::uint64_t{0};
/// The tag of a buffer that has not been used yet: equal to no tag a send can have.
inline constexpr std::uint64_t unset_tag = ~std::uint64_t{1};

/// The state a header-inline send path reads: the tag of sends made now by the rank's thread
/// (outside `thread_multiple`), or `no_epoch_tag`.
struct typed_hot {
    std::uint64_t tag = no_epoch_tag;
    bool threaded = false;  ///< several threads of the rank may send (thread_multiple, progress)
};

/// Something a layer keeps locally that the epoch's end must send first (coalescing buffers,
/// combining caches), and counters it contributes to epoch statistics.
class typed_member {
  public:
    /// Sends everything held locally; returns how many messages it sent.
    virtual std::size_t flush_held() = 0;
    /// True while it holds messages not yet sent.
    [[nodiscard]] virtual bool holds() const { return false; }
    virtual void add_counts(std::uint64_t& dedup_hits, std::uint64_t& combined) const {
        (void)dedup_hits, (void)combined;
    }
    /// Members with a higher order flush first (a combining cache feeds a coalescing layer).
    int order = 0;

  protected:
    ~typed_member() = default;
};

typed_layer* typed_of(context& ctx);
/// A message type's handler as the library calls it: on a whole received batch.
struct type_runner {
    void* obj;
    void (*run)(void* obj, int source, std::span<const std::byte> batch);
    void (*destroy)(void* obj);
};
typed_hot* typed_hot_of(typed_layer* l) noexcept;
/// Registers a message type; the layer owns `runner.obj` from then on.
std::uint32_t typed_register(typed_layer* l, std::string_view name, std::size_t item_size,
                             const type_runner& runner);
/// A batch arrived: runs the type's handler on it, or keeps it until this rank begins the
/// batch's epoch.
void typed_deliver(typed_layer* l, std::uint32_t type, int source, std::span<const std::byte> p,
                   std::uint64_t tag);
void typed_set_handler(typed_layer* l, std::uint32_t type, std::uint32_t handler);
/// The tag of a send made now on this thread; throws when no epoch is open or the declared
/// depth is exceeded.
std::uint64_t typed_send_tag(typed_layer* l, const char* call);
/// Checks a tag read from `typed_hot` before it is first used for a buffer.
void typed_check_tag(typed_layer* l, std::uint64_t tag, const char* call);
/// Sends `items` objects of `type` as one core message (a batch), counted in the epoch of `tag`.
void typed_send(typed_layer* l, std::uint32_t type, int dest, std::uint64_t tag, const void* data,
                std::size_t items, const char* call);
std::size_t typed_max_batch_bytes(typed_layer* l) noexcept;
void typed_attach(typed_layer* l, typed_member* m);
void typed_detach(typed_layer* l, typed_member* m) noexcept;
[[noreturn]] void typed_fail(typed_layer* l, errc code, const char* call, const std::string& what);
int typed_rank(typed_layer* l) noexcept;
/// A number no other coalescing layer of this process had (thread-local caches compare it:
/// a new layer may reuse an old one's address, even in a later job).
std::uint64_t typed_new_serial() noexcept;
int typed_size(typed_layer* l) noexcept;

/// A layer destroyed while it holds messages sends them; when that fails (no epoch open, the
/// job going down) the messages are lost, which is reported on stderr rather than thrown from
/// a destructor.
void report_lost(typed_layer* l, const char* what, const char* why) noexcept;
template <class M>
void flush_on_destruction(M& m, typed_layer* l, const char* what) noexcept {
    try {
        if (m.holds()) (void)m.flush_held();
    } catch (const std::exception& e) {
        report_lost(l, what, e.what());
    }
}

/// The slots of a direct-mapped cache: `entries` rounded up to a power of two (≤ 2^32).
inline std::size_t cache_slots(typed_layer* l, std::size_t entries) {
    if (entries > (std::size_t{1} << 32)) {
        typed_fail(l, errc::too_large, "am::direct_mapped_cache",
                   std::to_string(entries) + " entries exceed the limit of 2^32");
    }
    std::size_t n = 1;
    while (n < entries) n <<= 1;
    return n;
}

/// Calls the user's handler on a batch: once with the span, or once per message.
template <class T, class F>
void run_batch(F& f, int source, std::span<const T> batch) {
    if constexpr (std::is_invocable_v<F&, int, std::span<const T>>) {
        f(source, batch);
    } else if constexpr (std::is_invocable_v<F&, int, const T&>) {
        for (const T& v : batch) f(source, v);
    } else {
        for (const T& v : batch) f(v);
    }
}

template <class T, class F>
inline constexpr bool valid_handler_v =
    std::is_invocable_v<F&, int, std::span<const T>> || std::is_invocable_v<F&, int, const T&> ||
    std::is_invocable_v<F&, const T&>;

/// Equality and hashing of message values for the caches: `operator==` and `std::hash` when
/// the type has them, else its bytes (which needs a type without padding).
template <class T>
bool same_value(const T& a, const T& b) noexcept {
    if constexpr (std::equality_comparable<T>) {
        return a == b;
    } else {
        return std::memcmp(&a, &b, sizeof(T)) == 0;
    }
}
template <class T>
std::uint64_t hash_value(const T& v) noexcept {
    std::uint64_t h;
    if constexpr (requires { std::hash<T>{}(v); }) {
        h = static_cast<std::uint64_t>(std::hash<T>{}(v));
    } else {
        unsigned char b[sizeof(T)];
        std::memcpy(b, &v, sizeof(T));
        h = 1469598103934665603ull;
        for (unsigned char c : b) h = (h ^ c) * 1099511628211ull;
    }
    h ^= h >> 33, h *= 0xff51afd7ed558ccdull, h ^= h >> 33;  // spread identity hashes
    return h;
}
template <class T>
inline constexpr bool cacheable_v = (std::equality_comparable<T> &&
                                     requires(const T& v) { std::hash<T>{}(v); }) ||
                                    std::has_unique_object_representations_v<T>;

}  // namespace detail

/// A message type: values of `T` sent to a rank, where `handler` runs on them. Created
/// collectively (same types in the same order on every rank; the constructor ends with a
/// barrier, which throws am::error (errc::handler_mismatch) on every rank when a rank created
/// one with another name, `T` or handler type, naming both ranks and what each created). `T` must
/// be trivially copyable. The handler is one of `void(int source, std::span<const T> batch)`,
/// `void(int source, const T&)` or `void(const T&)`; the per-message forms are called in a loop the
/// compiler can inline. Handlers may send any typed message (nested sends); they run on the thread
/// that polls. Sends must happen inside an `am::epoch` (or from a handler). Lives until the job
/// ends on the library side; the object must outlive the layers (coalescing, dedup, combining)
/// built on it.
template <class T>
class message_type {
    static_assert(std::is_trivially_copyable_v<T>,
                  "am::message_type<T>: T must be trivially copyable: messages are copied "
                  "byte-wise between ranks");
    static_assert(!std::is_pointer_v<T>,
                  "am::message_type<T>: T must not be a pointer: addresses mean nothing on "
                  "another rank");

  public:
    using value_type = T;

    template <class F>
    message_type(context& ctx, F&& handler, std::string_view name = "message_type")
        : _ctx(&ctx), _layer(detail::typed_of(ctx)) {
        using H = std::remove_cvref_t<F>;
        static_assert(detail::valid_handler_v<T, H>,
                      "am::message_type<T>: the handler must be callable as "
                      "(int source, std::span<const T>), (int source, const T&) or (const T&)");
        // The layer owns the handler from the call on, also when it throws.
        const detail::type_runner runner{new H(std::forward<F>(handler)), &run<H>,
                                         &detail::destroy_callable<H>};
        _id = detail::typed_register(_layer, name, sizeof(T), runner);
        detail::typed_layer* layer = _layer;
        const std::uint32_t id = _id;
        auto deliver = [layer, id](token& t, std::span<const std::byte> p, std::uint64_t tag) {
            detail::typed_deliver(layer, id, t.source(), p, tag);
        };
        // The core handler carries the type's name, and its type (which depends on T and the
        // handler's type) tells the rest: the barrier's handshake finds a rank that named,
        // typed or handled this message type differently, and reports both ranks' versions.
        using D = decltype(deliver);
        using K = detail::handle_t<D>;
        const std::string label = "am::message_type \"" + std::string(name) + "\"";
        _handler = detail::core_register(
            ctx.impl(),
            detail::handler_desc{K::kind, K::nargs, &detail::invoke_callable<D>, new D(deliver),
                                 &detail::destroy_callable<D>, label, typeid(D).name()});
        detail::typed_set_handler(_layer, _id, _handler);
        ctx.barrier();
    }

    /// Sends one value to `dest` as its own core message (no coalescing). Copies `value` before
    /// it returns. Makes progress; from a handler it never blocks.
    void send(const T& value, int dest) {
        const std::uint64_t tag = detail::typed_send_tag(_layer, "am::message_type::send");
        detail::typed_send(_layer, _id, dest, tag, &value, 1, "am::message_type::send");
    }
    /// Sends all of `values` to `dest` as one core message (at most `max_batch()` values).
    void send(std::span<const T> values, int dest) {
        const std::uint64_t tag = detail::typed_send_tag(_layer, "am::message_type::send");
        detail::typed_send(_layer, _id, dest, tag, values.data(), values.size(),
                           "am::message_type::send");
    }
    /// Internal: sends `value` in the epoch and level of `tag` (a layer that held it).
    void send_tagged(const T& value, int dest, std::uint64_t tag) {
        detail::typed_check_tag(_layer, tag, "am::message_type::send");
        detail::typed_send(_layer, _id, dest, tag, &value, 1, "am::message_type::send");
    }
    /// The most values one core message carries (bounded by `context::max_medium()`).
    [[nodiscard]] std::size_t max_batch() const noexcept {
        return detail::typed_max_batch_bytes(_layer) / sizeof(T);
    }
    [[nodiscard]] context& ctx() const noexcept { return *_ctx; }
    /// This type's number among the job's message types (creation order).
    [[nodiscard]] std::uint32_t id() const noexcept { return _id; }
    [[nodiscard]] detail::typed_layer* layer() const noexcept { return _layer; }

  private:
    // Runs the user's handler on a received batch: the per-message loop is compiled here,
    // where the handler's type is known, so the call inlines.
    template <class H>
    static void run(void* obj, int source, std::span<const std::byte> p) {
        H& f = *static_cast<H*>(obj);
        const std::size_t n = p.size() / sizeof(T);
        if (reinterpret_cast<std::uintptr_t>(p.data()) % alignof(T) == 0) [[likely]] {
            detail::run_batch<T>(f, source,
                                 std::span<const T>(reinterpret_cast<const T*>(p.data()), n));
        } else {  // over-aligned T: the ring aligns records to 8 bytes
            std::vector<T> copy(n);
            std::memcpy(copy.data(), p.data(), n * sizeof(T));
            detail::run_batch<T>(f, source, std::span<const T>(copy));
        }
    }

    context* _ctx;
    detail::typed_layer* _layer;
    std::uint32_t _id = 0;
    std::uint32_t _handler = 0;
};

/// Options of a coalescing layer.
struct coalesce_options {
    /// Bytes of each per-destination buffer: a buffer is sent as one message when it is full,
    /// on `flush()` and at the end of the epoch. At most `context::max_medium()`; 0 (default)
    /// takes 16 KiB, or `max_medium()` when that is smaller.
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
        if (opt.bytes == 0) opt.bytes = std::min(std::size_t{16} << 10, room);
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

namespace detail {
template <class Sender>
typed_layer* layer_of(Sender& s) {
    if constexpr (requires { s.type(); }) {
        return s.type().layer();
    } else {
        return s.layer();
    }
}
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

/// Duplicate elimination over `sender` with `cache` (`direct_mapped_cache` or `hash_cache`).
template <class Sender, class Cache>
[[nodiscard]] dedup_layer<Sender, Cache> dedup(Sender& sender, Cache cache) {
    return dedup_layer<Sender, Cache>(sender, cache);
}

/// Key/value combining over `sender` with `op` and `cache`.
template <class Sender, class Op, class Cache>
[[nodiscard]] reducer<Sender, Op, Cache> reduce_by_key(Sender& sender, Op op, Cache cache) {
    return reducer<Sender, Op, Cache>(sender, std::move(op), cache);
}

namespace detail {
void epoch_begin(typed_layer* l, const epoch_options& opt);
std::uint64_t epoch_end(typed_layer* l, std::uint64_t value, epoch_stats& out);
void epoch_abandon(typed_layer* l) noexcept;
}  // namespace detail

/// A message epoch (AM++ §3.3): collective, scoped. Every typed message sent while it is
/// open — by the rank's code, or by handlers, to any depth — has been handled on every rank
/// when `end()` returns on any rank. Begin and end it on every rank, one epoch at a time;
/// the destructor ends it if `end()` was not called (unless an exception is unwinding).
/// Starting costs nothing; ending is the termination detector (`epoch_options`), which
/// flushes every coalescing and combining layer and handles arriving messages while it waits.
/// Not callable from a handler. A message of an epoch this rank has not begun yet (a faster
/// peer began it) waits, copied, until this rank begins that epoch: handlers never run before
/// the program on their rank has reached the epoch.
/// With `config::epoch_timeout` set, an end that takes longer prints this rank's per-peer
/// and per-type counts of the epoch and brings the job down (errc::timeout).
class epoch {
  public:
    explicit epoch(context& ctx, epoch_options opt = {}) : _layer(detail::typed_of(ctx)) {
        detail::epoch_begin(_layer, opt);
    }
    ~epoch() noexcept(false) {
        if (_ended) return;
        if (std::uncaught_exceptions() > _unwinding) {
            detail::epoch_abandon(_layer);
            return;
        }
        (void)end();
    }
    epoch(const epoch&) = delete;
    epoch& operator=(const epoch&) = delete;

    /// Ends the epoch (collective) and returns the sum of `value` over all ranks.
    std::uint64_t end(std::uint64_t value = 0) {
        if (_ended) {
            detail::typed_fail(_layer, errc::bad_context, "am::epoch::end",
                               "the epoch has already ended");
        }
        try {
            const std::uint64_t sum = detail::epoch_end(_layer, value, _stats);
            _ended = true;
            return sum;
        } catch (const error& e) {
            // Called where it may not be (a handler): the epoch stays open. Otherwise (the job
            // is going down, a timeout) the library has closed it.
            if (e.code() != errc::bad_context) _ended = true;
            throw;
        }
    }
    /// This rank's statistics of the epoch; complete once it has ended.
    [[nodiscard]] const epoch_stats& stats() const noexcept { return _stats; }

  private:
    detail::typed_layer* _layer;
    int _unwinding = std::uncaught_exceptions();
    bool _ended = false;
    epoch_stats _stats;
};

}  // namespace am
