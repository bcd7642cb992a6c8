// SPDX-License-Identifier: MIT
// am/am_rpc.h must be self-contained and valid C++ too: included first and alone here.
#include <am/am_rpc.h>

#include <type_traits>

static_assert(std::is_same_v<am_rpc_t, uint32_t> && AM_RPC_INVALID == UINT32_MAX);
static_assert(noexcept(am_rpc_call(nullptr, 0, 0, nullptr, 0, nullptr)));
static_assert(noexcept(am_rpc_future_get(nullptr, nullptr, 0, nullptr)));
static_assert(noexcept(am_rpc_future_free(nullptr)));
