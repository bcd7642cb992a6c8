// SPDX-License-Identifier: MIT
// The datatype flattening of MPIX_Am (src/mpix/datatype.cpp) against MPI itself: for each
// datatype, gathering the blocks of `count` x type from a buffer must give exactly what
// MPI_Pack gives, the size and extent must be MPI's, and the signature rule must accept the
// right target type with the right N and refuse the others. MPI only (no am job). One process.
#include "mpix/datatype.hpp"

#include <mpi.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

int failures = 0;

void check(bool ok, const std::string& what) {
    if (!ok) {
        std::printf("FAILED: %s\n", what.c_str());
        ++failures;
    }
}

std::vector<unsigned char> gather(const am::mpix::flat_type& f, const unsigned char* base) {
    std::vector<unsigned char> out;
    for (const auto& b : f.blocks)
        out.insert(out.end(), base + b.offset, base + b.offset + b.bytes);
    return out;
}

// `count` x `type` at buffer + 256 (room for negative lower bounds), checked against MPI.
void expect(const char* name, MPI_Datatype type, int count, MPI_Datatype element, long long n) {
    std::vector<unsigned char> buffer(1 << 16);
    for (std::size_t i = 0; i < buffer.size(); ++i)
        buffer[i] = static_cast<unsigned char>(i * 7 + 3);
    const unsigned char* base = buffer.data() + 256;
    const am::mpix::flat_type f = am::mpix::flatten(type, count);
    int packed_size = 0;
    MPI_Pack_size(count, type, MPI_COMM_SELF, &packed_size);
    std::vector<unsigned char> packed(static_cast<std::size_t>(packed_size) + 1);
    int position = 0;
    MPI_Pack(base, count, type, packed.data(), packed_size, &position, MPI_COMM_SELF);
    packed.resize(static_cast<std::size_t>(position));
    check(gather(f, base) == packed, std::string(name) + ": blocks differ from MPI_Pack");
    int size = 0;
    MPI_Type_size(type, &size);
    check(f.size == static_cast<std::size_t>(size) * static_cast<std::size_t>(count),
          std::string(name) + ": size");
    MPI_Aint lb = 0, extent = 0;
    MPI_Type_get_extent(type, &lb, &extent);
    check(f.extent == extent * count, std::string(name) + ": extent");
    const long long got = am::mpix::signature_multiple(f, element);
    check(got == n,
          std::string(name) + ": N = " + std::to_string(got) + ", expected " + std::to_string(n));
}

void committed(MPI_Datatype* t) {
    MPI_Type_commit(t);
}

void test_basic() {
    expect("int", MPI_INT, 5, MPI_INT, 5);
    expect("int as double", MPI_INT, 5, MPI_DOUBLE, -1);
    expect("double as byte", MPI_DOUBLE, 3, MPI_BYTE, 24);
    expect("zero ints", MPI_INT, 0, MPI_INT, 0);
}

void test_vectors() {
    MPI_Datatype v, hv, c;
    MPI_Type_vector(4, 2, 5, MPI_INT, &v);
    committed(&v);
    expect("vector", v, 3, MPI_INT, 24);
    MPI_Type_create_hvector(3, 1, 24, MPI_DOUBLE, &hv);
    committed(&hv);
    expect("hvector", hv, 2, MPI_DOUBLE, 6);
    expect("hvector as int", hv, 2, MPI_INT, -1);
    MPI_Type_contiguous(3, v, &c);  // nested: contiguous of vectors
    committed(&c);
    expect("contiguous of vector", c, 2, MPI_INT, 48);
    MPI_Type_free(&c);
    MPI_Type_free(&hv);
    MPI_Type_free(&v);
}

