// SPDX-License-Identifier: MIT
// context_impl: the optional progress thread.
#include "context_common.hpp"

#include "../util/backoff.hpp"

namespace am::detail {

void context_impl::start_progress_thread() {
    // Two threads per rank from now on: spin only if twice the ranks fit the cores.
    if (_tp.spin_limit() != 0) _tp.set_spin_limit(util::spin_rounds_for(2 * _size));
    _locking = true;
    _fast = false;
    update_slow_path();
    _progress = std::thread([this] { progress_loop(); });
}

void context_impl::stop_progress_thread() noexcept {
    if (!_progress.joinable()) return;
    _stop.store(true, std::memory_order_release);
    _progress.join();
}

void context_impl::progress_loop() noexcept {
    t_progress_of = this;
    transport::set_thread_rank(_rank);  // an exit() here names the rank
    unsigned backoff = 0;
    constexpr unsigned cap = util::yield_rounds + 40;  // sleep at most ~50 µs between polls
    while (!_stop.load(std::memory_order_acquire)) {
        try {
            if (poll() != 0) {
                backoff = 0;
            } else {
                util::backoff(backoff);
                if (backoff > cap) backoff = cap;
            }
        } catch (const std::exception&) {
            return;  // poll() has failed the job
        }
    }
}

}  // namespace am::detail
