// SPDX-License-Identifier: MIT
// am/am_dist.h must be self-contained and valid C++ too: included first and alone here.
#include <am/am_dist.h>

#include <type_traits>

static_assert(noexcept(am_dist_map_insert(nullptr, nullptr, 0, nullptr, 0)),
              "C entry points never throw");
static_assert(noexcept(am_dist_set_local_size(nullptr)));
static_assert(std::is_same_v<decltype(am_dist_map_free(nullptr)), am_status_t>);
