// SPDX-License-Identifier: MIT
// Test support: expectations about am::error, usable inside ranks and handlers.
#pragma once

#include "support/spmd.hpp"

#include <functional>
#include <string>
#include <vector>

namespace am_test {

/// Expects `f()` to throw am::error with `code` and a what() containing every one of `parts`.
template <class F>
void expect_error(F&& f, am::errc code, const std::vector<std::string>& parts) {
    try {
        f();
        ADD_FAILURE() << "no am::error thrown";
    } catch (const am::error& e) {
        const std::string what = e.what();
        EXPECT_EQ(e.code(), code) << what;
        for (const std::string& p : parts) {
            EXPECT_TRUE(contains(what, p)) << "\"" << p << "\" not in: " << what;
        }
    }
}

/// Runs `register_all`, then expects barrier() to throw errc::handler_mismatch on this rank,
/// naming the call, rank 0, the differing (last) rank, the entry and every one of `names`.
inline void expect_mismatch(am::context& ctx, const std::function<void(am::context&)>& register_all,
                            const std::string& entry, const std::vector<std::string>& names) {
    register_all(ctx);
    std::vector<std::string> parts = {"am::context::barrier", "rank 0 ",
                                      "rank " + std::to_string(ctx.size() - 1) + " ",
                                      "entry " + entry};
    parts.insert(parts.end(), names.begin(), names.end());
    expect_error([&] { ctx.barrier(); }, am::errc::handler_mismatch, parts);
}

}  // namespace am_test
