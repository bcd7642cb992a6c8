// SPDX-License-Identifier: MIT
// The mpi transport's messages on its private communicator `_comm`.
//
// Messages (received by pre-posted MPI_ANY_SOURCE/MPI_ANY_TAG receives of `slot_bytes`, so
// messages from one peer are matched, and handled, in the order they were sent):
//   tag_msg + lane      a core message of at most `slot_bytes` (eager, into a posted slot)
//   tag_big + lane      announces a larger core message of `u64` bytes that follows on
//                       `_data` (a second duplicate, so no wildcard receive can take it)
//   tag_credit          `u32 lane, u32 count`: credits returned by the receiver
//   tag_fail            the reason the job fails; the receiver stops with it
// Credits: `credits_per_peer` core messages per (peer, lane) may be unconsumed at a receiver;
// the receiver returns them in batches of half. Requests and replies have separate credits,
// so replies always drain (the core's deadlock-freedom argument carries over).
#pragma once

#include "../transport.hpp"

#include <cstddef>
#include <cstdint>

namespace am::transport::mpi {

enum : int { tag_msg = 0, tag_big = 2, tag_credit = 4, tag_fail = 5 };
inline constexpr std::size_t slot_bytes = 8192 + 256;  // a core message up to 8 KiB of payload
inline constexpr std::uint32_t credits_per_peer = 64;

}  // namespace am::transport::mpi
