// SPDX-License-Identifier: MIT
// MPI datatypes as byte blocks and type signatures (MPI only, no am): what MPIX_Am needs to
// turn the origin's segment datatypes into am's byte layouts and to check the paper's rule
// signature(origin segment) = N x signature(target element).
#pragma once

#include <mpi.h>

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace am::mpix {

/// One run of the type signature: `count` consecutive elements of the predefined type `type`.
struct sig_run {
    MPI_Datatype type;
    std::size_t count;
};

/// A datatype (or `count` of it) flattened: its bytes as blocks in type-map order (the order
/// MPI packs them in), offsets relative to the buffer address (may be negative: lower bounds),
/// and its type signature run-length encoded.
struct flat_type {
    struct block {
        std::ptrdiff_t offset;
        std::size_t bytes;
    };
    std::vector<block> blocks;
    std::vector<sig_run> signature;
    std::ptrdiff_t extent = 0;  ///< MPI extent (of all `count` elements)
    std::size_t size = 0;       ///< bytes of data (MPI_Type_size × count)

    /// Appends `other` shifted by `shift` bytes, merging touching blocks and equal runs.
    void append(const flat_type& other, std::ptrdiff_t shift);
    void add_block(std::ptrdiff_t offset, std::size_t bytes);
    void add_run(MPI_Datatype type, std::size_t count);
    /// The smallest block offset (0 without blocks).
    [[nodiscard]] std::ptrdiff_t min_offset() const noexcept;
};

/// Flattens `count` × `type` (element i at i × extent). Supports predefined types and the
/// contiguous, vector, hvector, indexed, hindexed, indexed_block, hindexed_block, struct, dup
/// and resized constructors. Throws std::invalid_argument naming the constructor otherwise.
flat_type flatten(MPI_Datatype type, int count);

/// N when `signature` is N copies of `element` (a predefined type), -1 otherwise. An element
/// of MPI_BYTE takes any signature as its bytes (N = size).
long long signature_multiple(const flat_type& t, MPI_Datatype element);

/// Codes for the predefined types that may travel to the target as codes (MPIX_Am's target
/// datatypes): 1..n, 0 for a type that has none (derived, pair types, or unknown).
std::uint8_t type_code(MPI_Datatype type) noexcept;
/// The type of a code from `type_code`; MPI_DATATYPE_NULL for 0 or an unknown code.
MPI_Datatype type_of_code(std::uint8_t code) noexcept;
/// Bytes of one element of a coded type (0 for an unknown code).
std::size_t code_bytes(std::uint8_t code) noexcept;
/// A printable name of a datatype for error messages ("MPI_INT", or "derived datatype").
std::string type_name(MPI_Datatype type);

}  // namespace am::mpix
