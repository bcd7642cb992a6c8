// SPDX-License-Identifier: MIT
/// @file
/// am's distributed containers (YGM-style) and `am::async`: `am::dist::map`, `set`,
/// `counting_set`, `bag`, `array`, `disjoint_set`, `dist_object`, the team barrier that
/// completes their operations, and parallel line readers. docs/containers.md.
#pragma once

#include <am/async.hpp>
#include <am/dist/array.hpp>
#include <am/dist/bag.hpp>
#include <am/dist/disjoint_set.hpp>
#include <am/dist/map.hpp>
#include <am/dist/object.hpp>
#include <am/dist/read.hpp>
#include <am/dist/set.hpp>
