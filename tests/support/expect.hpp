// SPDX-License-Identifier: MIT
// Test support: expectations about am::error, usable inside ranks and handlers.
#pragma once

#include "support/spmd.hpp"

#include <functional>
#include <string>
#include <utility>
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

/// The two entries a handler-mismatch report prints ("rank 0 registered A, rank R registered
/// B"): {A, B}, or two empty strings when `what` is not such a report.
inline std::pair<std::string, std::string> mismatched_names(const std::string& what, int r) {
    const std::string first = "rank 0 registered ";
    const std::string other = ", rank " + std::to_string(r) + " registered ";
    const std::size_t i = what.find(first);
    const std::size_t j = i == std::string::npos ? i : what.find(other, i);
    if (j == std::string::npos) return {};
    const std::size_t a = i + first.size();
    return {what.substr(a, j - a), what.substr(j + other.size())};
}

/// Expects `f()` to throw am::error with errc::handler_mismatch on this rank, its report naming
/// two different entries, rank 0's and rank `last`'s; returns them ({} when no such report) for
/// the caller's further checks.
template <class F>
std::pair<std::string, std::string> expect_mismatch_names(F&& f, int last) {
    try {
        f();
        ADD_FAILURE() << "no mismatch reported";
    } catch (const am::error& e) {
        EXPECT_EQ(e.code(), am::errc::handler_mismatch) << e.what();
        auto names = mismatched_names(e.what(), last);
        EXPECT_FALSE(names.first.empty()) << e.what();
        EXPECT_NE(names.first, names.second) << e.what();
        return names;
    }
    return {};
}

}  // namespace am_test
