// SPDX-License-Identifier: MIT
// AM_ASSERT(cond, what): a check of an internal invariant of the library, such as a ring
// position, an offset inside the job region, a block of the segment heap or a handler-table
// index: something that is true unless the library itself is broken. Never a check of what a
// program passes in or of what arrives from a peer: those are errors the program must see
// (`am::error`, a rejected message), in every build.
//
// On when AM_ENABLE_ASSERT is defined: cmake/am_private.cmake defines it for the project's
// own code in Debug builds and in sanitizer builds (AM_SANITIZE), and `-DAM_ASSERT=ON` turns it
// on in any build (`OFF` turns it off). A failed assertion prints
//   am: assertion failed at <file>:<line>: <cond>: <what>
// to stderr and aborts the process. Off (Release, RelWithDebInfo), AM_ASSERT compiles to
// nothing: `cond` is not evaluated, only parsed, so it may be as costly as needed and its
// variables do not count as unused. On, the check costs `cond` and a branch: nothing is
// allocated or called unless it fails, and the failure is a cold function of its own, kept
// out of the hot code.
#pragma once

#ifdef AM_ENABLE_ASSERT

#include <cstdio>
#include <cstdlib>

namespace am::util {

/// Reports the failed assertion `cond` (its text) at `file`:`line` and aborts.
[[noreturn, gnu::cold, gnu::noinline]] inline void assert_failed(const char* file, int line,
                                                                 const char* cond,
                                                                 const char* what) noexcept {
    std::fprintf(stderr, "am: assertion failed at %s:%d: %s: %s\n", file, line, cond, what);
    std::fflush(stderr);
    std::abort();
}

}  // namespace am::util

#define AM_ASSERT(cond, what)                     \
    (__builtin_expect(static_cast<bool>(cond), 1) \
         ? static_cast<void>(0)                   \
         : ::am::util::assert_failed(__FILE__, __LINE__, #cond, what))

#else

#define AM_ASSERT(cond, what) static_cast<void>(sizeof(!(cond)) + sizeof(what))

#endif
