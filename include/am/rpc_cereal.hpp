// SPDX-License-Identifier: MIT
/// @file
/// RPC arguments and results of user types through cereal (Debian `libcereal-dev`): include
/// this header and any type with a cereal `serialize(Archive&)` (or `save`/`load`) member or
/// free function can be an `am::rpc` argument or result. Types `am` sends by itself
/// (trivially copyable, std::string, std::vector, std::span) keep their own format; a
/// `std::vector` of a cereal type is sent element by element through this adapter.
///
/// The value is written with cereal's binary archive, behind a 64-bit length. Ranks run the
/// same program (and the same byte order), as the binary archive requires.
#pragma once

#include <am/serial.hpp>

#include <cereal/archives/binary.hpp>

#include <sstream>
#include <string>
#include <type_traits>
#include <vector>

namespace am {

namespace detail {
template <class T>
inline constexpr bool is_vector_v = false;
template <class T, class A>
inline constexpr bool is_vector_v<std::vector<T, A>> = true;

template <class T>
inline constexpr bool cereal_able_v =
    !bytewise_v<T> && !is_span_v<T> && !is_vector_v<T> && !std::is_same_v<T, std::string> &&
    cereal::traits::is_output_serializable<T, cereal::BinaryOutputArchive>::value &&
    cereal::traits::is_input_serializable<T, cereal::BinaryInputArchive>::value &&
    std::is_default_constructible_v<T>;
}  // namespace detail

template <class T>
struct serializer<T, std::enable_if_t<detail::cereal_able_v<T>>> {
    static void write(serial_writer& w, const T& v) {
        std::ostringstream os(std::ios::binary);
        {
            cereal::BinaryOutputArchive ar(os);
            ar(v);
        }
        const std::string bytes = std::move(os).str();
        serializer<std::string>::write(w, bytes);
    }
    static T read(serial_reader& r) {
        std::istringstream is(serializer<std::string>::read(r), std::ios::binary);
        T v{};
        cereal::BinaryInputArchive ar(is);
        ar(v);
        return v;
    }
};

}  // namespace am
