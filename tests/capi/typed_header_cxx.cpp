// SPDX-License-Identifier: MIT
// am/am_typed.h must be self-contained and valid C++ too: included first and alone here.
#include <am/am_typed.h>

#include <type_traits>

static_assert(noexcept(am_typed_send(nullptr, nullptr, 0, 0)), "C entry points never throw");
static_assert(noexcept(am_typed_layer_free(nullptr)));
static_assert(noexcept(am_typed_epoch_end(nullptr, 0, nullptr, nullptr)));
static_assert(std::is_same_v<decltype(am_typed_max_batch(nullptr)), size_t>);
static_assert(sizeof(am_typed_epoch_stats_t) == 8 * sizeof(uint64_t) + sizeof(double));
