// SPDX-License-Identifier: MIT
// Short requests and replies with 0, 1 and 16 arguments of mixed types.
#include "support/spmd.hpp"

#include <cmath>
#include <cstdint>
#include <limits>

namespace {

using am_test::spmd_test;

enum class color : std::uint8_t { red = 1, green = 2, blue = 200 };
enum wide_enum : std::int64_t { wide_low = std::numeric_limits<std::int64_t>::min(), wide_one = 1 };

struct small_pair {  // 8 bytes, trivially copyable
    std::int16_t a;
    std::int8_t b;
    std::uint8_t c;
    float d;
    bool operator==(const small_pair&) const = default;
};
static_assert(sizeof(small_pair) == 8);

class short_am : public spmd_test {};

TEST_P(short_am, no_args) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size();
        am::counter requests(ctx), replies(ctx);
        std::int64_t source_sum = 0, reply_source_sum = 0;
        auto pong = ctx.handler([&](am::token& t) {
            EXPECT_FALSE(t.is_request());
            reply_source_sum += t.source();
            replies.add();
        });
        auto ping = ctx.handler([&, pong](am::token& t) {
            EXPECT_TRUE(t.is_request());
            EXPECT_EQ(&t.ctx(), &ctx);
            source_sum += t.source();
            requests.add();
            t.reply(pong);
        });
        ctx.barrier();
        for (int d = 0; d < n; ++d) ctx.request((ctx.rank() + d) % n, ping);
        requests.wait(static_cast<std::uint64_t>(n));
        replies.wait(static_cast<std::uint64_t>(n));
        EXPECT_EQ(source_sum, std::int64_t{n} * (n - 1) / 2);
        EXPECT_EQ(reply_source_sum, std::int64_t{n} * (n - 1) / 2);
        ctx.barrier();
        EXPECT_EQ(requests.value(), static_cast<std::uint64_t>(n));
        EXPECT_EQ(replies.value(), static_cast<std::uint64_t>(n));
    });
    ASSERT_EQ(rc, 0);
}

TEST_P(short_am, one_arg) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size();
        am::counter got(ctx), echoed(ctx);
        auto value_of = [](int src, int dst) {
            return static_cast<std::int8_t>((src * 31 + dst * 7) % 256 - 128);
        };
        auto echo = ctx.handler([&](am::token& t, std::int8_t v) {
            EXPECT_EQ(v, value_of(ctx.rank(), t.source()));
            echoed.add();
        });
        auto take = ctx.handler([&, echo](am::token& t, std::int8_t v) {
            EXPECT_EQ(v, value_of(t.source(), ctx.rank())) << "from rank " << t.source();
            got.add();
            t.reply(echo, v);
        });
        ctx.barrier();
        for (int d = 0; d < n; ++d) ctx.request(d, take, value_of(ctx.rank(), d));
        got.wait(static_cast<std::uint64_t>(n));
        echoed.wait(static_cast<std::uint64_t>(n));
    });
    ASSERT_EQ(rc, 0);
}

// The 16 values one rank sends another: extremes of every integer width, special floating
// values, enums, a small struct, a bool, a char and a pointer (echoed back to its owner).
struct mixed {
    std::int8_t i8;
    std::uint8_t u8;
    std::int16_t i16;
    std::uint16_t u16;
    std::int32_t i32;
    std::uint32_t u32;
    std::int64_t i64;
    std::uint64_t ptr_bits;
    double f64;
    float f32;
    bool flag;
    char ch;
    color col;
    wide_enum wide;
    small_pair pair;
    const int* ptr;

    static mixed make(int src, int dst, int k, const int* p) {
        const auto s = static_cast<std::uint64_t>(src), d = static_cast<std::uint64_t>(dst);
        mixed m{};
        m.i8 = static_cast<std::int8_t>(k % 2 ? -128 : 127 - src % 100);
        m.u8 = static_cast<std::uint8_t>(255 - dst % 200);
        m.i16 = static_cast<std::int16_t>(-32768 + src);
        m.u16 = static_cast<std::uint16_t>(65535 - dst);
        m.i32 = std::numeric_limits<std::int32_t>::min() + src * 1000 + dst;
        m.u32 = 0xfffffff0u + static_cast<std::uint32_t>(k % 16);
        m.i64 = -static_cast<std::int64_t>(am_test::mix(s * 1000 + d) >> 2);
        m.ptr_bits = reinterpret_cast<std::uintptr_t>(p) ^ am_test::mix(s);
        m.f64 = k % 3 == 0 ? -0.0 : (k % 3 == 1 ? 1e-310 : 3.5 + src - dst * 0.25);
        m.f32 = static_cast<float>(src) * 1.5f - 1e30f;
        m.flag = (src + dst + k) % 2 == 1;
        m.ch = static_cast<char>('A' + (src + dst) % 26);
        m.col = k % 3 == 0 ? color::red : (k % 3 == 1 ? color::green : color::blue);
        m.wide = k % 2 ? wide_low : wide_one;
        m.pair = {static_cast<std::int16_t>(-src), static_cast<std::int8_t>(dst % 100),
                  static_cast<std::uint8_t>(k), 0.5f * static_cast<float>(k)};
        m.ptr = p;
        return m;
    }
};

