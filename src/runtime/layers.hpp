// SPDX-License-Identifier: MIT
// The layers of one rank: made in order right after its context, attached to it, destroyed
// in reverse order after the rank's final quiescence.
#pragma once

#include <am/runtime/layers.hpp>

#include <memory>
#include <span>
#include <string>
#include <vector>

namespace am::runtime {

class layer_stack {
  public:
    /// The library's layers, then `extra`.
    layer_stack(context& ctx, const config& cfg, std::span<const layer_entry> extra);
    ~layer_stack();
    layer_stack(const layer_stack&) = delete;
    layer_stack& operator=(const layer_stack&) = delete;
    /// Every layer's lines for the AM_STATS report.
    [[nodiscard]] std::string report() const;

  private:
    void add(context& ctx, const config& cfg, const layer_entry& e);
    std::vector<std::unique_ptr<core::layer>> _layers;
};

}  // namespace am::runtime
