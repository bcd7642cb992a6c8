// SPDX-License-Identifier: MIT
// am::rpc (include/am/rpc.hpp): functions with no arguments, 8-byte arguments and results
// (the short-message path, up to its 15 parameters, and the medium path past it),
// std::string, std::vector, std::span<const T> parameters, a user type with an
// am::serializer specialisation; registered lambdas; rpc_ff; functions taking am::context&;
// nested calls (A calls B calls C, and a chain around every rank, 64 on threads); remote
// exceptions; calls to unregistered functions; arguments too large. Some with a progress thread.
#include "oam/oam_support.hpp"

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <numeric>
#include <span>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

// A user type that is not trivially copyable, sent through its own serializer.
struct shape {
    std::string name;
    std::vector<double> xs;
    std::uint16_t sides = 0;
    bool operator==(const shape&) const = default;
};

template <>
struct am::serializer<shape> {
    static void write(am::serial_writer& w, const shape& s) {
        am::serializer<std::string>::write(w, s.name);
        am::serializer<std::vector<double>>::write(w, s.xs);
        am::serializer<std::uint16_t>::write(w, s.sides);
    }
    static shape read(am::serial_reader& r) {
        shape s;
        s.name = am::serializer<std::string>::read(r);
        s.xs = am::serializer<std::vector<double>>::read(r);
        s.sides = am::serializer<std::uint16_t>::read(r);
        return s;
    }
};

namespace {

using namespace am_oam_test;

class oam_rpc : public oam_test {};

std::uint64_t rank_u(const am::context& ctx) {
    return static_cast<std::uint64_t>(ctx.rank());
}

// ------------------------------------------------------------------------ remote functions

int rpc_seven() {
    return 7;
}
void rpc_nothing() {}
int rpc_rank_of(am::context& ctx) {
    return ctx.rank();
}
std::uint64_t rpc_mix(std::uint64_t x) {
    return am_test::mix(x);
}
double rpc_scale(double x, std::int32_t k, char c) {
    return x * k + c;
}
std::int64_t rpc_negate(am::context& ctx, std::int64_t x) {
    return -x - ctx.rank();
}
bool rpc_is_even(std::uint16_t v) {
    return v % 2 == 0;
}
struct pair8 {
    std::uint32_t a;
    float b;
};
pair8 rpc_swap(pair8 p) {
    return {static_cast<std::uint32_t>(p.b), static_cast<float>(p.a)};
}
struct quad {  // trivially copyable, 32 bytes: travels as a medium message
    std::uint64_t v[4];
};
quad rpc_rotate(am::context& ctx, quad q) {
    return {{q.v[1], q.v[2], q.v[3], q.v[0] + rank_u(ctx)}};
}
#define AM_P8 std::uint64_t
std::uint64_t rpc_fifteen(AM_P8 a0, AM_P8 a1, AM_P8 a2, AM_P8 a3, AM_P8 a4, AM_P8 a5, AM_P8 a6,
                          AM_P8 a7, AM_P8 a8, AM_P8 a9, AM_P8 a10, AM_P8 a11, AM_P8 a12, AM_P8 a13,
                          AM_P8 a14) {
    const std::uint64_t a[] = {a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14};
    std::uint64_t h = 0;
    for (std::uint64_t x : a) h = h * 31 + x;
    return h;
}
std::uint64_t rpc_sixteen(AM_P8 a0, AM_P8 a1, AM_P8 a2, AM_P8 a3, AM_P8 a4, AM_P8 a5, AM_P8 a6,
                          AM_P8 a7, AM_P8 a8, AM_P8 a9, AM_P8 a10, AM_P8 a11, AM_P8 a12, AM_P8 a13,
                          AM_P8 a14, AM_P8 a15) {
    return rpc_fifteen(a0, a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14) * 31 + a15;
}
#undef AM_P8

std::string rpc_greet(am::context& ctx, std::string who) {
    return "hello " + who + " from rank " + std::to_string(ctx.rank());
}
std::string rpc_repeat(const std::string& s, std::uint32_t times) {
    std::string out;
    for (std::uint32_t i = 0; i < times; ++i) out += s;
    return out;
}
std::vector<std::int32_t> rpc_reverse(std::vector<std::int32_t> v) {
    return {v.rbegin(), v.rend()};
}
std::vector<std::string> rpc_words(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string w; in >> w;) out.push_back(w);
    return out;
}
std::string rpc_join(std::vector<std::string> words, char sep) {
    std::string out;
    for (std::size_t i = 0; i < words.size(); ++i)
        out += (i != 0 ? std::string(1, sep) : "") + words[i];
    return out;
}
std::uint64_t rpc_span_sum(std::span<const std::uint64_t> s) {
    return std::accumulate(s.begin(), s.end(), std::uint64_t{0});
}
// Mixed element types after a one-byte value: each span must arrive aligned for its type.
std::string rpc_spans(std::uint8_t tag, std::span<const double> a, std::span<const std::int16_t> b,
                      std::span<const char> text) {
    const bool aligned = reinterpret_cast<std::uintptr_t>(a.data()) % alignof(double) == 0 &&
                         reinterpret_cast<std::uintptr_t>(b.data()) % alignof(std::int16_t) == 0;
    double sa = 0;
    for (double x : a) sa += x;
    long sb = 0;
    for (std::int16_t x : b) sb += x;
    return std::to_string(tag) + ":" + std::to_string(sa) + ":" + std::to_string(sb) + ":" +
           std::string(text.begin(), text.end()) + (aligned ? "" : ":misaligned");
}
shape rpc_grow(am::context& ctx, shape s) {
    s.name += "@" + std::to_string(ctx.rank());
    for (double& x : s.xs) x *= 2;
    ++s.sides;
    return s;
}
std::size_t rpc_size_of(std::vector<std::byte> v) {
    return v.size();
}

