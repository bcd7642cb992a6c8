// SPDX-License-Identifier: MIT
// am/am_msg.h must be self-contained and valid C++ too: included first and alone here.
#include <am/am_msg.h>

static_assert(AM_MSG_ANY_SOURCE == -1 && AM_MSG_ANY_TAG == -1);
static_assert(noexcept(am_msg_send(nullptr, 0, 0, nullptr, 0)), "C entry points never throw");
static_assert(noexcept(am_msg_free(nullptr)));
