// SPDX-License-Identifier: MIT
/// @file
/// The six TAM programs of "TAM on the J-Machine" (section 3), written against <am/tam.hpp> as
/// a TAM compiler would emit them (threads and inlets as functions), each with its sequential
/// C++ reference. Used by bench/tam/tam_table and tests/tam.
#pragma once

#include <am/tam.hpp>

#include <span>
#include <string_view>

namespace tam_apps {

struct app {
    const char* name;   // "mmt", "qs", "dtw", "paraffins", "wavefront", "ss"
    const char* title;  // "matrix multiply", ...
    int paper_arg;      // the paper's argument (MMT 50, QS 100, DTW 10, paraffins 13, ...)
    int large_arg;      // a larger argument that still runs in seconds on one rank
    /// Collective: builds the program, runs it with `opt` on every rank (am::tam::run) and
    /// returns run's result; result.value is the program's answer for argument `n`.
    am::tam::result (*run)(am::context& ctx, int n, const am::tam::options& opt);
    /// The sequential C++ reference: the same answer, computed by ordinary code. Not inlined,
    /// so that callgrind can count it alone (--toggle-collect=tam_apps::*_reference*).
    am::tam::word (*reference)(int n);
};

/// All six, in the paper's Table 2 order (mmt, qs, dtw, paraffins, wavefront, ss).
[[nodiscard]] std::span<const app> all();
/// The one named `name`; std::invalid_argument naming the known ones otherwise.
[[nodiscard]] const app& find(std::string_view name);

}  // namespace tam_apps