// Nested calls.
std::uint64_t rpc_ring(am::context& ctx, std::uint32_t hops, std::uint64_t acc) {
    acc = acc * 1000003 + rank_u(ctx) + 1;
    if (hops == 0) return acc;
    return am::rpc<&rpc_ring>(ctx, right_of(ctx), hops - 1, acc).get();
}
std::uint64_t rpc_c(am::context& ctx, std::uint64_t x) {
    return x * 3 + rank_u(ctx);
}
std::vector<std::uint64_t> rpc_b(am::context& ctx, std::vector<std::uint64_t> xs) {
    std::vector<am::future<std::uint64_t>> fs;
    for (std::uint64_t x : xs) fs.push_back(am::rpc<&rpc_c>(ctx, right_of(ctx), x));
    return am::when_all(ctx, fs).get();
}
std::string rpc_a(am::context& ctx, std::string s) {
    std::vector<std::uint64_t> xs(s.begin(), s.end());
    const std::vector<std::uint64_t> ys = am::rpc<&rpc_b>(ctx, right_of(ctx), xs).get();
    std::string out = std::to_string(ctx.rank());
    for (std::uint64_t y : ys) out += "," + std::to_string(y);
    return out;
}

// Exceptions.
int rpc_fail(int code) {
    throw std::runtime_error("deliberate failure " + std::to_string(code));
}
void rpc_fail_void(std::string why) {
    throw std::invalid_argument("void failure: " + why);
}
int rpc_fail_am(int) {
    throw am::error(am::errc::out_of_segment, "an am::error thrown remotely");
}
int rpc_fail_nested(am::context& ctx, int code) {
    return am::rpc<&rpc_fail>(ctx, right_of(ctx), code).get() + 1;
}

// A ping-pong of nested calls between ranks 0 and 1 (rank 0 with itself alone), 10 000 deep:
// config::oam_max_threads stops it first.
std::uint64_t rpc_pingpong(am::context& ctx, std::uint32_t depth) {
    if (depth == 10000) return 0;
    const int other = ctx.size() > 1 ? ctx.rank() ^ 1 : 0;
    return am::rpc<&rpc_pingpong>(ctx, other, depth + 1).get() + 1;
}

