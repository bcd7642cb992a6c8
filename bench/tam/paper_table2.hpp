// SPDX-License-Identifier: MIT
/// @file
/// Table 2 of "TAM on the J-Machine: Active Messages vs message-driven dispatch" as the paper
/// prints it: measured there on the J-Machine's MDP (instruction simulator, one processor),
/// with the programs' arguments of its section 3. Data to compare with, never a result.
#pragma once

#include <string_view>

namespace am::bench::tam_table {

struct paper_row {
    const char* program;  // tam_apps' name
    int arg;              // the paper's argument
    double tpq_md, tpq_am, ipt_md, ipt_am, ipq_md, ipq_am;
    /// MD/AM cycle ratios, 8 KiB 4-way I and D caches, 64 B blocks, miss cost 12, 24, 48.
    double ratio[3];
};

inline constexpr paper_row paper_table2[] = {
    {"mmt", 50, 4.2, 4.2, 84, 90, 349, 373, {1.03, 1.20, 1.54}},
    {"qs", 100, 4.5, 5.7, 16.7, 20.8, 76, 119, {0.98, 1.13, 1.38}},
    {"dtw", 10, 5.3, 6.0, 22.6, 26.5, 119, 159, {0.97, 1.12, 1.39}},
    {"paraffins", 13, 6.8, 8.7, 23.8, 29.2, 161, 253, {0.87, 0.92, 0.99}},
    {"wavefront", 40, 43.9, 65.2, 50.7, 54.0, 2223, 3520, {0.87, 0.86, 0.87}},
    {"ss", 100, 6432, 6892, 13.1, 18.3, 83961, 126104, {0.61, 0.61, 0.62}},
};

/// The paper's row for `program`, or nullptr.
[[nodiscard]] inline const paper_row* find_paper_row(std::string_view program) {
    for (const paper_row& r : paper_table2) {
        if (program == r.program) return &r;
    }
    return nullptr;
}

}  // namespace am::bench::tam_table
