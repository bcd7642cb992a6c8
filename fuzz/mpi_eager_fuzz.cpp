// SPDX-License-Identifier: MIT
// Fuzz target: the mpi transport's check of an arrived eager message,
// am::transport::mpi::parse_eager (src/transport/mpi/eager_format.hpp). Input:
//
//   byte 0      the MPI tag: b % 8 (0-5 are the protocol's, 6 and 7 are not)
//   4 bytes     `largest` (the largest message of the job): u32
//   the rest    the received bytes (may exceed a slot: run with -max_len above slot_bytes)
//
// The bytes are a heap block of exactly their size (AddressSanitizer catches reads outside
// it). The target asserts what parse_eager promises for an accepted message (the spans inside
// the buffer, the kind and lane the tag says, a pack's records walked by record_at in bounds,
// `count` of them, each header's reserved word zero, together covering the message; the
// fixed-size messages of exactly their size and their fields in range), that it accepts every
// failure reason that fits a slot, and that a pack re-built from the records it accepted is
// accepted again with the same records.
#include "fuzz_check.hpp"
#include "transport/mpi/eager_format.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <vector>

namespace mpi = am::transport::mpi;

namespace {

// Walks an accepted pack as the transport does, reading every byte of every record (the core
// reads all of it), and re-packs the records: the copy must parse to the same records.
void check_pack_records(const std::byte* msg, std::size_t len, const mpi::eager_message& m) {
    std::vector<std::byte> again;
    std::uint32_t n = 0;
    for (std::size_t at = 0; at < len; ++n) {
        FUZZ_CHECK(at % 8 == 0 && at + mpi::record_header <= len);
        std::uint32_t w[2];
        std::memcpy(w, msg + at, sizeof w);
        FUZZ_CHECK(w[1] == 0);
        const mpi::pack_record r = mpi::record_at(m.bytes, at);
        FUZZ_CHECK(r.message.data() == msg + at + mpi::record_header);
        FUZZ_CHECK(r.message.size() == w[0] && r.message.data() + w[0] <= msg + len);
        FUZZ_CHECK(r.next > at && r.next <= len);
        const std::size_t start = again.size();
        again.resize(start + mpi::record_header + mpi::padded(w[0]), std::byte{0});
        std::memcpy(again.data() + start, w, sizeof w);
        if (w[0] != 0)
            std::memcpy(again.data() + start + mpi::record_header, r.message.data(), w[0]);
        at = r.next;
    }
    FUZZ_CHECK(n == m.count && n >= 1);
    if (again.size() > mpi::slot_bytes) again.resize(len);  // only the last padding may exceed
    mpi::eager_message m2;
    FUZZ_CHECK(mpi::parse_eager(mpi::tag_msg, again.data(), again.size(), 0, m2) == nullptr);
    FUZZ_CHECK(m2.count == m.count);
}

void check_accepted(int tag, const std::byte* msg, std::size_t len, std::uint64_t largest,
                    const mpi::eager_message& m) {
    FUZZ_CHECK(len <= mpi::slot_bytes);
    switch (m.kind) {
        case mpi::eager_kind::message: {
            FUZZ_CHECK(tag == mpi::tag_msg || tag == mpi::tag_msg + 1);
            FUZZ_CHECK(m.lane == static_cast<unsigned>(tag - mpi::tag_msg));
            FUZZ_CHECK(m.bytes.data() == msg && m.bytes.size() == len && len != 0);
            check_pack_records(msg, len, m);
            return;
        }
        case mpi::eager_kind::fail: {
            FUZZ_CHECK(tag == mpi::tag_fail);
            FUZZ_CHECK(m.bytes.data() == msg && m.bytes.size() == len);
            // The failure reason's reader reads all of it.
            auto copy = std::make_unique<std::byte[]>(len);
            if (len != 0) std::memcpy(copy.get(), m.bytes.data(), m.bytes.size());
            return;
        }
        case mpi::eager_kind::big: {
            FUZZ_CHECK(tag == mpi::tag_big || tag == mpi::tag_big + 1);
            FUZZ_CHECK(m.lane == static_cast<unsigned>(tag - mpi::tag_big));
            std::uint64_t n = 0;
            FUZZ_CHECK(len == sizeof n);
            std::memcpy(&n, msg, sizeof n);
            FUZZ_CHECK(m.big_bytes == n && n > mpi::max_eager && n <= largest);
            FUZZ_CHECK(n <= static_cast<std::uint64_t>(INT_MAX));  // one MPI_Irecv's count
            FUZZ_CHECK(m.bytes.empty());
            return;
        }
        case mpi::eager_kind::credit: {
            FUZZ_CHECK(tag == mpi::tag_credit);
            std::uint32_t w[2];
            FUZZ_CHECK(len == sizeof w);
            std::memcpy(w, msg, sizeof w);
            FUZZ_CHECK(m.lane == w[0] && m.lane < am::transport::num_lanes);
            FUZZ_CHECK(m.credits == w[1] && m.credits >= 1 && m.credits <= mpi::credits_per_peer);
            FUZZ_CHECK(m.bytes.empty());
            return;
        }
    }
    FUZZ_FAIL("accepted a message of no known kind");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 5) return 0;
    const int tag = data[0] % 8;
    std::uint32_t largest32 = 0;
    std::memcpy(&largest32, data + 1, sizeof largest32);
    const std::uint64_t largest = largest32;
    const std::size_t len = size - 5;
    auto msg = std::make_unique<std::byte[]>(len);
    if (len != 0) std::memcpy(msg.get(), data + 5, len);

    mpi::eager_message m;
    const char* why = mpi::parse_eager(tag, msg.get(), len, largest, m);
    if (why == nullptr) {
        check_accepted(tag, msg.get(), len, largest, m);
        return 0;
    }
    FUZZ_CHECK(why[0] != '\0');
    // Failure reasons that fit a slot are never refused.
    FUZZ_CHECK(!(tag == mpi::tag_fail && len <= mpi::slot_bytes));
    return 0;
}