// Never registered.
int rpc_never_registered(int v) {
    return v;
}

// Fire-and-forget: a board per rank of this process (ranks of other processes use their own).
std::array<std::atomic<std::uint64_t>, 64> ff_sum;
std::array<std::atomic<std::uint64_t>, 64> ff_calls;
void rpc_ff_add(am::context& ctx, std::uint64_t v) {
    ff_sum[static_cast<std::size_t>(ctx.rank())] += v;
    ++ff_calls[static_cast<std::size_t>(ctx.rank())];
}
void rpc_ff_text(am::context& ctx, std::string s) {
    ff_sum[static_cast<std::size_t>(ctx.rank())] += s.size();
    ++ff_calls[static_cast<std::size_t>(ctx.rank())];
}

// Targets: the right neighbour, the rank opposite and this rank itself.
std::vector<int> targets_of(const am::context& ctx) {
    const int n = ctx.size(), me = ctx.rank();
    return {right_of(ctx), (me + n / 2) % n, me};
}

// ---------------------------------------------------------------------------------- tests

void scalars(am::context& ctx) {
    register_rpcs<&rpc_seven, &rpc_nothing, &rpc_rank_of, &rpc_mix, &rpc_scale, &rpc_negate,
                  &rpc_is_even, &rpc_swap, &rpc_rotate, &rpc_fifteen, &rpc_sixteen>(ctx);
    const std::uint64_t me = rank_u(ctx);
    for (int t : targets_of(ctx)) {
        const auto tu = static_cast<std::uint64_t>(t);
        // Everything in flight at once, then the results.
        auto f7 = am::rpc<&rpc_seven>(ctx, t);
        auto fv = am::rpc<&rpc_nothing>(ctx, t);
        auto fr = am::rpc<&rpc_rank_of>(ctx, t);
        auto fm = am::rpc<&rpc_mix>(ctx, t, me + 99);
        auto fs = am::rpc<&rpc_scale>(ctx, t, 1.5, -4, 'a');
        auto fn = am::rpc<&rpc_negate>(ctx, t, std::int64_t{1} << 40);
        auto fe = am::rpc<&rpc_is_even>(ctx, t, std::uint16_t{6});
        auto fo = am::rpc<&rpc_is_even>(ctx, t, std::uint16_t{7});
        auto fp = am::rpc<&rpc_swap>(ctx, t, pair8{12, 34.0f});
        auto fq = am::rpc<&rpc_rotate>(ctx, t, quad{{1, 2, 3, 4}});
        auto f15 = am::rpc<&rpc_fifteen>(ctx, t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, me);
        auto f16 =
            am::rpc<&rpc_sixteen>(ctx, t, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, me, tu);
        static_assert(std::is_same_v<decltype(f7), am::future<int>>);
        static_assert(std::is_same_v<decltype(fv), am::future<void>>);
        EXPECT_EQ(f7.get(), 7);
        fv.get();
        EXPECT_EQ(fr.get(), t);
        EXPECT_EQ(fm.get(), am_test::mix(me + 99));
        EXPECT_EQ(fs.get(), 1.5 * -4 + 'a');
        EXPECT_EQ(fn.get(), -(std::int64_t{1} << 40) - t);
        EXPECT_TRUE(fe.get());
        EXPECT_FALSE(fo.get());
        const pair8 p = fp.get();
        EXPECT_EQ(p.a, 34u);
        EXPECT_EQ(p.b, 12.0f);
        const quad q = fq.get();
        EXPECT_EQ(q.v[0], 2u);
        EXPECT_EQ(q.v[3], 1 + tu);
        const std::uint64_t h15 = rpc_fifteen(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, me);
        EXPECT_EQ(f15.get(), h15);
        EXPECT_EQ(f16.get(), h15 * 31 + tu);
    }
    ctx.quiesce();
}

AM_OAM_TEST_BOTH(oam_rpc, scalar_arguments_and_results, scalars)

