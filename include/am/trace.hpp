// SPDX-License-Identifier: MIT
/// @file
/// Deprecated (kept one release): tracing is started and stopped through `am::context`
/// (`trace_start`, `trace_stop`, <am/context.hpp>); its machinery is <am/detail/trace.hpp>.
#pragma once

#include <am/detail/trace.hpp>
