// SPDX-License-Identifier: MIT
// Stress: all-to-all requests with checksummed payloads through tiny rings; every request
// handler replies and sends a nested request to the next rank, whose handler replies too.
// Four messages per root request; exact counts and checksums are asserted on every rank.
// The number of messages comes from AM_STRESS_MESSAGES (default 10^7 on both transports;
// sanitizer builds set smaller values through CTest).
#include "support/spmd.hpp"

#include <cstdio>
#include <cstdlib>

namespace {

using am_test::spmd_test;

std::uint64_t messages_wanted(std::uint64_t fallback) {
    if (const char* v = std::getenv("AM_STRESS_MESSAGES")) {
        const auto n = std::strtoull(v, nullptr, 10);
        if (n > 0) return n;
    }
    return fallback;
}

// Root request i of rank s: destination, kind and checksum are functions of (s, i).
struct root {
    int dest;
    bool medium;
    std::size_t len;
    std::uint64_t sum;  // checksum argument (short) or payload checksum (medium)
};

root root_of(int s, std::uint64_t i, int n) {
    root r{};
    r.dest = static_cast<int>((static_cast<std::uint64_t>(s) + i) % static_cast<std::uint64_t>(n));
    const std::uint64_t h = am_test::mix((static_cast<std::uint64_t>(s) << 48) ^ i);
    r.medium = (h & 1) != 0;
    r.len = r.medium ? 1 + (h >> 8) % 160 : 0;
    r.sum = h;
    return r;
}

// The payload of a medium root: bytes derived from the root's hash.
void payload_of(const root& r, std::vector<std::byte>& out) {
    out.resize(r.len);
    std::uint64_t x = r.sum;
    for (std::size_t i = 0; i < r.len; ++i) {
        if ((i & 7) == 0) x = am_test::mix(x);
        out[i] = static_cast<std::byte>(x >> ((i & 7) * 8));
    }
}

std::uint64_t fold(std::span<const std::byte> p) noexcept {  // fast position-sensitive checksum
    std::uint64_t h = 0x84222325cbf29ce4ull ^ p.size();
    std::size_t i = 0;
    for (; i + 8 <= p.size(); i += 8) {
        std::uint64_t w;
        std::memcpy(&w, p.data() + i, 8);
        h = (h ^ w) * 0x100000001b3ull;
        h ^= h >> 29;
    }
    for (; i < p.size(); ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ull;
    return h;
}

std::uint64_t nested_sum(int s, std::uint64_t i) {
    return am_test::mix(i * 0x9e3779b97f4a7c15ull + static_cast<std::uint64_t>(s));
}

struct rank_totals {
    std::uint64_t roots = 0, roots_sum = 0, nested = 0, nested_sum = 0;
};

void stress(am::context& ctx, std::uint64_t per_rank) {
    const int n = ctx.size(), me = ctx.rank();
    rank_totals got, want;
    std::uint64_t acks = 0, ack_sum = 0, nested_acks = 0, nested_ack_sum = 0, bad = 0;
    std::uint64_t nested_sent_sum = 0;
    auto ack = ctx.handler([&](am::token&, std::uint64_t sum) {
        ++acks;
        ack_sum += sum;
    });
    auto nested_ack = ctx.handler([&](am::token&, std::uint64_t sum) {
        ++nested_acks;
        nested_ack_sum += sum;
    });
    auto nested = ctx.handler(
        [&, nested_ack](am::token& t, std::int32_t s, std::uint64_t i, std::uint64_t sum) {
            if (sum != nested_sum(s, i) || t.source() != (me + n - 1) % n) ++bad;
            ++got.nested;
            got.nested_sum += sum;
            t.reply(nested_ack, sum);
        });
    auto on_root = [&, ack, nested](am::token& t, std::uint64_t i, std::uint64_t sum) {
        ++got.roots;
        got.roots_sum += sum;
        t.reply(ack, sum);
        const std::uint64_t ns = nested_sum(t.source(), i);
        nested_sent_sum += ns;
        t.ctx().request((me + 1) % n, nested, static_cast<std::int32_t>(t.source()), i, ns);
    };
    auto short_root = ctx.handler([&, on_root](am::token& t, std::uint64_t i, std::uint64_t sum) {
        if (root_of(t.source(), i, n).sum != sum) ++bad;
        on_root(t, i, sum);
    });
    auto medium_root = ctx.handler([&, on_root](am::token& t, std::span<const std::byte> p,
                                                std::uint64_t i, std::uint64_t sum) {
        if (fold(p) != sum) ++bad;
        on_root(t, i, sum);
    });
    ctx.barrier();

    std::vector<std::byte> buf;
    std::uint64_t sent_sum = 0;
    for (std::uint64_t i = 0; i < per_rank; ++i) {
        const root r = root_of(me, i, n);
        if (r.medium) {
            payload_of(r, buf);
            const std::uint64_t sum = fold(buf);
            sent_sum += sum;
            ctx.request(r.dest, medium_root, am::bytes(buf), i, sum);
        } else {
            sent_sum += r.sum;
            ctx.request(r.dest, short_root, i, r.sum);
        }
    }
    // What this rank must receive: roots addressed to it, nested requests for the roots its
    // left neighbour received.
    const int left = (me + n - 1) % n;
    for (int s = 0; s < n; ++s) {
        for (std::uint64_t i = 0; i < per_rank; ++i) {
            const int dest = static_cast<int>((static_cast<std::uint64_t>(s) + i) %
                                              static_cast<std::uint64_t>(n));
            if (dest != me && dest != left) continue;
            if (dest == me) {
                root r = root_of(s, i, n);
                if (r.medium) {
                    payload_of(r, buf);
                    r.sum = fold(buf);
                }
                ++want.roots;
                want.roots_sum += r.sum;
            }
            if (dest == left) {
                ++want.nested;
                want.nested_sum += nested_sum(s, i);
            }
        }
    }
    ctx.wait([&] {
        return got.roots == want.roots && got.nested == want.nested && acks == per_rank &&
               nested_acks == want.roots;
    });
    EXPECT_EQ(bad, 0u) << "messages with a wrong checksum or source";
    EXPECT_EQ(got.roots_sum, want.roots_sum);
    EXPECT_EQ(got.nested_sum, want.nested_sum);
    EXPECT_EQ(ack_sum, sent_sum);
    EXPECT_EQ(nested_ack_sum, nested_sent_sum);
    const am::stats st = ctx.stats();
    EXPECT_EQ(st.messages_sent, per_rank + 2 * want.roots + want.nested);
    EXPECT_EQ(st.messages_received, want.roots + want.nested + per_rank + want.roots);
    EXPECT_EQ(st.replies_sent, want.roots + want.nested);
    EXPECT_EQ(st.bad_headers, 0u);
    if (n > 1) {
        EXPECT_GT(st.credit_stalls, 0u) << "the rings were never full: not a stress";
    }
    std::fprintf(stderr,
                 "stress: rank %d: %llu roots sent, %llu received, %llu nested; %llu credit "
                 "stalls, %llu queued from handlers\n",
                 me, static_cast<unsigned long long>(per_rank),
                 static_cast<unsigned long long>(got.roots),
                 static_cast<unsigned long long>(got.nested),
                 static_cast<unsigned long long>(st.credit_stalls),
                 static_cast<unsigned long long>(st.queued_from_handlers));
    ctx.barrier();
}

class all_to_all : public spmd_test {};

TEST_P(all_to_all, nested_tiny_rings) {
    const std::uint64_t total = messages_wanted(10'000'000);
    // Four messages per root: the request, its reply, the nested request and its reply.
    const std::uint64_t per_rank =
        (total / 4 + static_cast<std::uint64_t>(ranks()) - 1) / static_cast<std::uint64_t>(ranks());
    std::fprintf(
        stderr, "stress: %llu messages on %d %s ranks\n",
        static_cast<unsigned long long>(4 * per_rank * static_cast<std::uint64_t>(ranks())),
        ranks(), am_test::transport_name(transport()));
    const auto t0 = std::chrono::steady_clock::now();
    const int rc = run([per_rank](am::context& ctx) { stress(ctx, per_rank); },
                       [](am::config& c) { c.ring_bytes = 1024; });
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::fprintf(stderr, "stress: %.2f s, %.2f M messages/s\n", s,
                 4.0 * static_cast<double>(per_rank) * ranks() / s / 1e6);
    ASSERT_EQ(rc, 0);
}

INSTANTIATE_TEST_SUITE_P(am, all_to_all,
                         ::testing::Values(am_test::spmd_param{am::transport_kind::threads, 4},
                                           am_test::spmd_param{am::transport_kind::shm, 4}),
                         am_test::param_name);

}  // namespace