TEST_P(oam_rpc, strings_and_vectors) {
    run_ok([](am::context& ctx) {
        register_rpcs<&rpc_greet, &rpc_repeat, &rpc_reverse, &rpc_words, &rpc_join>(ctx);
        for (int t : targets_of(ctx)) {
            const std::string rt = std::to_string(t);
            EXPECT_EQ(am::rpc<&rpc_greet>(ctx, t, std::string("you")).get(),
                      "hello you from rank " + rt);
            EXPECT_EQ(am::rpc<&rpc_greet>(ctx, t, "").get(), "hello  from rank " + rt);
            EXPECT_EQ(am::rpc<&rpc_repeat>(ctx, t, std::string("ab"), 3u).get(), "ababab");
            EXPECT_EQ(am::rpc<&rpc_repeat>(ctx, t, std::string("x"), 0u).get(), "");
            // A result of 20000 bytes.
            EXPECT_EQ(am::rpc<&rpc_repeat>(ctx, t, std::string("0123456789"), 2000u).get().size(),
                      20000u);
            std::vector<std::int32_t> v(3000);
            std::iota(v.begin(), v.end(), -1000 + t);
            const std::vector<std::int32_t> want(v.rbegin(), v.rend());
            EXPECT_EQ(am::rpc<&rpc_reverse>(ctx, t, v).get(), want);
            EXPECT_TRUE(am::rpc<&rpc_reverse>(ctx, t, std::vector<std::int32_t>{}).get().empty());
            EXPECT_EQ(am::rpc<&rpc_words>(ctx, t, std::string(" one two  three ")).get(),
                      (std::vector<std::string>{"one", "two", "three"}));
            EXPECT_EQ(
                am::rpc<&rpc_join>(ctx, t, std::vector<std::string>{"a", "", "bc"}, '-').get(),
                "a--bc");
        }
        ctx.quiesce();
    });
}

TEST_P(oam_rpc, span_parameters) {
    run_ok([](am::context& ctx) {
        register_rpcs<&rpc_span_sum, &rpc_spans>(ctx);
        std::vector<std::uint64_t> v(1000);
        std::iota(v.begin(), v.end(), rank_u(ctx));
        const std::uint64_t want = std::accumulate(v.begin(), v.end(), std::uint64_t{0});
        const std::vector<double> a = {0.5, 1.5, 2.0};
        const std::vector<std::int16_t> b = {-3, 4, 1000};
        const std::string text = "span text";
        for (int t : targets_of(ctx)) {
            EXPECT_EQ(am::rpc<&rpc_span_sum>(ctx, t, v).get(), want);
            EXPECT_EQ(
                am::rpc<&rpc_span_sum>(ctx, t, std::span<const std::uint64_t>(v).subspan(10, 5))
                    .get(),
                5 * rank_u(ctx) + 10 + 11 + 12 + 13 + 14);
            EXPECT_EQ(am::rpc<&rpc_span_sum>(ctx, t, std::span<const std::uint64_t>()).get(), 0u);
            EXPECT_EQ(am::rpc<&rpc_spans>(ctx, t, std::uint8_t{9}, a, b,
                                          std::span<const char>(text.data(), text.size()))
                          .get(),
                      "9:" + std::to_string(4.0) + ":1001:span text");
        }
        ctx.quiesce();
    });
}

TEST_P(oam_rpc, user_type_serializer) {
    run_ok([](am::context& ctx) {
        register_rpcs<&rpc_grow>(ctx);
        const shape s{"tri" + std::to_string(ctx.rank()), {1.0, -2.5, 3.25}, 3};
        for (int t : targets_of(ctx)) {
            const shape got = am::rpc<&rpc_grow>(ctx, t, s).get();
            EXPECT_EQ(got, (shape{s.name + "@" + std::to_string(t), {2.0, -5.0, 6.5}, 4}));
        }
        ctx.quiesce();
    });
}

