// SPDX-License-Identifier: MIT
// am/am_splitc.h must be self-contained and valid C++ too: included first and alone here.
#include <am/am_splitc.h>

#include <type_traits>

static_assert(std::is_standard_layout_v<am_splitc_gptr_t> && sizeof(am_splitc_gptr_t) == 16);
static_assert(noexcept(am_splitc_put(nullptr, am_splitc_gptr(0, 0), nullptr, 0)),
              "C entry points never throw");
static_assert(noexcept(am_splitc_flag_free(nullptr)));
static_assert(AM_SPLITC_MAX_FLAGS == 4096u);
