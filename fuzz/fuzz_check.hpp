// SPDX-License-Identifier: MIT
// FUZZ_CHECK: an invariant of a fuzz target. Unlike assert it stays on in every build (the
// replay tests build with NDEBUG), and a failure aborts, which libFuzzer and the replay report
// as a crash on that input.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace am::fuzz {

[[noreturn]] inline void fail(const char* file, int line, const char* what) {
    std::fprintf(stderr, "%s:%d: fuzz invariant failed: %s\n", file, line, what);
    std::abort();
}

}  // namespace am::fuzz

#define FUZZ_CHECK(cond) \
    ((cond) ? static_cast<void>(0) : ::am::fuzz::fail(__FILE__, __LINE__, #cond))
#define FUZZ_FAIL(what) ::am::fuzz::fail(__FILE__, __LINE__, what)