TEST_P(oam_rpc, registered_lambdas) {
    run_ok([](am::context& ctx) {
        const int me = ctx.rank(), from = left_of(ctx);
        std::atomic<int> calls{0};
        am::counter ff(ctx);
        std::atomic<std::uint64_t> ff_total{0};
        const std::string tag = "r" + std::to_string(me);
        auto concat = am::rpc_register(ctx, [&calls, tag](std::string s, int k) {
            ++calls;
            return s + "/" + tag + "/" + std::to_string(k);
        });
        auto where =
            am::rpc_register(ctx, [](am::context& c, std::uint64_t x) { return x + rank_u(c); });
        auto count_ff = am::rpc_register(ctx, [&](std::uint64_t v) {
            ff_total += v;
            ff.add();
        });
        auto void_result = am::rpc_register(ctx, [&](std::string s) { ff_total += s.size(); });
        static_assert(std::is_same_v<decltype(concat), am::remote<std::string(std::string, int)>>);
        static_assert(std::is_same_v<decltype(where), am::remote<std::uint64_t(std::uint64_t)>>);
        ctx.barrier();
        const int r = right_of(ctx);
        EXPECT_EQ(am::rpc(ctx, r, concat, std::string("x"), 3).get(),
                  "x/r" + std::to_string(r) + "/3");
        EXPECT_EQ(am::rpc(ctx, r, where, std::uint64_t{10}).get(), 10u + static_cast<unsigned>(r));
        for (int k = 0; k < 5; ++k)
            am::rpc_ff(ctx, r, count_ff, static_cast<std::uint64_t>(me + 1));
        wait_count(ctx, ff, 5, "fire-and-forget calls");
        EXPECT_EQ(ff_total.load(), 5u * static_cast<unsigned>(from + 1));
        ctx.barrier();  // every rank has read ff_total
        am::rpc(ctx, r, void_result, std::string("four")).get();
        ctx.quiesce();
        EXPECT_EQ(calls.load(), 1);
        EXPECT_EQ(ff_total.load(), 5u * static_cast<unsigned>(from + 1) + 4u);
    });
}

TEST_P(oam_rpc, fire_and_forget) {
    run_ok([](am::context& ctx) {
        const auto me = static_cast<std::size_t>(ctx.rank());
        const auto from = static_cast<std::uint64_t>(left_of(ctx));
        ff_sum[me] = 0;
        ff_calls[me] = 0;
        register_rpcs<&rpc_ff_add, &rpc_ff_text>(ctx);
        const int r = right_of(ctx);
        for (std::uint64_t k = 0; k < 10; ++k) am::rpc_ff<&rpc_ff_add>(ctx, r, me * 100 + k);
        am::rpc_ff<&rpc_ff_text>(ctx, r, std::string(1000 + me, 'z'));
        wait_until(
            ctx, [&] { return ff_calls[me].load() == 11; }, "fire-and-forget calls");
        EXPECT_EQ(ff_sum[me].load(), from * 1000 + 45 + 1000 + from);
        ctx.quiesce();
        EXPECT_EQ(ff_calls[me].load(), 11u);
    });
}

// A chain of calls around every rank (64 hops on threads np64), each hop waiting for the next.
void ring_chain(am::context& ctx, bool exact) {
    const int n = ctx.size(), me = ctx.rank();
    am::rpc_register<&rpc_ring>(ctx);
    // Before the barrier: after it, messages of faster ranks may already run here.
    const am::oam_stats before = am::optimistic_stats(ctx);
    ctx.barrier();
    const std::uint64_t seed = 17 + rank_u(ctx);
    auto f = am::rpc<&rpc_ring>(ctx, right_of(ctx), static_cast<std::uint32_t>(n - 1), seed);
    std::uint64_t want = seed;
    for (int k = 1; k <= n; ++k)
        want = want * 1000003 + static_cast<std::uint64_t>((me + k) % n) + 1;
    EXPECT_EQ(f.get(), want);
    ctx.quiesce();
    const auto d = gained(before, am::optimistic_stats(ctx));
    EXPECT_EQ(d.handlers, static_cast<std::uint64_t>(n)) << "one hop of every rank's chain";
    // Every hop but the last of each chain waits for the next one.
    if (exact) {
        EXPECT_EQ(d.blocked, static_cast<std::uint64_t>(n - 1));
    }
}

