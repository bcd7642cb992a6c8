// SPDX-License-Identifier: MIT
/// @file
/// Deprecated (kept one release): the message layer's header is <am/msg.hpp>.
#pragma once

#include <am/msg.hpp>
