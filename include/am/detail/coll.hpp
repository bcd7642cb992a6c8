// SPDX-License-Identifier: MIT
// Machinery of <am/coll.hpp>: the byte-level request every collective becomes, how values of
// user types become bytes and back, and how an operator is applied to them. Not an API.
#pragma once

#include <am/error.hpp>
#include <am/serial.hpp>

#include <array>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <exception>
#include <functional>
#include <iterator>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <type_traits>
#include <typeinfo>
#include <vector>

namespace am {
class context;
}

namespace am::coll {
class team;
}

namespace am::coll::detail {

struct team_state;  // src/coll/team.cpp

/// Bytes of one value or message, kept inline up to 48 bytes (no allocation for the scalars most
/// collectives carry), on the heap beyond. 16-byte aligned either way (serial_reader's rule).
class blob {
  public:
    blob() noexcept = default;
    explicit blob(std::size_t n) { resize(n); }
    template <class It>
    blob(It first, It last) {
        resize(static_cast<std::size_t>(std::distance(first, last)));
        std::byte* p = data();
        for (; first != last; ++first) *p++ = static_cast<std::byte>(*first);
    }
    blob(const blob& o) : blob(o.begin(), o.end()) {}
    blob(blob&& o) noexcept { take(o); }
    blob& operator=(const blob& o) {
        if (this != &o) {
            resize(o._n);
            if (o._n != 0) std::memcpy(data(), o.data(), o._n);
        }
        return *this;
    }
    blob& operator=(blob&& o) noexcept {
        if (this != &o) {
            _heap.reset();
            take(o);
        }
        return *this;
    }
    ~blob() = default;

    [[nodiscard]] std::byte* data() noexcept { return _heap ? _heap.get() : _inline; }
    [[nodiscard]] const std::byte* data() const noexcept { return _heap ? _heap.get() : _inline; }
    [[nodiscard]] std::size_t size() const noexcept { return _n; }
    [[nodiscard]] bool empty() const noexcept { return _n == 0; }
    [[nodiscard]] std::byte* begin() noexcept { return data(); }
    [[nodiscard]] std::byte* end() noexcept { return data() + _n; }
    [[nodiscard]] const std::byte* begin() const noexcept { return data(); }
    [[nodiscard]] const std::byte* end() const noexcept { return data() + _n; }
    /// Grows or shrinks to `n` bytes, keeping the first min(n, size()); new bytes are left
    /// uninitialised (every caller writes them: a megabyte's zero-fill was a quarter of a
    /// large allreduce).
    void resize(std::size_t n) {
        if (n > capacity()) {
            std::unique_ptr<std::byte[]> p(new std::byte[n]);
            if (_n != 0) std::memcpy(p.get(), data(), _n);
            _heap = std::move(p);
            _cap = n;
        }
        _n = n;
    }
    void swap(blob& o) noexcept {
        blob t(std::move(o));
        o = std::move(*this);
        *this = std::move(t);
    }