TEST_P(oam_rpc, nested_chain_around_all_ranks) {
    ASSERT_EQ(run([](am::context& ctx) { ring_chain(ctx, true); }), 0);
}

TEST_P(oam_rpc, nested_chain_around_all_ranks_progress_thread) {
    ASSERT_EQ(run([](am::context& ctx) { ring_chain(ctx, false); }, progress_thread), 0);
}

// A (string) calls B (vector) on the next rank, which calls C on the rank after that for each
// element at once and waits for all of them.
TEST_P(oam_rpc, nested_a_b_c) {
    run_ok([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        register_rpcs<&rpc_a, &rpc_b, &rpc_c>(ctx);
        const std::string s = "abc" + std::to_string(me);
        const int ra = right_of(ctx), rc_rank = (me + 3) % n;
        std::string want = std::to_string(ra);
        for (char c : s) {
            want += "," + std::to_string(static_cast<std::uint64_t>(c) * 3 +
                                         static_cast<std::uint64_t>(rc_rank));
        }
        EXPECT_EQ(am::rpc<&rpc_a>(ctx, ra, s).get(), want);
        ctx.quiesce();
    });
}

TEST_P(oam_rpc, remote_exceptions) {
    run_ok([](am::context& ctx) {
        register_rpcs<&rpc_fail, &rpc_fail_void, &rpc_fail_am, &rpc_fail_nested, &rpc_seven>(ctx);
        const int r = right_of(ctx);
        const std::string rank_r = "rank " + std::to_string(r);
        auto f = am::rpc<&rpc_fail>(ctx, r, 17);
        f.wait();
        EXPECT_TRUE(f.ready());
        expect_error([&] { (void)f.get(); }, am::errc::remote,
                     {"deliberate failure 17", "rpc_fail", rank_r});
        expect_error([&] { am::rpc<&rpc_fail_void>(ctx, r, std::string("because")).get(); },
                     am::errc::remote, {"void failure: because", "rpc_fail_void", rank_r});
        expect_error([&] { (void)am::rpc<&rpc_fail_am>(ctx, r, 1).get(); }, am::errc::remote,
                     {"an am::error thrown remotely", "rpc_fail_am", rank_r});
        // C throws, B's get() throws errc::remote and lets it go, A sees the original text.
        expect_error([&] { (void)am::rpc<&rpc_fail_nested>(ctx, r, 23).get(); }, am::errc::remote,
                     {"deliberate failure 23", "rpc_fail_nested"});
        // An exception in a continuation of a failed call's future.
        auto chained = am::rpc<&rpc_fail>(ctx, r, 5).then([](int v) { return v + 1; });
        expect_error([&] { (void)chained.get(); }, am::errc::remote, {"deliberate failure 5"});
        // The ranks carry on.
        EXPECT_EQ(am::rpc<&rpc_seven>(ctx, r).get(), 7);
        ctx.quiesce();
    });
}

TEST_P(oam_rpc, unregistered_function) {
    run_ok([](am::context& ctx) {
        am::counter got(ctx);
        auto counted = am::rpc_register(ctx, [&](int) {
            got.add();
            return 1;
        });
        ctx.barrier();
        const int r = right_of(ctx);
        expect_error([&] { (void)am::rpc<&rpc_never_registered>(ctx, r, 1); },
                     am::errc::bad_handler, {"rpc_never_registered"});
        expect_error([&] { am::rpc_ff<&rpc_never_registered>(ctx, r, 1); }, am::errc::bad_handler,
                     {"rpc_never_registered"});
        const am::remote<int(int)> none;
        expect_error([&] { (void)am::rpc(ctx, r, none, 1); }, am::errc::bad_handler, {});
        EXPECT_EQ(am::rpc(ctx, r, counted, 1).get(), 1);
        ctx.quiesce();
        EXPECT_EQ(got.value(), 1u) << "a refused call was sent";
    });
}

