// SPDX-License-Identifier: MIT
// The one way the library reports a bad call: an am::error whose text names the call, the rank
// and what was wrong ("am::context::put: rank 3: ..."). Used by the core, every layer and the
// C API (docs/semantics.md "Errors").
#pragma once

#include <am/error.hpp>

#include <string>

namespace am::util {

/// "call: rank N: ", the prefix of every error the library raises.
inline std::string where(const char* call, int rank) {
    return std::string(call) + ": rank " + std::to_string(rank) + ": ";
}

/// Throws am::error(`code`) with the text "call: rank N: what".
[[noreturn, gnu::cold, gnu::noinline]] inline void fail(errc code, const char* call, int rank,
                                                        const std::string& what) {
    throw error(code, where(call, rank) + what);
}

}  // namespace am::util