  private:
    static constexpr std::size_t inline_bytes = 48;
    [[nodiscard]] std::size_t capacity() const noexcept { return _heap ? _cap : inline_bytes; }
    void take(blob& o) noexcept {
        _n = o._n;
        _cap = o._cap;
        if (o._heap) {
            _heap = std::move(o._heap);
        } else if (o._n != 0) {
            std::memcpy(_inline, o._inline, o._n);
        }
        o._n = 0;
        o._cap = 0;
    }
    std::unique_ptr<std::byte[]> _heap;
    std::size_t _n = 0;
    std::size_t _cap = 0;
    alignas(16) std::byte _inline[inline_bytes];
};

/// What a collective does; travels in every message of it (with the root, the operator and the
/// per-rank size) so ranks in different collectives fail naming both.
enum class kind : std::uint8_t {
    barrier = 1,
    broadcast = 2,
    reduce = 3,
    allreduce = 4,
    inclusive_scan = 5,
    exclusive_scan = 6,
    gather = 7,
    allgather = 8,
    alltoall = 9,
    split = 10,
};

/// acc = other_first ? op(other, acc) : op(acc, other). `other` covers the ranks just before
/// (other_first) or just after acc's, so a non-commutative operator sees rank order.
using combine_fn =
    std::function<void(blob& acc, std::span<const std::byte> other, bool other_first)>;

/// The element-wise form: combines `other` into `acc` (equal lengths, whole elements), so a
/// large reduction can split its vector between ranks (reduce-scatter + allgather).
using range_fn = std::function<void(std::span<std::byte> acc, std::span<const std::byte> other,
                                    bool other_first)>;

/// One collective call as the layer runs it.
struct request {
    kind what = kind::barrier;
    const char* call = "";
    int root = -1;                  // team rank of the root, -1 when none
    std::uint64_t fixed_bytes = 0;  // bytes every rank contributes when they must be equal
    bool fixed = false;             // whether fixed_bytes is checked
    std::uint32_t type = 0;         // the element type's identity (0: bytes), checked too
    std::uint32_t op_id = 0;        // the operator's identity (0: none)
    std::size_t elem = 0;  // >0: combine is element-wise on elements of this size (splittable)
    std::vector<blob> in;  // 1 contribution; size() for alltoall
    combine_fn combine;
    range_fn combine_range;  // set for element-wise operators (elem > 0)
};

/// Called once with the result: one blob (broadcast, reduce at the root, allreduce, scans;
/// none for exclusive_scan at rank 0 and reduce elsewhere), size() blobs (gather at the root,
/// allgather, alltoall), or none (barrier), or the error.
using done_fn = std::function<void(std::vector<blob>&& out, std::exception_ptr error)>;

/// Starts `r` on `t` (nonblocking); `done` runs from a poll of the team's rank.
void start(const team& t, request&& r, done_fn done);
/// Runs `r` on `t` and returns its result (blocking; polls while it waits).
std::vector<blob> run(const team& t, request&& r);
/// Throws am::error(invalid_argument) naming `call` for a team without members here.
void check_team(const team& t, const char* call);
[[noreturn]] void bad_root(const team& t, int root, const char* call);
[[noreturn]] void bad_size(const team& t, std::size_t got, std::size_t want, const char* what,
                           const char* call);

/// A 32-bit identity for an operator type: the same on every rank of one program.
template <class Op>
std::uint32_t op_id() noexcept {
    if constexpr (requires { Op::builtin_id; }) {
        return Op::builtin_id;
    } else {
        std::uint32_t h = 2166136261u;  // FNV-1a of the type's name
        for (const char* p = typeid(Op).name(); *p != 0; ++p) {
            h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
        }
        return h | 0x80000000u;  // never a built-in's id
    }
}

/// A 24-bit identity for a value type: the same on every rank of one program.
template <class T>
std::uint32_t type_id() noexcept {
    std::uint32_t h = 2166136261u;  // FNV-1a of the type's name
    for (const char* p = typeid(T).name(); *p != 0; ++p) {
        h = (h ^ static_cast<unsigned char>(*p)) * 16777619u;
    }
    return (h & 0xffffffu) | 1u;  // never 0 (bytes)
}

/// Values of T travel as their bytes when T is trivially copyable, else through
/// am::serializer<T> (serial.hpp; cereal types with <am/rpc_cereal.hpp>).
template <class T>
inline constexpr bool bytewise = std::is_trivially_copyable_v<T>;

template <class T>
concept collective_value = bytewise<T> || sendable<T>;

/// The T whose bytes start at `p` (any alignment; T need not be default-constructible).
template <class T>
T load(const std::byte* p) noexcept {
    std::array<std::byte, sizeof(T)> b;
    std::memcpy(b.data(), p, sizeof(T));
    return std::bit_cast<T>(b);
}

template <class T>
blob to_blob(const T& v) {
    if constexpr (bytewise<T>) {
        blob b(sizeof(T));
        std::memcpy(b.data(), &v, sizeof(T));
        return b;
    } else {
        std::vector<std::byte> bytes;
        serial_writer w(bytes);
        serializer<T>::write(w, v);
        return blob(bytes.begin(), bytes.end());
    }
}

template <class T>
T from_blob(std::span<const std::byte> b) {
    if constexpr (bytewise<T>) {
        if (b.size() != sizeof(T)) {
            throw error(errc::invalid_argument, "am::coll: a value of " + std::to_string(b.size()) +
                                                    " bytes arrived for a type of " +
                                                    std::to_string(sizeof(T)) +
                                                    " bytes (ranks disagree on a type)");
        }
        return load<T>(b.data());
    } else {
        // serial_reader wants a 16-byte aligned buffer: a vector's own storage is.
        if (reinterpret_cast<std::uintptr_t>(b.data()) % 16 != 0) {
            const blob copy(b.begin(), b.end());
            serial_reader r(std::span<const std::byte>(copy.data(), copy.size()));
            return serializer<T>::read(r);
        }
        serial_reader r(b);
        return serializer<T>::read(r);
    }
}

template <class T>
blob span_blob(std::span<const T> s) {
    blob b(s.size_bytes());
    if (!s.empty()) std::memcpy(b.data(), s.data(), s.size_bytes());
    return b;
}

template <class T>
std::vector<T> blob_vector(std::span<const std::byte> b) {
    std::vector<T> v(b.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
    return v;
}

/// acc[i] = op(acc[i], other[i]) (or op(other[i], acc[i])) over the n elements of T at `acc`.
template <class T, class Op>
void combine_elements(const Op& op, std::byte* acc, const std::byte* other, std::size_t n,
                      bool other_first) {
    for (std::size_t i = 0; i < n; ++i) {
        const T a = load<T>(acc + i * sizeof(T));
        const T b = load<T>(other + i * sizeof(T));
        const T r = other_first ? static_cast<T>(op(b, a)) : static_cast<T>(op(a, b));
        std::memcpy(acc + i * sizeof(T), &r, sizeof(T));
    }
}

/// Element-wise `op` over arrays of trivially copyable T.
template <class T, class Op>
range_fn elementwise_range(Op op) {
    return [op](std::span<std::byte> acc, std::span<const std::byte> other, bool other_first) {
        combine_elements<T>(op, acc.data(), other.data(), acc.size() / sizeof(T), other_first);
    };
}

/// The same on a whole blob (its own lambda: a std::function inside this one would not fit
/// its small buffer, one allocation per collective).
template <class T, class Op>
combine_fn elementwise(Op op) {
    return [op](blob& acc, std::span<const std::byte> other, bool other_first) {
        combine_elements<T>(op, acc.data(), other.data(), acc.size() / sizeof(T), other_first);
    };
}

/// `op` on whole values of T (serialized ones included).
template <class T, class Op>
combine_fn whole(Op op) {
    if constexpr (bytewise<T>) {
        return elementwise<T>(std::move(op));
    } else {
        return [op](blob& acc, std::span<const std::byte> other, bool other_first) {
            T a = from_blob<T>(acc);
            T b = from_blob<T>(other);
            acc = to_blob<T>(other_first ? static_cast<T>(op(std::move(b), std::move(a)))
                                         : static_cast<T>(op(std::move(a), std::move(b))));
        };
    }
}

}  // namespace am::coll::detail
