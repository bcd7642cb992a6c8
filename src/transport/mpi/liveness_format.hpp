// SPDX-License-Identifier: MIT
// The heartbeat datagrams of the mpi transport's liveness watchdog (liveness.cpp) and the pure
// check of one that arrived. No MPI, no socket: unit-tested (tests/mpi/liveness_format_test.cpp).
//
// A datagram is 32 bytes, native byte order (the ranks of a job run one build):
//   u64 job      the job's random id, agreed at set-up: datagrams of other jobs (an earlier
//                am::run of the same processes, another program) are ignored
//   u32 kind     beat (I am alive), bye (I finished the job: stop expecting me), lost (rank
//                `subject` stopped answering me)
//   u32 from     the sender's rank
//   u64 seq      the sender's sequence number (diagnoses only)
//   u32 subject  lost: the rank lost; otherwise zero
//   u32 reserved zero
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>

namespace am::transport::mpi {

enum class beat_kind : std::uint32_t { beat = 1, bye = 2, lost = 3 };

struct beat_datagram {
    std::uint64_t job = 0;
    std::uint32_t kind = 0;
    std::uint32_t from = 0;
    std::uint64_t seq = 0;
    std::uint32_t subject = 0;
    std::uint32_t reserved = 0;
};
static_assert(sizeof(beat_datagram) == 32);

/// A checked datagram: who sent what.
struct beat_message {
    beat_kind kind = beat_kind::beat;
    int from = 0;
    int subject = 0;  // lost: the rank lost
};

/// The datagram's bytes as `make_beat` fills them.
inline beat_datagram make_beat(std::uint64_t job, beat_kind kind, int from, std::uint64_t seq,
                               int subject = 0) noexcept {
    return beat_datagram{job, static_cast<std::uint32_t>(kind),    static_cast<std::uint32_t>(from),
                         seq, static_cast<std::uint32_t>(subject), 0};
}

/// What `bytes` says, or nothing when it is not a datagram of this job for rank `me` of
/// `size`: a wrong length, another job's id, an unknown kind, a sender out of range or this
/// rank itself, a lost rank out of range, non-zero reserved words.
inline std::optional<beat_message> parse_beat(std::span<const std::byte> bytes, std::uint64_t job,
                                              int size, int me) noexcept {
    if (bytes.size() != sizeof(beat_datagram)) return std::nullopt;
    beat_datagram d;
    std::memcpy(&d, bytes.data(), sizeof d);
    const auto ranks = static_cast<std::uint32_t>(size);
    if (d.job != job || d.reserved != 0 || d.from >= ranks) return std::nullopt;
    if (d.from == static_cast<std::uint32_t>(me)) return std::nullopt;
    beat_message m{beat_kind::beat, static_cast<int>(d.from), 0};
    switch (d.kind) {
        case static_cast<std::uint32_t>(beat_kind::beat):
        case static_cast<std::uint32_t>(beat_kind::bye):
            if (d.subject != 0) return std::nullopt;
            m.kind = static_cast<beat_kind>(d.kind);
            return m;
        case static_cast<std::uint32_t>(beat_kind::lost):
            if (d.subject >= ranks) return std::nullopt;
            m.kind = beat_kind::lost;
            m.subject = static_cast<int>(d.subject);
            return m;
        default:
            return std::nullopt;
    }
}

}  // namespace am::transport::mpi
