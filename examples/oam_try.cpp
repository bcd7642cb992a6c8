#include <am/am.hpp>
#include <am/rpc.hpp>
#include <cstdio>
#include <string>
#include <vector>

static int add(int a, int b) {
    return a + b;
}
static std::string greet(std::string s) {
    return "hello " + s;
}
static long sum(std::span<const long> v) {
    long t = 0;
    for (long x : v) t += x;
    return t;
}
static int boom(int) {
    throw std::runtime_error("kaboom");
}
static int chain(am::context& ctx, int hops) {
    if (hops == 0) return ctx.rank();
    return am::rpc<&chain>(ctx, (ctx.rank() + 1) % ctx.size(), hops - 1).get() + 1000;
}

int main() {
    am::config cfg = am::config::from_env();
    return am::run(cfg, [](am::context& ctx) {
        const int me = ctx.rank(), n = ctx.size();
        am::mutex m(ctx);
        long count = 0;
        auto h = am::optimistic_handler(ctx, [&](am::token&, long v) {
            std::lock_guard g(m);
            count += v;
        });
        am::rpc_register<&add>(ctx);
        am::rpc_register<&greet>(ctx);
        am::rpc_register<&sum>(ctx);
        am::rpc_register<&boom>(ctx);
        am::rpc_register<&chain>(ctx);
        auto sq = am::rpc_register(ctx, [me](int x) { return x * x + me; });
        ctx.barrier();
        {
            std::unique_lock g(m);  // hold: handlers must block
            for (int i = 0; i < 100; ++i) ctx.request((me + 1) % n, h, 1L);
            for (int i = 0; i < 1000; ++i) ctx.poll();
        }
        ctx.quiesce();
        std::printf("rank %d count %ld stats blocked %lu resumes %lu\n", me, count,
                    (unsigned long)am::optimistic_stats(ctx).blocked,
                    (unsigned long)am::optimistic_stats(ctx).resumes);
        const int t = (me + 1) % n;
        std::printf("rank %d add %d\n", me, am::rpc<&add>(ctx, t, 2, 3).get());
        std::printf("rank %d greet %s\n", me,
                    am::rpc<&greet>(ctx, t, std::string("x")).get().c_str());
        std::vector<long> v{1, 2, 3, 4};
        std::printf("rank %d sum %ld\n", me, am::rpc<&sum>(ctx, t, v).get());
        std::printf("rank %d sq %d\n", me, am::rpc(ctx, t, sq, 7).get());
        try {
            am::rpc<&boom>(ctx, t, 1).get();
        } catch (const am::error& e) {
            std::printf("rank %d boom: %d %s\n", me, (int)e.code(), e.what());
        }
        std::printf("rank %d chain %d\n", me, am::rpc<&chain>(ctx, t, 5).get());
        auto f = am::rpc<&add>(ctx, t, 1, 1).then([](int x) { return x * 10; });
        std::printf("rank %d then %d\n", me, f.get());
        std::vector<am::future<int>> fs;
        for (int i = 0; i < 64; ++i) fs.push_back(am::rpc<&add>(ctx, t, i, 0));
        auto all = am::when_all(ctx, fs).get();
        long s = 0;
        for (int x : all) s += x;
        std::printf("rank %d when_all %ld\n", me, s);
        ctx.barrier();
    });
}
