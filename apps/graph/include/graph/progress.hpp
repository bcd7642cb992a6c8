// SPDX-License-Identifier: MIT
/// @file
/// A progress line for long runs, shown on a terminal only:
///     "<phase> <i>/<n>  elapsed 12.3 s  remaining ~40 s"
/// redrawn in place ('\r') at most 10 times a second from the steps and every 0.25 s from a
/// ticker (so the elapsed time moves during one long step), and erased at the end. Used by
/// am-graph500 (apps/graph/am_graph500.cpp) at SCALE >= 22 or with --progress.
#pragma once

#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <thread>
#include <utility>

namespace am::graph {

/// "3.4 s" below a minute, "4 min 05 s" below an hour, "1 h 02 min" beyond.
inline std::string format_duration(double seconds) {
    char buf[48];
    if (!(seconds >= 0)) seconds = 0;
    if (seconds < 59.95) {
        std::snprintf(buf, sizeof buf, "%.1f s", seconds);
    } else if (seconds < 3600) {
        const auto s = static_cast<long>(seconds + 0.5);
        std::snprintf(buf, sizeof buf, "%ld min %02ld s", s / 60, s % 60);
    } else {
        const auto m = static_cast<long>(seconds / 60 + 0.5);
        std::snprintf(buf, sizeof buf, "%ld h %02ld min", m / 60, m % 60);
    }
    return buf;
}

/// The time the steps i+1..n will take if each takes as long as the first i did on average;
/// nothing before the first step is done (or without a step count).
inline std::optional<double> estimate_remaining(double elapsed, std::uint64_t i, std::uint64_t n) {
    if (i == 0 || n == 0) return std::nullopt;
    if (i >= n) return 0.0;
    return elapsed / static_cast<double>(i) * static_cast<double>(n - i);
}

/// The text of the line (without '\r'): "<phase> <i>/<n>  elapsed <t>  remaining ~<t>", where
/// `elapsed` is the phase's time now and `at_step` its time when step i ended: the estimate
/// from the first i steps, less the time step i+1 has already run (never below 0).
/// n == 0 (a phase of one indivisible step): "<phase>  elapsed <t>".
inline std::string format_progress(std::string_view phase, std::uint64_t i, std::uint64_t n,
                                   double elapsed, double at_step) {
    // Appended piece by piece: GCC 12 at -O3 warns (-Wrestrict, a false positive) on
    // "literal" + std::string temporaries here.
    std::string s(phase);
    if (n > 0) {
        s.append(" ").append(std::to_string(i)).append("/").append(std::to_string(n));
    }
    s.append("  elapsed ").append(format_duration(elapsed));
    if (const auto left = estimate_remaining(at_step, i, n)) {
        const double now_left = *left - (elapsed - at_step);
        s.append("  remaining ~").append(format_duration(now_left > 0 ? now_left : 0));
    }
    return s;
}

/// The line on a terminal. Inactive (it writes nothing, starts no thread) unless `enabled` and
/// `out` is a terminal. Thread-safe; meant for one rank (rank 0) of a program.
class progress_line {
  public:
    using clock = std::chrono::steady_clock;

    explicit progress_line(bool enabled, std::FILE* out = stderr)
        : _out(out), _active(enabled && out != nullptr && isatty(fileno(out)) == 1) {
        if (_active) _ticker = std::thread([this] { tick(); });
    }
    progress_line(const progress_line&) = delete;
    progress_line& operator=(const progress_line&) = delete;
    /// Erases the line and stops the ticker.
    ~progress_line() {
        if (!_active) return;
        {
            std::lock_guard lock(_m);
            _stop = true;
            erase();
        }
        _wake.notify_all();
        _ticker.join();
    }

    /// Whether anything is shown.
    [[nodiscard]] bool active() const { return _active; }

    /// Starts a phase of `n` steps (0: one step that is not counted); its clock starts now.
    void phase(std::string name, std::uint64_t n) {
        if (!_active) return;
        std::lock_guard lock(_m);
        _phase = std::move(name);
        _n = n;
        _i = 0;
        _start = _at_step = clock::now();
        draw(true);
    }

    /// `i` steps of the phase are done; redraws at most 10 times a second.
    void step(std::uint64_t i) {
        if (!_active) return;
        std::lock_guard lock(_m);
        _i = i;
        _at_step = clock::now();
        draw(false);
    }

    /// Runs `print` (which writes whole lines to the terminal) with the line erased, then
    /// shows the line again below what it printed.
    template <class Print>
    void above(Print&& print) {
        if (!_active) {
            print();
            return;
        }
        std::lock_guard lock(_m);
        erase();
        print();
        std::fflush(nullptr);
        draw(true);
    }

    /// Writes `text` (whole lines) to the line's stream, above the line.
    void message(const std::string& text) {
        above([&] { std::fputs(text.c_str(), _out); });
    }

  private:
    void erase() {
        if (_shown) std::fputs("\r\033[K", _out);
        std::fflush(_out);
        _shown = false;
    }
    void draw(bool now) {
        const clock::time_point t = clock::now();
        if (_phase.empty() || (!now && t - _drawn < std::chrono::milliseconds(100))) return;
        _drawn = t;
        const double elapsed = std::chrono::duration<double>(t - _start).count();
        const double at_step = std::chrono::duration<double>(_at_step - _start).count();
        std::fprintf(_out, "\r\033[K%s", format_progress(_phase, _i, _n, elapsed, at_step).c_str());
        std::fflush(_out);
        _shown = true;
    }
    void tick() {
        std::unique_lock lock(_m);
        while (!_wake.wait_for(lock, std::chrono::milliseconds(250), [this] { return _stop; })) {
            draw(true);
        }
    }

    std::FILE* _out;
    bool _active;
    std::mutex _m;
    std::condition_variable _wake;
    std::thread _ticker;
    bool _stop = false;
    bool _shown = false;
    std::string _phase;
    std::uint64_t _i = 0, _n = 0;
    clock::time_point _start = clock::now(), _at_step = _start, _drawn{};
};

}  // namespace am::graph