// Arguments larger than a medium message are sent ahead in parts and arrive whole, also from
// a handler; above config::max_payload (here 200000 bytes) the call is refused before
// anything is sent, naming the function and the limit.
TEST_P(oam_rpc, large_arguments_travel_in_parts) {
    run_ok(
        [](am::context& ctx) {
            std::atomic<int> served{0};
            am::rpc_register<&rpc_size_of>(ctx);
            auto checksum = am::rpc_register(ctx, [&](std::string s) {
                ++served;
                std::uint64_t h = s.size();
                for (const char c : s) h = h * 31 + static_cast<unsigned char>(c);
                return h;
            });
            am::counter in_handler(ctx);
            std::atomic<std::size_t> handler_got{0};
            auto from_handler = am::optimistic_handler(ctx, [&](am::token&) {
                const std::vector<std::byte> big(2 * ctx.max_medium() + 5);
                handler_got = am::rpc<&rpc_size_of>(ctx, right_of(ctx), big).get();
                in_handler.add();
            });
            ctx.barrier();
            const int r = right_of(ctx);
            const std::size_t max = ctx.max_medium();
            // A vector travels as its 8-byte length and its bytes: max - 8 fits one message.
            for (const std::size_t n : {max - 8, max - 7, 3 * max + 1}) {
                EXPECT_EQ(am::rpc<&rpc_size_of>(ctx, r, std::vector<std::byte>(n)).get(), n);
            }
            std::string text(3 * max + 17, ' ');
            for (std::size_t k = 0; k < text.size(); ++k) text[k] = static_cast<char>('a' + k % 23);
            std::uint64_t want = text.size();
            for (const char c : text) want = want * 31 + static_cast<unsigned char>(c);
            EXPECT_EQ(am::rpc(ctx, r, checksum, text).get(), want);
            const std::string limit = "200000";  // a vector's 8-byte length + 199992 fit
            EXPECT_EQ(am::rpc<&rpc_size_of>(ctx, r, std::vector<std::byte>(199992)).get(), 199992u);
            expect_error(
                [&] { (void)am::rpc<&rpc_size_of>(ctx, r, std::vector<std::byte>(199993)); },
                am::errc::too_large, {"rpc_size_of", limit, "AM_MAX_PAYLOAD"});
            expect_error([&] { am::rpc_ff<&rpc_size_of>(ctx, r, std::vector<std::byte>(300000)); },
                         am::errc::too_large, {"rpc_size_of", limit});
            expect_error([&] { (void)am::rpc(ctx, r, checksum, std::string(200000, 's')); },
                         am::errc::too_large, {limit});
            ctx.request(ctx.rank(), from_handler);
            wait_count(ctx, in_handler, 1, "the handler's large call");
            EXPECT_EQ(handler_got.load(), 2 * max + 5);
            ctx.quiesce();
            EXPECT_EQ(served.load(), 1) << "a refused call was sent";
        },
        [](am::config& cfg) { cfg.max_payload = 200000; });
}

// A result larger than a medium message comes back in parts; one over config::max_payload (here
// 150000 bytes)
// reaches get() as errc::remote naming the function and errc::too_large; the call after it works.
TEST_P(oam_rpc, large_results_travel_in_parts) {
    run_ok(
        [](am::context& ctx) {
            register_rpcs<&rpc_repeat>(ctx);
            const int r = right_of(ctx);
            const std::size_t max = ctx.max_medium();
            const auto times = static_cast<std::uint32_t>(max / 10 + 1);
            const std::string got =
                am::rpc<&rpc_repeat>(ctx, r, std::string("0123456789"), times).get();
            ASSERT_EQ(got.size(), 10u * times);
            EXPECT_EQ(got.substr(got.size() - 12), "890123456789");
            try {
                (void)am::rpc<&rpc_repeat>(ctx, r, std::string("0123456789"), 15001u).get();
                ADD_FAILURE() << "a result over the payload limit arrived";
            } catch (const am::error& e) {
                const std::string what = e.what();
                EXPECT_EQ(e.code(), am::errc::remote);
                EXPECT_TRUE(am_test::contains(what, "rpc_repeat on rank " + std::to_string(r)))
                    << what;
                EXPECT_TRUE(am_test::contains(what, "AM_MAX_PAYLOAD")) << what;
                EXPECT_TRUE(am_test::contains(
                    what, "am::errc " + std::to_string(static_cast<int>(am::errc::too_large))))
                    << what;
            }
            EXPECT_EQ(am::rpc<&rpc_repeat>(ctx, r, std::string("ab"), 2u).get(), "abab");
            ctx.quiesce();
        },
        [](am::config& cfg) { cfg.max_payload = 150000; });
}

