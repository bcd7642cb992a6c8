// SPDX-License-Identifier: MIT
// am/am_coll.h must be self-contained and valid C++ too: included first and alone here.
#include <am/am_coll.h>

static_assert(AM_COLL_UNDEFINED == -1);
static_assert(noexcept(am_coll_barrier(nullptr)), "C entry points never throw");
static_assert(noexcept(am_coll_team_free(nullptr)));
