// SPDX-License-Identifier: MIT
#pragma once

#include "region.hpp"

#include <am/config.hpp>

namespace am::transport::ring {

/// Region sizes for `cfg`: ring bytes rounded up to a power of two (default by rank count),
/// segment bytes rounded up to a page. Throws am::error on values out of range.
region_params params_for(const config& cfg);

}  // namespace am::transport::ring