void expect_same(const mixed& got, const mixed& want, bool check_ptr) {
    EXPECT_EQ(got.i8, want.i8);
    EXPECT_EQ(got.u8, want.u8);
    EXPECT_EQ(got.i16, want.i16);
    EXPECT_EQ(got.u16, want.u16);
    EXPECT_EQ(got.i32, want.i32);
    EXPECT_EQ(got.u32, want.u32);
    EXPECT_EQ(got.i64, want.i64);
    EXPECT_EQ(got.ptr_bits, want.ptr_bits);
    EXPECT_EQ(std::memcmp(&got.f64, &want.f64, sizeof(double)), 0) << got.f64 << " vs " << want.f64;
    EXPECT_EQ(got.f32, want.f32);
    EXPECT_EQ(got.flag, want.flag);
    EXPECT_EQ(got.ch, want.ch);
    EXPECT_EQ(got.col, want.col);
    EXPECT_EQ(got.wide, want.wide);
    EXPECT_EQ(got.pair, want.pair);
    if (check_ptr) {
        EXPECT_EQ(got.ptr, want.ptr);
    }
}

TEST_P(short_am, sixteen_mixed_args) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size();
        const int rounds = n > 16 ? 2 : 6;
        int anchor = 0;  // its address travels as a pointer argument and comes back
        am::counter got(ctx), echoed(ctx);
        auto echo =
            ctx.handler([&](am::token& t, std::int8_t i8, std::uint8_t u8, std::int16_t i16,
                            std::uint16_t u16, std::int32_t i32, std::uint32_t u32,
                            std::int64_t i64, std::uint64_t pb, double f64, float f32, bool flag,
                            char ch, color col, wide_enum wide, small_pair pair, const int* ptr) {
                const int k = pair.c;
                const mixed want = mixed::make(ctx.rank(), t.source(), k, &anchor);
                expect_same(
                    {i8, u8, i16, u16, i32, u32, i64, pb, f64, f32, flag, ch, col, wide, pair, ptr},
                    want, true);
                echoed.add();
            });
        auto take = ctx.handler([&, echo](am::token& t, std::int8_t i8, std::uint8_t u8,
                                          std::int16_t i16, std::uint16_t u16, std::int32_t i32,
                                          std::uint32_t u32, std::int64_t i64, std::uint64_t pb,
                                          double f64, float f32, bool flag, char ch, color col,
                                          wide_enum wide, small_pair pair, const int* ptr) {
            const int k = pair.c;
            const mixed want = mixed::make(t.source(), ctx.rank(), k, ptr);
            expect_same(
                {i8, u8, i16, u16, i32, u32, i64, pb, f64, f32, flag, ch, col, wide, pair, ptr},
                want, false);
            got.add();
            // Echo the sender's values back unchanged, pointer included.
            t.reply(echo, i8, u8, i16, u16, i32, u32, i64, pb, f64, f32, flag, ch, col, wide, pair,
                    ptr);
        });
        ctx.barrier();
        for (int k = 0; k < rounds; ++k) {
            for (int d = 0; d < n; ++d) {
                const mixed m = mixed::make(ctx.rank(), d, k, &anchor);
                ctx.request(d, take, m.i8, m.u8, m.i16, m.u16, m.i32, m.u32, m.i64, m.ptr_bits,
                            m.f64, m.f32, m.flag, m.ch, m.col, m.wide, m.pair, m.ptr);
            }
        }
        const auto expected = static_cast<std::uint64_t>(rounds * n);
        got.wait(expected);
        echoed.wait(expected);
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(short_am, am_test::all_params());

}  // namespace
