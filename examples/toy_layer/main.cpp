// SPDX-License-Identifier: MIT
// Runs the toy layer: every rank adds rank + 1 to rank 0's total; rank 0 checks the sum.
#include "tally.hpp"

#include <cstdio>
#include <stdexcept>
#include <string>

int main() {
    const am::runtime::layer_entry layers[] = {tally::entry};
    return am::runtime::run_with_layers(am::config::from_env(), layers, [](am::context& ctx) {
        tally::add(ctx, 0, static_cast<std::uint64_t>(ctx.rank()) + 1);
        ctx.quiesce();  // every add has been handled
        if (ctx.rank() != 0) return;
        const auto n = static_cast<std::uint64_t>(ctx.size());
        const std::uint64_t got = tally::total(ctx), want = n * (n + 1) / 2;
        std::printf("tally: %d ranks, total %llu (expected %llu)\n", ctx.size(),
                    static_cast<unsigned long long>(got), static_cast<unsigned long long>(want));
        if (got != want) throw std::runtime_error("tally: wrong total " + std::to_string(got));
    });
}
