// SPDX-License-Identifier: MIT
// A layer that reaches past the core's layer interface into its private headers: the build must
// refuse it (tests/layers/CMakeLists.txt). Never part of a target.
#include "../../../src/core/context_impl.hpp"

int bad_layer_uses_the_core_directly() {
    return 0;
}
