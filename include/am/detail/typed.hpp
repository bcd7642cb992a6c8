// SPDX-License-Identifier: MIT
/// @file
/// Internals of the typed layer shared by its headers (not for direct use): the entry points
/// into the library (`detail::typed_*`), message tags, `typed_member` (what an epoch flushes),
/// and the value hashing and equality of the dedup and combining caches.
#pragma once

#include <am/context.hpp>
#include <am/error.hpp>

#include <concepts>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>

namespace am {

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
/// Runs `type`'s handler on `p` as from `source`, here and now, without counting a message:
/// for a layer that received the value inside a message of its own (`routed`), from that
/// message's handler (sends made by the handler nest below it).
void typed_run_inline(typed_layer* l, std::uint32_t type, int source, std::span<const std::byte> p);
/// The tag of a send made now on this thread; throws when no epoch is open or the declared
/// depth is exceeded.
std::uint64_t typed_send_tag(typed_layer* l, const char* call);
/// Checks a tag read from `typed_hot` before it is first used for a buffer.
void typed_check_tag(typed_layer* l, std::uint64_t tag, const char* call);
/// Sends `items` objects of `type` as one core message (a batch), counted in the epoch of `tag`.
void typed_send(typed_layer* l, std::uint32_t type, int dest, std::uint64_t tag, const void* data,
                std::size_t items, const char* call);
std::size_t typed_max_batch_bytes(typed_layer* l) noexcept;
/// The default bytes of each half of a coalescing layer's per-destination buffer
/// (`coalesce_options::bytes` = 0): 16 KiB, but at most 4 MiB / `ranks` (so the two halves for
/// every rank stay within 8 MiB per layer at any P), at least 1 KiB, and at most `room`
/// (`max_medium()`). 16 KiB up to 256 ranks, 4 KiB at 1024, 1 KiB from 4096.
constexpr std::size_t default_coalesce_bytes(int ranks, std::size_t room) noexcept {
    constexpr std::size_t most = std::size_t{16} << 10, least = std::size_t{1} << 10;
    const std::size_t share =
        (std::size_t{4} << 20) / static_cast<std::size_t>(ranks > 0 ? ranks : 1);
    const std::size_t b = share < most ? (share > least ? share : least) : most;
    return b < room ? b : room;
}
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

template <class Sender>
typed_layer* layer_of(Sender& s) {
    if constexpr (requires { s.type(); }) {
        return s.type().layer();
    } else {
        return s.layer();
    }
}
}  // namespace detail

}  // namespace am
