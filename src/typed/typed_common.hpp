// SPDX-License-Identifier: MIT
// What the typed layer's sources (typed_layer.cpp, typed_epoch.cpp) share.
#pragma once

#include "typed_layer.hpp"

#include <atomic>
#include <chrono>
#include <cstdint>

namespace am::detail::typed_internal {

// The batch a thread is handling and the tag of the sends its handler makes. Only used when
// several threads of a rank may send (thread_multiple, progress thread); otherwise the rank's
// `typed_hot::tag` says the same without a thread-local access.
struct batch_frame {
    const typed_layer* layer = nullptr;
    std::uint64_t tag = no_epoch_tag;
};
inline thread_local batch_frame t_batch [[gnu::tls_model("initial-exec")]];

constexpr std::uint64_t make_tag(std::uint64_t epoch, unsigned level) noexcept {
    return (epoch << 8) | level;
}

using counter = std::atomic<std::uint64_t>;

// Counts updated only by the rank's thread (no progress thread, no thread_multiple) need no
// locked instruction: a relaxed load and store, as the core's counters do.
inline void add(counter& c, std::uint64_t n, bool shared,
                std::memory_order order = std::memory_order_relaxed) noexcept {
    if (shared) {
        c.fetch_add(n, order);
    } else {
        c.store(c.load(std::memory_order_relaxed) + n, order == std::memory_order_relaxed
                                                           ? std::memory_order_relaxed
                                                           : std::memory_order_release);
    }
}

inline double seconds_since(std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

}  // namespace am::detail::typed_internal
