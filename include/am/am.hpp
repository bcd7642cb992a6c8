// SPDX-License-Identifier: MIT
/// @file
/// Umbrella header of the `am` C++ API.
#pragma once

#include <am/coll.hpp>
#include <am/config.hpp>
#include <am/context.hpp>
#include <am/error.hpp>
#include <am/handler.hpp>
#include <am/msg.hpp>
#include <am/rpc.hpp>
#include <am/splitc.hpp>
#include <am/stats.hpp>
#include <am/tam.hpp>
#include <am/typed.hpp>
#include <am/window.hpp>
