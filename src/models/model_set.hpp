// SPDX-License-Identifier: MIT
// The model layers of one rank, built on the core: created by am::run before the rank function
// starts and before any message can be dispatched, in the same order on every rank, so their
// handlers have the same indices everywhere.
#pragma once

#include "../msg/msg_layer.hpp"
#include "../rma/rma_layer.hpp"
#include "../typed/typed_layer.hpp"

#include <am/context.hpp>

namespace am::detail {

class model_set {
  public:
    model_set(context& ctx, const config& cfg) : _rma(ctx, cfg), _msg(ctx, cfg), _typed(ctx, cfg) {}
    model_set(const model_set&) = delete;
    model_set& operator=(const model_set&) = delete;

    [[nodiscard]] rma_layer& rma() noexcept { return _rma; }
    [[nodiscard]] msg_layer& msg() noexcept { return _msg; }
    [[nodiscard]] typed_layer& typed() noexcept { return _typed; }

  private:
    rma_layer _rma;
    msg_layer _msg;
    typed_layer _typed;
};

}  // namespace am::detail
