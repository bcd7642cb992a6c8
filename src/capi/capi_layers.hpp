// SPDX-License-Identifier: MIT
// What the C APIs of the layers (Split-C, send/receive) share: an entry point's guard that
// also puts the C names into the layer's C++ messages.
#pragma once

#include "capi_common.hpp"

#include <initializer_list>
#include <string>
#include <string_view>
#include <utility>

namespace am::capi {

/// A C++ name in a layer's messages and the C name the caller knows it by.
using rename = std::pair<std::string_view, std::string_view>;

/// As `guarded`, with `ctx` checked first (null: AM_ERR_INVALID_ARGUMENT, nothing recorded),
/// and every `renames` text of an am::error's message replaced before it is recorded.
template <class F>
am_status_t guarded_c(am_context* ctx, const char* call, std::initializer_list<rename> renames,
                      F&& f) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(ctx, call, [&] {
        try {
            f();
        } catch (const am::error& e) {
            std::string what = e.what();
            for (const auto& [from, to] : renames) {
                for (auto at = what.find(from); at != std::string::npos;
                     at = what.find(from, at + to.size())) {
                    what.replace(at, from.size(), to);
                }
            }
            throw am::error(e.code(), what);
        }
    });
}

}  // namespace am::capi
