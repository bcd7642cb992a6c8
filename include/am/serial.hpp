// SPDX-License-Identifier: MIT
/// @file
/// How RPC arguments and results become bytes: `am::serializer<T>`.
///
/// Built in: trivially copyable types (their bytes), `std::string`, `std::vector<T>` and, as a
/// parameter of a remote function, `std::span<const T>` of trivially copyable `T` (the callee's
/// span views the received bytes, valid during the call). Any other `T` is sent when
/// `am::serializer<T>` is specialised, or — with <am/rpc_cereal.hpp> included — when `T` has
/// a cereal `serialize` / `save`+`load` function. Values keep their alignment in the buffer.
///
/// Errors: reading past the end of a buffer (a sender and receiver that disagree on a type)
/// throws am::error(errc::invalid_argument).
#pragma once

#include <am/error.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

namespace am {

/// Appends values to a byte buffer.
class serial_writer {
  public:
    explicit serial_writer(std::vector<std::byte>& out) noexcept : _out(out) {}
    /// Pads to a multiple of `align` (a power of two ≤ 16) from the buffer's start.
    void align(std::size_t a) {
        const std::size_t to = (_out.size() + a - 1) & ~(a - 1);
        if (to != _out.size()) _out.resize(to);
    }
    void write(const void* p, std::size_t n) {
        // resize + memcpy: GCC 12 at -O3 warns (-Wstringop-overflow, a false positive) on the
        // vector range insert that would skip the zero-fill.
        const std::size_t at = _out.size();
        _out.resize(at + n);
        if (n != 0) std::memcpy(_out.data() + at, p, n);
    }
    [[nodiscard]] std::size_t size() const noexcept { return _out.size(); }

  private:
    std::vector<std::byte>& _out;
};

/// Reads values back; the buffer starts 16-byte aligned.
class serial_reader {
  public:
    explicit serial_reader(std::span<const std::byte> in) noexcept : _in(in) {}
    void align(std::size_t a) { _at = (_at + a - 1) & ~(a - 1); }
    /// The next `n` bytes; throws errc::invalid_argument past the end.
    std::span<const std::byte> take(std::size_t n) {
        if (n > _in.size() || _at > _in.size() - n) overrun(n);
        const auto s = _in.subspan(_at, n);
        _at += n;
        return s;
    }
    void read(void* p, std::size_t n) {
        const auto s = take(n);
        if (n != 0) std::memcpy(p, s.data(), n);
    }
    [[nodiscard]] bool done() const noexcept { return _at == _in.size(); }

  private:
    [[noreturn]] void overrun(std::size_t n) const {
        throw error(errc::invalid_argument,
                    "am::rpc: a value needs " + std::to_string(n) + " bytes at offset " +
                        std::to_string(_at) + " of a " + std::to_string(_in.size()) +
                        "-byte message (sender and receiver disagree on a type)");
    }
    std::span<const std::byte> _in;
    std::size_t _at = 0;
};

/// Specialise for a type to send: `static void write(serial_writer&, const T&)` and
/// `static T read(serial_reader&)`. Undefined for types that cannot be sent.
template <class T, class Enable = void>
struct serializer;

namespace detail {
template <class T>
inline constexpr bool is_span_v = false;
template <class T>
inline constexpr bool is_span_v<std::span<const T>> = true;
/// Sent as its bytes: trivially copyable, and not a pointer or span (whose bytes mean nothing
/// on another rank).
template <class T>
inline constexpr bool bytewise_v =
    std::is_trivially_copyable_v<T> && !std::is_pointer_v<T> && !is_span_v<T>;
}  // namespace detail

template <class T>
struct serializer<T, std::enable_if_t<detail::bytewise_v<T>>> {
    static void write(serial_writer& w, const T& v) {
        w.align(alignof(T) > 16 ? 16 : alignof(T));
        w.write(&v, sizeof v);
    }
    static T read(serial_reader& r) {
        r.align(alignof(T) > 16 ? 16 : alignof(T));
        T v;
        r.read(&v, sizeof v);
        return v;
    }
};

namespace detail {
inline void write_length(serial_writer& w, std::size_t n) {
    serializer<std::uint64_t>::write(w, n);
}
inline std::size_t read_length(serial_reader& r) {
    return static_cast<std::size_t>(serializer<std::uint64_t>::read(r));
}
}  // namespace detail

template <>
struct serializer<std::string> {
    static void write(serial_writer& w, const std::string& s) {
        detail::write_length(w, s.size());
        w.write(s.data(), s.size());
    }
    static std::string read(serial_reader& r) {
        const auto b = r.take(detail::read_length(r));
        return std::string(reinterpret_cast<const char*>(b.data()), b.size());
    }
};

/// A span of trivially copyable elements: sent as its elements; read as a view of them.
template <class T>
struct serializer<std::span<const T>, std::enable_if_t<std::is_trivially_copyable_v<T>>> {
    static void write(serial_writer& w, std::span<const T> s) {
        detail::write_length(w, s.size());
        w.align(alignof(T) > 16 ? 16 : alignof(T));
        w.write(s.data(), s.size_bytes());
    }
    static std::span<const T> read(serial_reader& r) {
        const std::size_t n = detail::read_length(r);
        r.align(alignof(T) > 16 ? 16 : alignof(T));
        if (n > SIZE_MAX / sizeof(T)) (void)r.take(SIZE_MAX);
        const auto b = r.take(n * sizeof(T));
        return {reinterpret_cast<const T*>(b.data()), n};
    }
};

template <class T>
struct serializer<std::vector<T>, std::enable_if_t<!std::is_trivially_copyable_v<std::vector<T>>>> {
    static void write(serial_writer& w, const std::vector<T>& v) {
        if constexpr (std::is_trivially_copyable_v<T>) {
            serializer<std::span<const T>>::write(w, std::span<const T>(v));
        } else {
            detail::write_length(w, v.size());
            for (const T& e : v) serializer<T>::write(w, e);
        }
    }
    static std::vector<T> read(serial_reader& r) {
        if constexpr (std::is_trivially_copyable_v<T>) {
            const auto s = serializer<std::span<const T>>::read(r);
            return std::vector<T>(s.begin(), s.end());
        } else {
            std::vector<T> v(detail::read_length(r));
            for (T& e : v) e = serializer<T>::read(r);
            return v;
        }
    }
};

/// True when `T` can be an RPC argument or result.
template <class T>
concept sendable = requires(serial_writer& w, serial_reader& r, const T& v) {
    serializer<T>::write(w, v);
    { serializer<T>::read(r) } -> std::convertible_to<T>;
};

}  // namespace am
