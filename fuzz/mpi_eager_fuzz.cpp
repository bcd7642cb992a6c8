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
// the buffer, the kind and lane the tag says, the fixed-size messages of exactly their size
// and their fields in range) and that it accepts every core message and failure reason that
// fits a slot.
#include "fuzz_check.hpp"
#include "transport/mpi/eager_format.hpp"

#include <climits>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>

namespace mpi = am::transport::mpi;

namespace {

void check_accepted(int tag, const std::byte* msg, std::size_t len, std::uint64_t largest,
                    const mpi::eager_message& m) {
    FUZZ_CHECK(len <= mpi::slot_bytes);
    switch (m.kind) {
        case mpi::eager_kind::message:
        case mpi::eager_kind::fail: {
            const bool is_message = m.kind == mpi::eager_kind::message;
            FUZZ_CHECK(is_message ? (tag == mpi::tag_msg || tag == mpi::tag_msg + 1)
                                  : tag == mpi::tag_fail);
            if (is_message) FUZZ_CHECK(m.lane == static_cast<unsigned>(tag - mpi::tag_msg));
            FUZZ_CHECK(m.bytes.data() == msg && m.bytes.size() == len);
            // The core (or the failure reason's reader) reads all of it.
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
            FUZZ_CHECK(m.big_bytes == n && n > mpi::slot_bytes && n <= largest);
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
    // Core messages and failure reasons that fit a slot are never refused.
    const bool always_valid =
        tag == mpi::tag_msg || tag == mpi::tag_msg + 1 || tag == mpi::tag_fail;
    FUZZ_CHECK(!(always_valid && len <= mpi::slot_bytes));
    return 0;
}
