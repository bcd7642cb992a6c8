// SPDX-License-Identifier: MIT
// Built against an installed am: every rank sends its rank to rank 0, which checks the sum.
#include <am/am.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    return am::run(argc, argv, [](am::context& ctx) {
        long sum = 0;
        am::counter got(ctx);
        auto add = ctx.handler([&](am::token&, long v) {
            sum += v;
            got.add();
        });
        ctx.barrier();
        ctx.request(0, add, static_cast<long>(ctx.rank()) + 1);
        if (ctx.rank() == 0) {
            got.wait(static_cast<std::uint64_t>(ctx.size()));
            const long n = ctx.size();
            if (sum != n * (n + 1) / 2) ctx.abort("wrong sum " + std::to_string(sum));
            std::printf("consumer: %ld ranks, sum %ld\n", n, sum);
        }
        ctx.quiesce();
    });
}
