// SPDX-License-Identifier: MIT
// Test support: the one hang guard of the test suite (tests/tam, tests/typed, tests/window).
#pragma once

#include <unistd.h>

#include <algorithm>
#include <csignal>
#include <cstddef>
#include <cstring>
#include <string>
#include <string_view>

namespace am_test {

/// Ends the process (status 124, as timeout(1)) with a message naming `what` when it is still
/// alive `seconds` after construction: a job that hangs (a flush that never completes, a run
/// that never ends) fails at once, saying what hung, instead of at CTest's timeout. Not a
/// performance bound.
///
/// An alarm, not a thread: shm ranks are forked, and a fork while another thread holds a lock
/// (the sanitizers' allocator's, say) deadlocks the child; a pending alarm is not inherited by
/// the children, so it watches this process only: the ranks (threads transport), the forking
/// parent (shm) or this process's rank (mpi). The message goes to stdout and stderr, as tests
/// that check a failure capture stderr. One watchdog per process at a time: make it in the test
/// body, not in ranks.
class watchdog {
  public:
    watchdog(std::string_view what, unsigned seconds) {
        const std::string text = "am_test watchdog: TIMEOUT after " + std::to_string(seconds) +
                                 " s: " + std::string(what) + "\n";
        _len = std::min(text.size(), sizeof(_text));
        std::memcpy(_text, text.data(), _len);
        std::signal(SIGALRM, &watchdog::on_alarm);
        alarm(seconds);
    }
    ~watchdog() {
        alarm(0);
        std::signal(SIGALRM, SIG_DFL);
    }
    watchdog(const watchdog&) = delete;
    watchdog& operator=(const watchdog&) = delete;

  private:
    static void on_alarm(int) {
        (void)!write(1, _text, _len);
        (void)!write(2, _text, _len);
        _exit(124);
    }
    static inline char _text[256] = {};
    static inline std::size_t _len = 0;
};

}  // namespace am_test
