// SPDX-License-Identifier: MIT
// Waiting without hogging a core: spin briefly, then yield, then sleep with a growing period
// (capped at 1 ms), so that ranks oversubscribed on few cores still let their peers run.
#pragma once

#include <sched.h>
#include <time.h>
#include <unistd.h>

namespace am::util {

inline constexpr unsigned spin_rounds = 256;
inline constexpr unsigned yield_rounds = 2048;

/// One step of back-off; `state` counts idle rounds (reset it to 0 when work was found).
/// `spin` is how many rounds spin before the first yield: 0 when the host's ranks outnumber
/// its usable cores, where spinning only keeps the awaited rank from running.
inline void backoff(unsigned& state, unsigned spin = spin_rounds) noexcept {
    if (state < spin) {
#if defined(__x86_64__) || defined(__i386__)
        __builtin_ia32_pause();
#endif
    } else if (state < yield_rounds) {
        sched_yield();
    } else {
        const unsigned over = state - yield_rounds;
        const long us = over < 1000 ? 10 + over : 1000;
        timespec ts{0, us * 1000};
        nanosleep(&ts, nullptr);
    }
    if (state != ~0u) ++state;
}

/// The spin rounds for `ranks` ranks sharing this host's usable cores (the affinity mask).
/// `bound_apart`: each rank is a process a launcher may have bound to cores of its own
/// (`mpirun --bind-to core`, which binds at most one rank per core unless told to overload):
/// then a mask narrower than the host says nothing about the other ranks, and the host's
/// online cores count instead.
inline unsigned spin_rounds_for(int ranks, bool bound_apart = false) noexcept {
    cpu_set_t set;
    CPU_ZERO(&set);
    int cores = 1;
    if (sched_getaffinity(0, sizeof set, &set) == 0) cores = CPU_COUNT(&set);
    if (bound_apart) {
        const long online = sysconf(_SC_NPROCESSORS_ONLN);
        if (online > cores) cores = static_cast<int>(online);
    }
    return ranks <= cores ? spin_rounds : 0;
}

}  // namespace am::util
