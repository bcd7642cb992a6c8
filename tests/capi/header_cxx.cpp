// SPDX-License-Identifier: MIT
// am/am.h must be self-contained and valid C++ too: included first and alone here.
#include <am/am.h>

#include <type_traits>

static_assert(AM_OK == 0 && AM_ERR_INVALID_ARGUMENT == 10);
static_assert(std::is_same_v<am_handler_t, uint32_t>);
static_assert(noexcept(am_rank(nullptr)), "C entry points never throw");
static_assert(noexcept(am_request_short(nullptr, 0, 0, nullptr, 0)));
static_assert(alignof(am_counter_t) == 8);
static_assert(std::is_same_v<am_rpc_t, uint32_t> && AM_RPC_INVALID == UINT32_MAX);
static_assert(noexcept(am_rpc_call(nullptr, 0, 0, nullptr, 0, nullptr)));
static_assert(noexcept(am_future_get(nullptr, nullptr, 0, nullptr)));
static_assert(noexcept(am_future_free(nullptr)));
