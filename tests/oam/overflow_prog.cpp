// SPDX-License-Identifier: MIT
// An optimistic handler that recurses (tests/CMakeLists.txt runs this through amrun and
// mpiexec). `overflow_prog overflow`: without bound, so the guard page below the handler's
// stack must stop it with "stack overflow in optimistic handler" naming the handler type
// (deep_recursion_handler). `overflow_prog deep`: 60 frames of ~300 bytes, well within the
// default 64 KiB stack; every rank prints "overflow_prog: rank R ok".
#include <am/am.hpp>
#include <am/oam.hpp>

#include <cstdint>
#include <cstdio>
#include <string>

namespace {

// Each frame keeps a buffer that the next frame reads through a pointer, so the recursion can
// be neither turned into a loop nor have its frames dropped.
[[gnu::noinline]] std::uint64_t recurse(std::uint64_t depth, std::uint64_t limit,
                                        const volatile std::uint8_t* parent) {
    volatile std::uint8_t frame[256];
    for (auto& b : frame)
        b = static_cast<std::uint8_t>(depth + (parent != nullptr ? parent[0] : 0));
    if (depth == limit) return frame[0];
    return recurse(depth + 1, limit, frame) + frame[depth % sizeof frame];
}

struct deep_recursion_handler {
    am::counter* done;
    std::uint64_t* sink;
    void operator()(am::token&, std::uint64_t limit) const {
        *sink = recurse(0, limit, nullptr);
        done->add();
    }
};

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "deep";
    if (mode != "deep" && mode != "overflow") {
        std::fprintf(stderr, "usage: overflow_prog deep|overflow\n");
        return 2;
    }
    return am::run(argc, argv, [&](am::context& ctx) {
        am::counter done(ctx);
        std::uint64_t sink = 0;
        auto h = am::optimistic_handler(ctx, deep_recursion_handler{&done, &sink});
        ctx.barrier();
        const std::uint64_t limit = mode == "overflow" ? UINT64_MAX : 60;
        ctx.request((ctx.rank() + 1) % ctx.size(), h, limit);
        done.wait(1);
        ctx.quiesce();
        std::printf("overflow_prog: rank %d ok (%llu)\n", ctx.rank(),
                    static_cast<unsigned long long>(sink & 1));
        std::fflush(stdout);
    });
}
