// SPDX-License-Identifier: MIT
// The C team handle (am_coll_team_t of <am/am_coll.h>): defined once, for the C API files that
// take teams (am_coll_c.cpp, am_dist_c.cpp).
#pragma once

#include "capi_common.hpp"

#include <am/am_coll.h>
#include <am/coll.hpp>

struct am_coll_team {
    am::coll::team cxx;
    am_context* ctx;
};
