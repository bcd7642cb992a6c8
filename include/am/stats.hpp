// SPDX-License-Identifier: MIT
/// @file
/// Per-rank counters, returned by `context::stats()` and printed at exit with `AM_STATS=1`.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace am {

/// Counters of one handler on one rank. Bytes count payload bytes (not headers or arguments).
struct handler_stats {
    std::string name;              ///< the handler's function or callable type
    std::uint64_t sent = 0;        ///< messages naming this handler sent by this rank
    std::uint64_t sent_bytes = 0;  ///< their payload bytes
    std::uint64_t received = 0;    ///< messages naming this handler run on this rank
    std::uint64_t received_bytes = 0;
};

/// A snapshot of one rank's counters. Taking it is safe from the rank's own thread at any time
/// outside a handler; values may lag by the messages being handled by a progress thread.
struct stats {
    int rank = 0;
    std::uint64_t messages_sent = 0;
    std::uint64_t bytes_sent = 0;
    std::uint64_t messages_received = 0;
    std::uint64_t bytes_received = 0;
    std::uint64_t replies_sent = 0;          ///< of messages_sent, on the reply lane
    std::uint64_t credit_stalls = 0;         ///< sends that found their ring full
    std::uint64_t queued_from_handlers = 0;  ///< sends from handlers parked for later progress
    std::uint64_t bad_headers = 0;           ///< incoming messages rejected by validation
    /// By handler index. The first `library_handlers` entries are the library's own (put/get
    /// and send/receive: "am::rma::…", "am::msg::…"); the program's handlers follow in the
    /// order it registered them.
    std::vector<handler_stats> handlers;
    std::size_t library_handlers = 0;

    /// Multi-line human-readable report (what `AM_STATS=1` prints).
    [[nodiscard]] std::string to_string() const;
};

}  // namespace am