// Nested calls that fail deep down (a ping-pong between ranks 0 and 1 stopped by
// config::oam_max_threads after 400 blocked calls per rank): the caller's error keeps both ends —
// the outermost call and the innermost cause, the limit's name — within 8 KiB. Before, the text was
// cut at max_medium() from its end, so the cause was lost in 64 KiB of "remote function ...
// threw:".
TEST_P(oam_rpc, nested_failure_keeps_innermost_cause) {
    constexpr std::size_t limit = 400;
    run_ok(
        [](am::context& ctx) {
            register_rpcs<&rpc_pingpong>(ctx);
            if (ctx.rank() == 0) {
                try {
                    (void)am::rpc<&rpc_pingpong>(ctx, ctx.size() > 1 ? 1 : 0, 0u).get();
                    ADD_FAILURE() << "the ping-pong ended by itself";
                } catch (const am::error& e) {
                    const std::string what = e.what();
                    EXPECT_EQ(e.code(), am::errc::remote);
                    EXPECT_LE(what.size(), std::size_t{8192} + 256);
                    EXPECT_TRUE(am_test::contains(what, "rpc_pingpong on rank "))
                        << what.substr(0, 400);
                    EXPECT_TRUE(am_test::contains(what, "AM_OAM_MAX_THREADS"))
                        << what.substr(what.size() - std::min<std::size_t>(what.size(), 400));
                    // The count adds up every level's cut: hundreds of levels of ~120 bytes.
                    const auto at = what.find(" [... ");
                    ASSERT_NE(at, std::string::npos) << what.substr(0, 400);
                    const std::uint64_t left_out = std::stoull(what.substr(at + 6));
                    EXPECT_GE(left_out, 20000u) << what.substr(at, 80);
                    EXPECT_TRUE(am_test::contains(what, "bytes of nested failures left out"));
                }
            }
            ctx.quiesce();
        },
        [](am::config& cfg) { cfg.oam_max_threads = limit; });
}

AM_INSTANTIATE(oam_rpc, am_test::all_params());

class oam_rpc_failure : public oam_test {};

void rpc_ff_throws(am::context& ctx, int code) {
    throw std::runtime_error("fire-and-forget failure " + std::to_string(code) + " on rank " +
                             std::to_string(ctx.rank()));
}

// An exception of a fire-and-forget call fails the job, as a handler's would. Not on mpi: a
// failing job there is mpiexec's to report (tests/core/failure_test.cpp).
TEST_P(oam_rpc_failure, fire_and_forget_exception_fails_job) {
    ::testing::internal::CaptureStderr();
    const int rc = run([](am::context& ctx) {
        register_rpcs<&rpc_ff_throws>(ctx);
        if (ctx.rank() == 0) am::rpc_ff<&rpc_ff_throws>(ctx, ctx.size() - 1, 42);
        am::counter never(ctx);
        never.wait(1);
    });
    const std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_NE(rc, 0);
    EXPECT_TRUE(
        am_test::contains(err, "fire-and-forget failure 42 on rank " + std::to_string(ranks() - 1)))
        << err;
}

AM_INSTANTIATE(oam_rpc_failure, am_test::without_mpi(am_test::all_params()));

}  // namespace
