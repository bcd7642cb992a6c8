// SPDX-License-Identifier: MIT
// The toy layer of docs/layers.md: each rank keeps a total that any rank may add to by an
// active message. What a layer's users see: a few functions, and the entry that attaches it.
#pragma once

#include <am/runtime/layers.hpp>

#include <cstdint>

namespace tally {

/// Adds `n` to rank `owner`'s total; returns at once (the addition is an active message).
void add(am::context& ctx, int owner, std::uint64_t n);
/// This rank's total: every add sent to it before a quiesce() is counted after it.
std::uint64_t total(const am::context& ctx);
/// Attaches the layer: pass it to am::runtime::run_with_layers.
extern const am::runtime::layer_entry entry;

}  // namespace tally
