// SPDX-License-Identifier: MIT
// Stacks of optimistic handlers: an mmap'd region with a PROT_NONE guard gap below the usable
// part, and a SIGSEGV handler (on an alternate signal stack) that turns an overflow into a
// message naming the handler and its rank before the process dies.
//
// The gap is 1 MiB (oam_guard_bytes), not one page: a frame larger than the gap that writes
// only its far end would skip it and land in the stack mapped below — another blocked
// handler's live frames — and corrupt them silently (issue 36: a 72 KiB local on a 64 KiB
// stack with a 4 KiB guard did). A frame of up to 1 MiB now faults in the gap whatever it
// touches; code built with -fstack-clash-protection (the library's own, and users' through
// the am::am target and am.pc) probes every page of a larger frame, so it faults in the gap
// too. The gap costs address space only (PROT_NONE, never committed).
//
// An overflow is recognised by the faulting address (in the running handler's gap) or by the
// interrupted stack pointer (below the running handler's stack: the frame moved it there and
// then faulted anywhere, e.g. beyond the gap or in another mapping's guard).
#include "oam_sched.hpp"

#include "../util/error.hpp"

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#endif
#include <sys/mman.h>
#include <unistd.h>

#include <ucontext.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <string>

namespace am::detail {

namespace {

std::size_t page_size() noexcept {
    static const std::size_t p = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return p;
}

struct sigaction g_previous;  // the handler ours replaced (chained for other faults)

// The message is put together in one buffer and written with one write(2) (async-signal-safe),
// so two ranks overflowing at once do not interleave mid-line.
struct line {
    char buf[1024];
    std::size_t n = 0;
    void add(const char* p, std::size_t len) noexcept {
        while (len-- > 0 && n < sizeof buf) buf[n++] = *p++;
    }
    void add(const char* s) noexcept { add(s, std::strlen(s)); }
    void add_number(std::size_t v) noexcept {
        char d[24];
        int i = sizeof d;
        do {
            d[--i] = static_cast<char>('0' + v % 10);
            v /= 10;
        } while (v != 0 && i > 0);
        add(d + i, sizeof d - static_cast<std::size_t>(i));
    }
    void write() const noexcept {
        const char* p = buf;
        std::size_t left = n;
        while (left > 0) {
            const ssize_t w = ::write(2, p, left);
            if (w <= 0) return;
            p += w, left -= static_cast<std::size_t>(w);
        }
    }
};

// The stack pointer of the interrupted code, or 0 where this file does not know the register.
std::uintptr_t interrupted_sp(const void* uctx) noexcept {
    const auto* uc = static_cast<const ucontext_t*>(uctx);
#if defined(__x86_64__)
    return static_cast<std::uintptr_t>(uc->uc_mcontext.gregs[REG_RSP]);
#elif defined(__aarch64__)
    return static_cast<std::uintptr_t>(uc->uc_mcontext.sp);
#else
    (void)uc;
    return 0;
#endif
}

// Whether a fault while `f` runs is its stack overflowing: the address lies in its guard gap,
// or its stack pointer has left its stack downwards (by less than 1 GiB: further is no frame).
bool is_overflow(const oam_fiber& f, const std::byte* addr, std::uintptr_t sp) noexcept {
    if (addr >= f.stack.base && addr < f.stack.bottom()) return true;
    const auto bottom = reinterpret_cast<std::uintptr_t>(f.stack.bottom());
    return sp != 0 && sp < bottom && bottom - sp < (std::uintptr_t{1} << 30);
}

void on_segv(int sig, siginfo_t* info, void* uctx) {
    const auto* addr = static_cast<const std::byte*>(info->si_addr);
    // The fiber running on this thread: the hook set on every switch into one.
    const fiber_hook* h = t_fiber_hook;
    const auto* f = h != nullptr ? static_cast<const oam_fiber*>(h->arg) : nullptr;
    if (f != nullptr && is_overflow(*f, addr, interrupted_sp(uctx))) {
        line l;
        l.add("am: rank ");
        l.add_number(static_cast<std::size_t>(f->rank));
        l.add(": stack overflow in optimistic handler ");
        const std::string_view name = oam_readable_view(f->name);
        l.add(name.data(), name.size());
        l.add(" (its stack holds ");
        l.add_number(f->stack.usable);
        l.add(" bytes; raise AM_OAM_STACK_BYTES / config::oam_stack_bytes)\n");
        l.write();
        std::signal(SIGSEGV, SIG_DFL);  // the fault repeats on return and ends the process
        return;
    }
    if ((g_previous.sa_flags & SA_SIGINFO) != 0 && g_previous.sa_sigaction != nullptr) {
        g_previous.sa_sigaction(sig, info, uctx);
        return;
    }
    if (g_previous.sa_handler != SIG_DFL && g_previous.sa_handler != SIG_IGN &&
        g_previous.sa_handler != nullptr) {
        g_previous.sa_handler(sig);
        return;
    }
    std::signal(SIGSEGV, SIG_DFL);
}

}  // namespace

std::size_t oam_stack_round(std::size_t usable) noexcept {
    const std::size_t page = page_size();
    return (usable + page - 1) / page * page;
}

oam_stack oam_stack_map(std::size_t usable, int rank) {
    oam_stack s;
    s.usable = oam_stack_round(usable);
    s.mapped = s.usable + oam_guard_bytes;
    // All of it inaccessible first, then the usable part opened: the gap is never writable.
    void* p =
        ::mmap(nullptr, s.mapped, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) {
        util::fail(errc::system, "am::optimistic_handler", rank,
                   "mmap of a " + std::to_string(s.mapped) +
                       "-byte handler stack failed: " + std::strerror(errno));
    }
    s.base = static_cast<std::byte*>(p);
    if (::mprotect(s.bottom(), s.usable, PROT_READ | PROT_WRITE) != 0) {
        const int e = errno;
        ::munmap(p, s.mapped);
        util::fail(errc::system, "am::optimistic_handler", rank,
                   std::string("mprotect of a handler stack failed: ") + std::strerror(e));
    }
    return s;
}

void oam_stack_unmap(oam_stack& s) noexcept {
    if (s.base == nullptr) return;
#if defined(__SANITIZE_ADDRESS__)
    // Frames left on the stack keep their poisoning; the next mapping at this address must not.
    ASAN_UNPOISON_MEMORY_REGION(s.bottom(), s.usable);
#endif
    ::munmap(s.base, s.mapped);
    s = {};
}

boost::context::preallocated oam_stack_preallocated(const oam_stack& s) noexcept {
    boost::context::stack_context sc;
    sc.sp = s.top();
    sc.size = s.usable;
    return boost::context::preallocated(s.top(), s.usable, sc);
}

void oam_guard_install() {
    thread_local bool installed = false;  // the fast path: every resumption passes here
    if (installed) return;
    installed = true;
    static std::once_flag once;
    std::call_once(once, [] {
        struct sigaction sa {};
        sa.sa_sigaction = &on_segv;
        sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
        sigemptyset(&sa.sa_mask);
        ::sigaction(SIGSEGV, &sa, &g_previous);
    });
    // An overflow leaves no stack to run the handler on: each thread that runs fibers gets an
    // alternate signal stack (kept for the thread's life), unless it has one already.
    stack_t cur{};
    if (::sigaltstack(nullptr, &cur) == 0 && (cur.ss_flags & SS_DISABLE) == 0) return;
    thread_local std::unique_ptr<std::byte[]> alt;
    constexpr std::size_t bytes = 64 * 1024;
    alt = std::make_unique<std::byte[]>(bytes);
    stack_t ss{};
    ss.ss_sp = alt.get();
    ss.ss_size = bytes;
    ::sigaltstack(&ss, nullptr);
}

}  // namespace am::detail
