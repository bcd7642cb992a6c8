// SPDX-License-Identifier: MIT
#include <am/stats.hpp>

#include <sstream>

namespace am {

std::string stats::to_string() const {
    std::ostringstream os;
    os << "am stats rank " << rank << ": sent " << messages_sent << " msgs / " << bytes_sent
       << " B (replies " << replies_sent << "), received " << messages_received << " msgs / "
       << bytes_received << " B, credit stalls " << credit_stalls << ", queued from handlers "
       << queued_from_handlers << ", bad headers " << bad_headers << '\n';
    for (std::size_t i = 0; i < handlers.size(); ++i) {
        const handler_stats& h = handlers[i];
        // The library's own handlers appear only when they carried traffic.
        if (i < library_handlers && h.sent == 0 && h.received == 0) continue;
        os << "  [" << i << "] " << h.name << ": sent " << h.sent << " / " << h.sent_bytes
           << " B, received " << h.received << " / " << h.received_bytes << " B\n";
    }
    return os.str();
}

}  // namespace am
