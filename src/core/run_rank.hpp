// SPDX-License-Identifier: MIT
// One rank of a job: context, model layers, the rank function, quiescence (src/core/run.cpp).
#pragma once

#include "../transport/transport.hpp"

#include <am/context.hpp>

namespace am::detail {

/// Runs `fn` as the rank `tp` belongs to; returns 0, or 1 after printing why the rank failed
/// (and failing the job when the failure started here).
int run_rank(transport::transport& tp, const config& cfg, const rank_main& fn);

}  // namespace am::detail
