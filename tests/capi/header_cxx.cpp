// SPDX-License-Identifier: MIT
// am/am.h must be self-contained and valid C++ too: included first and alone here, without
// the deprecated names (and so without am/am_rpc.h, which it includes only for them).
#define AM_NO_DEPRECATED
#include <am/am.h>

#include <type_traits>

static_assert(AM_OK == 0 && AM_ERR_INVALID_ARGUMENT == 10);
static_assert(std::is_same_v<am_handler_t, uint32_t>);
static_assert(noexcept(am_rank(nullptr)), "C entry points never throw");
static_assert(noexcept(am_request_short(nullptr, 0, 0, nullptr, 0)));
static_assert(alignof(am_counter_t) == 8);
#ifdef AM_AM_RPC_H
#error "with AM_NO_DEPRECATED, am/am.h does not include am/am_rpc.h"
#endif
