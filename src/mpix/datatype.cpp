// SPDX-License-Identifier: MIT
// Flattening MPI datatypes through MPI_Type_get_envelope / MPI_Type_get_contents.
#include "datatype.hpp"

#include <algorithm>
#include <array>
#include <stdexcept>

namespace am::mpix {
namespace {

// The decoded constructor of a derived datatype; frees the datatypes it was given.
struct contents {
    int combiner = MPI_COMBINER_NAMED;
    std::vector<int> ints;
    std::vector<MPI_Aint> aints;
    std::vector<MPI_Datatype> types;

    explicit contents(MPI_Datatype t) {
        int ni = 0, na = 0, nt = 0;
        MPI_Type_get_envelope(t, &ni, &na, &nt, &combiner);
        if (combiner == MPI_COMBINER_NAMED) return;
        ints.resize(static_cast<std::size_t>(ni));
        aints.resize(static_cast<std::size_t>(na));
        types.resize(static_cast<std::size_t>(nt));
        MPI_Type_get_contents(t, ni, na, nt, ints.data(), aints.data(), types.data());
    }
    ~contents() {
        for (MPI_Datatype& t : types) {
            int ni = 0, na = 0, nt = 0, c = 0;
            MPI_Type_get_envelope(t, &ni, &na, &nt, &c);
            if (c != MPI_COMBINER_NAMED) MPI_Type_free(&t);
        }
    }
    contents(const contents&) = delete;
    contents& operator=(const contents&) = delete;
};

std::ptrdiff_t extent_of(MPI_Datatype t) {
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(t, &lb, &extent);
    return extent;
}

std::size_t at(int v) {
    if (v < 0) throw std::invalid_argument("a negative count in a datatype constructor");
    return static_cast<std::size_t>(v);
}

flat_type flatten_one(MPI_Datatype t);

// Whether consecutive elements of `sub` (extent `sub_extent`) form one block of one basic type:
// then n of them are one block and one run (the common case, flattened in O(1)).
bool dense(const flat_type& sub, std::ptrdiff_t sub_extent) noexcept {
    return sub.blocks.size() == 1 && sub.blocks[0].offset == 0 &&
           static_cast<std::ptrdiff_t>(sub.blocks[0].bytes) == sub_extent &&
           sub.signature.size() == 1;
}

// `blocklen` elements of `sub` at `offset` bytes.
void append_block(flat_type& out, const flat_type& sub, std::ptrdiff_t sub_extent,
                  std::size_t blocklen, std::ptrdiff_t offset) {
    if (dense(sub, sub_extent)) {
        out.add_block(offset, sub.blocks[0].bytes * blocklen);
        out.add_run(sub.signature[0].type, sub.signature[0].count * blocklen);
        return;
    }
    for (std::size_t j = 0; j < blocklen; ++j) {
        out.append(sub, offset + static_cast<std::ptrdiff_t>(j) * sub_extent);
    }
}

flat_type flatten_derived(const contents& c) {
    flat_type out;
    const flat_type sub = flatten_one(c.types.at(0));
    const std::ptrdiff_t ext = extent_of(c.types[0]);
    const auto& in = c.ints;
    switch (c.combiner) {
        case MPI_COMBINER_DUP:
        case MPI_COMBINER_RESIZED:
            return sub;
        case MPI_COMBINER_CONTIGUOUS:
            append_block(out, sub, ext, at(in.at(0)), 0);
            return out;
        case MPI_COMBINER_VECTOR:
        case MPI_COMBINER_HVECTOR: {
            const std::ptrdiff_t stride = c.combiner == MPI_COMBINER_VECTOR
                                              ? static_cast<std::ptrdiff_t>(in.at(2)) * ext
                                              : c.aints.at(0);
            for (std::size_t i = 0; i < at(in.at(0)); ++i) {
                append_block(out, sub, ext, at(in.at(1)), static_cast<std::ptrdiff_t>(i) * stride);
            }
            return out;
        }
        case MPI_COMBINER_INDEXED:
        case MPI_COMBINER_HINDEXED: {
            const std::size_t n = at(in.at(0));
            for (std::size_t i = 0; i < n; ++i) {
                const std::ptrdiff_t d = c.combiner == MPI_COMBINER_INDEXED
                                             ? static_cast<std::ptrdiff_t>(in.at(1 + n + i)) * ext
                                             : c.aints.at(i);
                append_block(out, sub, ext, at(in.at(1 + i)), d);
            }
            return out;
        }
        case MPI_COMBINER_INDEXED_BLOCK:
        case MPI_COMBINER_HINDEXED_BLOCK: {
            const std::size_t n = at(in.at(0));
            for (std::size_t i = 0; i < n; ++i) {
                const std::ptrdiff_t d = c.combiner == MPI_COMBINER_INDEXED_BLOCK
                                             ? static_cast<std::ptrdiff_t>(in.at(2 + i)) * ext
                                             : c.aints.at(i);
                append_block(out, sub, ext, at(in.at(1)), d);
            }
            return out;
        }
        default:
            throw std::invalid_argument("datatype constructor " + std::to_string(c.combiner) +
                                        " is not supported (contiguous, vector, hvector, "
                                        "indexed, hindexed, indexed_block, hindexed_block, "
                                        "struct, dup, resized are)");
    }
}

flat_type flatten_struct(const contents& c) {
    flat_type out;
    const std::size_t n = at(c.ints.at(0));
    for (std::size_t i = 0; i < n; ++i) {
        const flat_type sub = flatten_one(c.types.at(i));
        append_block(out, sub, extent_of(c.types[i]), at(c.ints.at(1 + i)), c.aints.at(i));
    }
    return out;
}

// One element of `t`: blocks and signature (extent and size are set by `flatten`).
flat_type flatten_one(MPI_Datatype t) {
    const contents c(t);
    if (c.combiner == MPI_COMBINER_NAMED) {
        int size = 0;
        MPI_Type_size(t, &size);
        flat_type out;
        out.add_block(0, static_cast<std::size_t>(size));
        out.add_run(t, 1);
        return out;
    }
    if (c.combiner == MPI_COMBINER_STRUCT) return flatten_struct(c);
    return flatten_derived(c);
}

// The predefined types MPIX_Am's target datatypes may be, in a fixed order (their codes are
// their positions + 1, the same in every process of the program), with their sizes. Built at
// run time (the handles are not constants in every MPI), on first use by the program's thread,
// so that user functions that run on the progress thread need no MPI call to decode a code.
struct coded_type {
    MPI_Datatype type;
    std::size_t bytes;
};

std::vector<coded_type> make_code_table() {
    const std::array<MPI_Datatype, 30> types = {MPI_CHAR,
                                                MPI_SIGNED_CHAR,
                                                MPI_UNSIGNED_CHAR,
                                                MPI_BYTE,
                                                MPI_WCHAR,
                                                MPI_SHORT,
                                                MPI_UNSIGNED_SHORT,
                                                MPI_INT,
                                                MPI_UNSIGNED,
                                                MPI_LONG,
                                                MPI_UNSIGNED_LONG,
                                                MPI_LONG_LONG,
                                                MPI_UNSIGNED_LONG_LONG,
                                                MPI_FLOAT,
                                                MPI_DOUBLE,
                                                MPI_LONG_DOUBLE,
                                                MPI_C_BOOL,
                                                MPI_INT8_T,
                                                MPI_INT16_T,
                                                MPI_INT32_T,
                                                MPI_INT64_T,
                                                MPI_UINT8_T,
                                                MPI_UINT16_T,
                                                MPI_UINT32_T,
                                                MPI_UINT64_T,
                                                MPI_C_FLOAT_COMPLEX,
                                                MPI_C_DOUBLE_COMPLEX,
                                                MPI_AINT,
                                                MPI_OFFSET,
                                                MPI_COUNT};
    std::vector<coded_type> table;
    for (MPI_Datatype t : types) {
        int size = 0;
        MPI_Type_size(t, &size);
        table.push_back({t, static_cast<std::size_t>(size)});
    }
    return table;
}

const std::vector<coded_type>& code_table() {
    static const std::vector<coded_type> table = make_code_table();
    return table;
}

}  // namespace

void flat_type::add_block(std::ptrdiff_t offset, std::size_t bytes) {
    if (bytes == 0) return;
    if (!blocks.empty()) {
        block& last = blocks.back();
        if (last.offset + static_cast<std::ptrdiff_t>(last.bytes) == offset) {
            last.bytes += bytes;
            return;
        }
    }
    blocks.push_back({offset, bytes});
}

void flat_type::add_run(MPI_Datatype type, std::size_t count) {
    if (count == 0) return;
    if (!signature.empty() && signature.back().type == type) {
        signature.back().count += count;
        return;
    }
    signature.push_back({type, count});
}

void flat_type::append(const flat_type& other, std::ptrdiff_t shift) {
    for (const block& b : other.blocks) add_block(b.offset + shift, b.bytes);
    for (const sig_run& r : other.signature) add_run(r.type, r.count);
}

std::ptrdiff_t flat_type::min_offset() const noexcept {
    if (blocks.empty()) return 0;
    std::ptrdiff_t m = blocks.front().offset;
    for (const block& b : blocks) m = std::min(m, b.offset);
    return m;
}

flat_type flatten(MPI_Datatype type, int count) {
    if (count < 0) throw std::invalid_argument("negative count " + std::to_string(count));
    const flat_type one = flatten_one(type);
    const std::ptrdiff_t ext = extent_of(type);
    flat_type out;
    append_block(out, one, ext, static_cast<std::size_t>(count), 0);
    int size = 0;
    MPI_Type_size(type, &size);
    out.extent = ext * count;
    out.size = static_cast<std::size_t>(size) * static_cast<std::size_t>(count);
    return out;
}

long long signature_multiple(const flat_type& t, MPI_Datatype element) {
    if (element == MPI_BYTE) return static_cast<long long>(t.size);
    long long n = 0;
    for (const sig_run& r : t.signature) {
        if (r.type != element) return -1;
        n += static_cast<long long>(r.count);
    }
    return n;
}

std::uint8_t type_code(MPI_Datatype type) noexcept {
    const auto& table = code_table();
    for (std::size_t i = 0; i < table.size(); ++i) {
        if (table[i].type == type) return static_cast<std::uint8_t>(i + 1);
    }
    return 0;
}

MPI_Datatype type_of_code(std::uint8_t code) noexcept {
    const auto& table = code_table();
    if (code == 0 || code > table.size()) return MPI_DATATYPE_NULL;
    return table[code - 1u].type;
}

std::size_t code_bytes(std::uint8_t code) noexcept {
    const auto& table = code_table();
    if (code == 0 || code > table.size()) return 0;
    return table[code - 1u].bytes;
}

std::string type_name(MPI_Datatype type) {
    if (type == MPI_DATATYPE_NULL) return "MPI_DATATYPE_NULL";
    std::array<char, MPI_MAX_OBJECT_NAME> name{};
    int len = 0;
    MPI_Type_get_name(type, name.data(), &len);
    if (len > 0) return std::string(name.data(), static_cast<std::size_t>(len));
    return "a derived datatype";
}

}  // namespace am::mpix
