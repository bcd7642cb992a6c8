// SPDX-License-Identifier: MIT
// An optimistic handler that recurses (tests/CMakeLists.txt runs this through amrun and
// mpiexec). `overflow_prog overflow`: without bound, so the guard page below the handler's
// stack must stop it with "stack overflow in optimistic handler" naming the handler type
// (deep_recursion_handler). `overflow_prog deep`: 60 frames of ~300 bytes, well within the
// default 64 KiB stack; every rank prints "overflow_prog: rank R ok".
//
// `overflow_prog clash-array K` / `clash-alloca K` (issue 36): three handlers block at once
// on each rank — a marker handler that keeps 1024 marked words on its stack, one that then
// calls a function with a K KiB local (a plain array, K in {68, 72, 76}, or alloca of K KiB),
// writing only the deepest 8 KiB of it, and another marker handler — so whichever way the
// stacks are laid out, a marker's stack lies below the big frame's. The frame overflows its
// 64 KiB stack: the process must stop with "stack overflow in optimistic handler
// frame_handler"; before, a 72 KiB frame skipped the one guard page and overwrote the
// neighbour's markers (the job exited 0). If the process survives, it prints
// "overflow_prog: rank R corrupted W marker words" and fails.
#include <am/am.hpp>
#include <am/oam.hpp>

#include <alloca.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <stdexcept>
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

// ----------------------------------------------------------------- clash-array / clash-alloca

constexpr std::size_t marker_words = 1024;

struct clash_state {
    am::context* ctx;
    int phase = 0;              // 1: the frame handler goes on; 2: the markers check
    int parked = 0;             // handlers blocked so far
    int done = 0;               // handlers finished
    std::uint64_t damaged = 0;  // marker words found changed
};

struct marker_handler {
    clash_state* st;
    void operator()(am::token&, std::uint64_t which) const {
        volatile std::uint64_t marks[marker_words];
        for (std::size_t i = 0; i < marker_words; ++i) marks[i] = which << 32 | i;
        ++st->parked;
        st->ctx->wait([s = st] { return s->phase >= 2; });
        for (std::size_t i = 0; i < marker_words; ++i) {
            if (marks[i] != (which << 32 | i)) ++st->damaged;
        }
        ++st->done;
    }
};

// Writes the deepest 8 KiB of a frame of K KiB (the end an overflow reaches first).
template <std::size_t K>
[[gnu::noinline]] std::uint64_t array_frame() {
    volatile std::uint64_t big[K * 1024 / 8];
    for (std::size_t i = 0; i < marker_words; ++i) big[i] = ~std::uint64_t{0};
    return big[marker_words - 1];
}

[[gnu::noinline]] std::uint64_t alloca_frame(std::size_t kib) {
    auto* big = static_cast<volatile std::uint64_t*>(alloca(kib * 1024));
    for (std::size_t i = 0; i < marker_words; ++i) big[i] = ~std::uint64_t{0};
    return big[marker_words - 1];
}

std::uint64_t big_frame(bool array, std::size_t kib) {
    if (!array) return alloca_frame(kib);
    switch (kib) {
        case 68:
            return array_frame<68>();
        case 72:
            return array_frame<72>();
        default:
            return array_frame<76>();
    }
}

struct frame_handler {
    clash_state* st;
    bool array;
    std::uint64_t* sink;
    void operator()(am::token&, std::uint64_t kib) const {
        ++st->parked;
        st->ctx->wait([s = st] { return s->phase >= 1; });
        *sink = big_frame(array, kib);
        ++st->done;
    }
};

int clash(int argc, char** argv, bool array, std::size_t kib) {
    return am::run(argc, argv, [&](am::context& ctx) {
        clash_state st{&ctx};
        std::uint64_t sink = 0;
        auto marker = am::optimistic_handler(ctx, marker_handler{&st});
        auto frame = am::optimistic_handler(ctx, frame_handler{&st, array, &sink});
        ctx.barrier();
        ctx.request(ctx.rank(), marker, std::uint64_t{1});
        ctx.request(ctx.rank(), frame, std::uint64_t{kib});
        ctx.request(ctx.rank(), marker, std::uint64_t{2});
        ctx.wait([&] { return st.parked == 3; });
        st.phase = 1;
        ctx.wait([&] { return st.done == 1; });
        st.phase = 2;
        ctx.wait([&] { return st.done == 3; });
        std::printf("overflow_prog: rank %d corrupted %llu marker words\n", ctx.rank(),
                    static_cast<unsigned long long>(st.damaged));
        std::fflush(stdout);
        throw std::runtime_error("survived a frame larger than its stack");
    });
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "deep";
    if ((mode == "clash-array" || mode == "clash-alloca") && argc > 2) {
        const auto kib = static_cast<std::size_t>(std::strtoull(argv[2], nullptr, 10));
        const bool array = mode == "clash-array";
        if (array ? kib != 68 && kib != 72 && kib != 76 : kib < 1 || kib > (std::size_t{1} << 20)) {
            std::fprintf(stderr, "overflow_prog: %s: bad size %s\n", mode.c_str(), argv[2]);
            return 2;
        }
        return clash(argc, argv, array, kib);
    }
    if (mode != "deep" && mode != "overflow") {
        std::fprintf(stderr,
                     "usage: overflow_prog deep|overflow|clash-array 68|72|76|clash-alloca KIB\n");
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