void test_indexed() {
    MPI_Datatype ix, hix, ib, hib;
    const int lens[3] = {2, 1, 3};
    const int disps[3] = {5, 0, 9};  // not increasing: type-map order is not address order
    MPI_Type_indexed(3, lens, disps, MPI_SHORT, &ix);
    committed(&ix);
    expect("indexed", ix, 2, MPI_SHORT, 12);
    const MPI_Aint hdisps[3] = {16, 0, 40};
    MPI_Type_create_hindexed(3, lens, hdisps, MPI_FLOAT, &hix);
    committed(&hix);
    expect("hindexed", hix, 3, MPI_FLOAT, 18);
    const int bdisps[2] = {3, 0};
    MPI_Type_create_indexed_block(2, 2, bdisps, MPI_INT, &ib);
    committed(&ib);
    expect("indexed_block", ib, 2, MPI_INT, 8);
    const MPI_Aint hbdisps[2] = {8, 32};
    MPI_Type_create_hindexed_block(2, 3, hbdisps, MPI_CHAR, &hib);
    committed(&hib);
    expect("hindexed_block", hib, 1, MPI_CHAR, 6);
    MPI_Type_free(&hib);
    MPI_Type_free(&ib);
    MPI_Type_free(&hix);
    MPI_Type_free(&ix);
}

void test_structs() {
    MPI_Datatype s, mixed, r, neg, d;
    const int lens[2] = {1, 2};
    const MPI_Aint disps[2] = {0, 8};
    const MPI_Datatype ints[2] = {MPI_INT, MPI_INT};
    MPI_Type_create_struct(2, lens, disps, ints, &s);
    committed(&s);
    expect("struct of ints", s, 4, MPI_INT, 12);
    const MPI_Datatype types[2] = {MPI_INT, MPI_DOUBLE};
    MPI_Type_create_struct(2, lens, disps, types, &mixed);
    committed(&mixed);
    expect("struct int+double as int", mixed, 1, MPI_INT, -1);
    expect("struct int+double as byte", mixed, 2, MPI_BYTE, 40);
    MPI_Type_create_resized(s, 0, 32, &r);  // extent 32: gaps between elements
    committed(&r);
    expect("resized struct", r, 3, MPI_INT, 9);
    const MPI_Aint negdisp[2] = {-8, 4};  // negative lower bound
    MPI_Type_create_struct(2, lens, negdisp, ints, &neg);
    committed(&neg);
    expect("negative lb", neg, 2, MPI_INT, 6);
    check(am::mpix::flatten(neg, 1).min_offset() == -8, "negative lb: min_offset");
    MPI_Type_dup(s, &d);
    committed(&d);
    expect("dup", d, 2, MPI_INT, 6);
    MPI_Type_free(&d);
    MPI_Type_free(&neg);
    MPI_Type_free(&r);
    MPI_Type_free(&mixed);
    MPI_Type_free(&s);
}

void test_codes() {
    const MPI_Datatype types[] = {MPI_INT,
                                  MPI_DOUBLE,
                                  MPI_CHAR,
                                  MPI_BYTE,
                                  MPI_INT64_T,
                                  MPI_UNSIGNED_LONG_LONG,
                                  MPI_C_DOUBLE_COMPLEX};
    for (MPI_Datatype t : types) {
        const std::uint8_t code = am::mpix::type_code(t);
        check(code != 0, "a predefined type has a code");
        check(am::mpix::type_of_code(code) == t, "type_of_code(type_code(t)) == t");
        int size = 0;
        MPI_Type_size(t, &size);
        check(am::mpix::code_bytes(code) == static_cast<std::size_t>(size), "code_bytes");
    }
    MPI_Datatype v;
    MPI_Type_contiguous(2, MPI_INT, &v);
    committed(&v);
    check(am::mpix::type_code(v) == 0, "a derived type has no code");
    check(am::mpix::type_code(MPI_2INT) == 0, "a pair type has no code");
    MPI_Type_free(&v);
    check(am::mpix::type_of_code(0) == MPI_DATATYPE_NULL, "code 0");
    check(am::mpix::type_of_code(255) == MPI_DATATYPE_NULL, "code 255");
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    test_basic();
    test_vectors();
    test_indexed();
    test_structs();
    test_codes();
    if (failures == 0) std::printf("mpix_datatype: ok\n");
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
