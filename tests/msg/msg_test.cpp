// SPDX-License-Identifier: MIT
// Over 500 lines on purpose: one file per layer's semantic suite keeps its fixtures and helpers
// in one place; each TEST is independent.
// Two-sided tagged messages: eager and three-phase (rendezvous) sizes around the eager limit,
// any_source / any_tag and the returned status, non-overtaking order with mixed sizes,
// unexpected and posted receives, many outstanding requests, cancelling a receive by
// destroying its request, the ring exchange of the 1992 paper's Fig. 2, and the protocol
// difference itself (an eager send completes before its receive is posted, a rendezvous send
// does not).
#include "msg/msg_support.hpp"

#include <algorithm>
#include <deque>
#include <numeric>

namespace {

using am_test::msg_seed;
using am_test::spmd_test;

constexpr std::size_t kib = 1024;
constexpr std::size_t default_eager = 8 * kib;

class msg : public spmd_test {};

// Each rank sends one message of every size to its right neighbour (tag = index of the size);
// receives for even tags are posted before anything is sent, the others after. Receive
// buffers are 16 bytes larger than the message: those bytes stay untouched.
void sizes_round_trip(am::context& ctx, std::size_t eager) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    const std::size_t mm = ctx.max_medium();
    const std::vector<std::size_t> sizes = {
        0, 1, 7, 24, 25, eager - 1, eager, eager + 1, mm - 1, mm, mm + 1, 3 * eager + 5, 1 << 20};
    const std::size_t count = sizes.size(), slack = 16;
    std::vector<std::vector<std::byte>> in(count), out(count);
    std::vector<am::request> recvs(count), sends(count);
    auto post = [&](std::size_t t) {
        in[t].assign(sizes[t] + slack, std::byte{0xcd});
        recvs[t] = ctx.irecv(left, static_cast<int>(t), am::writable_bytes(in[t]));
        EXPECT_TRUE(recvs[t].active());
    };
    for (std::size_t t = 0; t < count; t += 2) post(t);
    ctx.barrier();  // the even receives are posted before any message is sent
    for (std::size_t t = 0; t < count; ++t) {
        out[t] = am_test::pattern(sizes[t], msg_seed(me, right, static_cast<int>(t)));
        sends[t] = ctx.isend(right, static_cast<int>(t), am::bytes(out[t]));
    }
    for (std::size_t t = 1; t < count; t += 2) post(t);
    for (std::size_t t = 0; t < count; ++t) {
        SCOPED_TRACE("message of " + std::to_string(sizes[t]) + " bytes, tag " + std::to_string(t));
        const am::message_status st = recvs[t].wait();
        EXPECT_FALSE(recvs[t].active());
        EXPECT_EQ(st.source, left);
        EXPECT_EQ(st.tag, static_cast<int>(t));
        EXPECT_EQ(st.bytes, sizes[t]);
        EXPECT_EQ(recvs[t].status().bytes, sizes[t]);
        AM_EXPECT_BYTES(std::span(in[t]).first(sizes[t]),
                        am_test::pattern(sizes[t], msg_seed(left, me, static_cast<int>(t))));
        EXPECT_TRUE(am_test::all_bytes(std::span(in[t]).last(slack), std::byte{0xcd}))
            << "bytes after the message were written";
    }
    for (std::size_t t = 0; t < count; ++t) {
        const am::message_status st = sends[t].wait();  // a send's status names the destination
        EXPECT_EQ(st.source, right) << "send of tag " << t;
        EXPECT_EQ(st.tag, static_cast<int>(t));
        EXPECT_EQ(st.bytes, sizes[t]);
        EXPECT_FALSE(sends[t].active());
    }
}

TEST_P(msg, sizes_default_eager) {
    ASSERT_EQ(run([](am::context& ctx) { sizes_round_trip(ctx, default_eager); }), 0);
}

TEST_P(msg, sizes_eager_64) {
    ASSERT_EQ(run([](am::context& ctx) { sizes_round_trip(ctx, 64); },
                  [](am::config& cfg) { cfg.eager_bytes = 64; }),
              0);
}

// An eager limit above max_medium() is bounded by it; messages around max_medium() still go.
TEST_P(msg, sizes_eager_above_max_medium) {
    ASSERT_EQ(run([](am::context& ctx) { sizes_round_trip(ctx, 200 * kib); },
                  [](am::config& cfg) { cfg.eager_bytes = std::size_t{1} << 20; }),
              0);
}

std::size_t size_of(int src, int dst) {
    const std::size_t choice[] = {10, default_eager + 100, 0, 40000, 24};
    return choice[static_cast<std::size_t>(src * 3 + dst) % std::size(choice)];
}

// any_source/any_tag: each rank sends one message to every rank (itself included) with tag
// 100 + source; n receives with any_source and any_tag get each source once, with the status
// naming it. Then any_source with a tag, and a source with any_tag.
TEST_P(msg, any_source_any_tag) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const auto un = static_cast<std::size_t>(n);
        std::deque<std::vector<std::byte>> out;
        std::vector<am::request> sends;
        for (int i = 0; i < n; ++i) {
            const int d = (me + i) % n;
            out.push_back(am_test::pattern(size_of(me, d), msg_seed(me, d, 100 + me)));
            sends.push_back(ctx.isend(d, 100 + me, am::bytes(out.back())));
        }
        std::vector<int> seen(un, 0);
        std::vector<std::byte> buf(64 * kib);
        for (int i = 0; i < n; ++i) {
            const am::message_status st =
                ctx.recv(am::any_source, am::any_tag, am::writable_bytes(buf));
            ASSERT_GE(st.source, 0);
            ASSERT_LT(st.source, n);
            EXPECT_EQ(seen[static_cast<std::size_t>(st.source)]++, 0) << "rank " << st.source;
            EXPECT_EQ(st.tag, 100 + st.source);
            ASSERT_EQ(st.bytes, size_of(st.source, me)) << "from rank " << st.source;
            AM_EXPECT_BYTES(std::span(buf).first(st.bytes),
                            am_test::pattern(st.bytes, msg_seed(st.source, me, 100 + st.source)));
        }
        for (auto& s : sends) s.wait();
        ctx.barrier();
        // Tags 7 then 8 from every rank: any_source with tag 8 first, then each source's tag 7
        // with any_tag.
        out.clear();
        sends.clear();
        for (int i = 0; i < n; ++i) {
            const int d = (me + i) % n;
            for (int tag : {7, 8}) {
                out.push_back(am_test::pattern(size_of(me + tag, d), msg_seed(me, d, tag)));
                sends.push_back(ctx.isend(d, tag, am::bytes(out.back())));
            }
        }
        std::fill(seen.begin(), seen.end(), 0);
        for (int i = 0; i < n; ++i) {
            const am::message_status st = ctx.recv(am::any_source, 8, am::writable_bytes(buf));
            EXPECT_EQ(st.tag, 8);
            ASSERT_GE(st.source, 0);
            ASSERT_LT(st.source, n);
            EXPECT_EQ(seen[static_cast<std::size_t>(st.source)]++, 0) << "rank " << st.source;
            ASSERT_EQ(st.bytes, size_of(st.source + 8, me));
            AM_EXPECT_BYTES(std::span(buf).first(st.bytes),
                            am_test::pattern(st.bytes, msg_seed(st.source, me, 8)));
        }
        for (int s = n - 1; s >= 0; --s) {
            const am::message_status st = ctx.recv(s, am::any_tag, am::writable_bytes(buf));
            EXPECT_EQ(st.source, s);
            EXPECT_EQ(st.tag, 7);
            ASSERT_EQ(st.bytes, size_of(s + 7, me));
            AM_EXPECT_BYTES(std::span(buf).first(st.bytes),
                            am_test::pattern(st.bytes, msg_seed(s, me, 7)));
        }
        for (auto& s : sends) s.wait();
    });
    ASSERT_EQ(rc, 0);
}

// Non-overtaking: from every source to every destination a stream of messages whose sizes
// mix eager and rendezvous (eager limit 256); whatever receive matches them (source and tag,
// any_source, any_source and any_tag), each (source, tag) stream arrives in the order sent.
TEST_P(msg, non_overtaking_mixed_sizes) {
    const int rc = run(
        [](am::context& ctx) {
            const int n = ctx.size(), me = ctx.rank();
            const auto un = static_cast<std::size_t>(n);
            constexpr int count = 24;
            const std::size_t cycle[] = {0, 10, 256, 257, 5000, 100, 70000, 1};
            auto size_at = [&](int seq) {
                return cycle[static_cast<std::size_t>(seq) % std::size(cycle)];
            };
            std::vector<std::byte> buf(70000);
            std::deque<std::vector<std::byte>> out;
            std::vector<am::request> sends;
            auto send_streams = [&](std::initializer_list<int> tags) {
                for (int seq = 0; seq < count; ++seq) {
                    for (int i = 0; i < n; ++i) {
                        const int d = (me + i) % n;
                        for (int tag : tags) {
                            out.push_back(
                                am_test::pattern(size_at(seq), msg_seed(me, d, tag, seq)));
                            sends.push_back(ctx.isend(d, tag, am::bytes(out.back())));
                        }
                    }
                }
            };
            auto check = [&](const am::message_status& st, std::vector<int>& next) {
                ASSERT_GE(st.source, 0);
                ASSERT_LT(st.source, n);
                int& seq = next[static_cast<std::size_t>(st.source) * 2 + (st.tag % 2)];
                ASSERT_EQ(st.bytes, size_at(seq))
                    << "message " << seq << " of (rank " << st.source << ", tag " << st.tag << ")";
                AM_EXPECT_BYTES(std::span(buf).first(st.bytes),
                                am_test::pattern(st.bytes, msg_seed(st.source, me, st.tag, seq)))
                    << " message " << seq << " of (rank " << st.source << ", tag " << st.tag
                    << ") is not the next one sent";
                ++seq;
            };
            auto finish = [&] {
                for (auto& s : sends) s.wait();
                sends.clear();
                out.clear();
                ctx.barrier();
            };
            // any_source, one tag.
            send_streams({3});
            std::vector<int> next(2 * un, 0);
            for (int k = 0; k < n * count; ++k)
                check(ctx.recv(am::any_source, 3, am::writable_bytes(buf)), next);
            finish();
            // By source, sources in reverse order.
            send_streams({4});
            std::fill(next.begin(), next.end(), 0);
            for (int s = n - 1; s >= 0; --s) {
                for (int k = 0; k < count; ++k)
                    check(ctx.recv(s, 4, am::writable_bytes(buf)), next);
            }
            finish();
            // Two interleaved tags, any_source and any_tag.
            send_streams({5, 6});
            std::fill(next.begin(), next.end(), 0);
            for (int k = 0; k < 2 * n * count; ++k) {
                check(ctx.recv(am::any_source, am::any_tag, am::writable_bytes(buf)), next);
            }
            finish();
        },
        [](am::config& cfg) { cfg.eager_bytes = 256; });
    ASSERT_EQ(rc, 0);
}

// Unexpected messages (sent and handled before any receive is posted: quiesce) and posted
// receives (irecv before the send), eager and rendezvous, matched by tag out of send order.
TEST_P(msg, unexpected_and_posted) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int right = (me + 1) % n, left = (me + n - 1) % n;
        const std::size_t small = 100, large = 100 * kib;
        const auto out_small = am_test::pattern(small, msg_seed(me, right, 1));
        const auto out_large = am_test::pattern(large, msg_seed(me, right, 2));
        std::vector<std::byte> in_small(small), in_large(large);
        {
            am::request s1 = ctx.isend(right, 1, am::bytes(out_small));
            am::request s2 = ctx.isend(right, 2, am::bytes(out_large));
            ctx.quiesce();  // the small message and the large one's announcement have arrived
            const am::message_status a = ctx.recv(left, 2, am::writable_bytes(in_large));
            EXPECT_EQ(a.bytes, large);
            AM_EXPECT_BYTES(in_large, am_test::pattern(large, msg_seed(left, me, 2)));
            const am::message_status b = ctx.recv(left, 1, am::writable_bytes(in_small));
            EXPECT_EQ(b.bytes, small);
            AM_EXPECT_BYTES(in_small, am_test::pattern(small, msg_seed(left, me, 1)));
            EXPECT_EQ(s1.wait().bytes, small);
            EXPECT_EQ(s2.wait().bytes, large);
        }
        std::ranges::fill(in_small, std::byte{0});
        std::ranges::fill(in_large, std::byte{0});
        std::vector<std::byte> in_any(small);
        am::request r_large = ctx.irecv(left, 3, am::writable_bytes(in_large));
        am::request r_small = ctx.irecv(left, 4, am::writable_bytes(in_small));
        am::request r_any = ctx.irecv(am::any_source, 5, am::writable_bytes(in_any));
        ctx.barrier();  // posted before anything is sent
        const auto out_any = am_test::pattern(small, msg_seed(me, right, 5));
        am::request s4 = ctx.isend(right, 4, am::bytes(out_small));
        am::request s3 = ctx.isend(right, 3, am::bytes(out_large));
        am::request s5 = ctx.isend(right, 5, am::bytes(out_any));
        const am::message_status a = r_large.wait();
        EXPECT_EQ(a.source, left);
        EXPECT_EQ(a.tag, 3);
        EXPECT_EQ(a.bytes, large);
        AM_EXPECT_BYTES(in_large, am_test::pattern(large, msg_seed(left, me, 2)));
        EXPECT_EQ(r_small.wait().bytes, small);
        AM_EXPECT_BYTES(in_small, am_test::pattern(small, msg_seed(left, me, 1)));
        const am::message_status c = r_any.wait();
        EXPECT_EQ(c.source, left);
        EXPECT_EQ(c.tag, 5);
        AM_EXPECT_BYTES(in_any, am_test::pattern(small, msg_seed(left, me, 5)));
        s3.wait(), s4.wait(), s5.wait();
    });
    ASSERT_EQ(rc, 0);
}

// Many outstanding requests: every rank posts a receive per (source, tag) — half before the
// sends, half after — and sends as many; all are completed by test() in a round-robin.
TEST_P(msg, many_outstanding) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const auto un = static_cast<std::size_t>(n);
        constexpr int per_pair = 32;
        const std::size_t cycle[] = {0, 1, 100, default_eager, default_eager + 1, 20000, 3000};
        auto size_at = [&](int tag, int src) {
            return cycle[static_cast<std::size_t>(tag + src) % std::size(cycle)];
        };
        std::vector<std::vector<std::byte>> in(un * per_pair), out(un * per_pair);
        std::vector<am::request> recvs(un * per_pair), sends;
        auto post = [&](int s, int tag) {
            const std::size_t at = static_cast<std::size_t>(s) * per_pair + tag;
            in[at].assign(size_at(tag, s), std::byte{0xcd});
            recvs[at] = ctx.irecv(s, tag, am::writable_bytes(in[at]));
        };
        for (int s = 0; s < n; ++s) {
            for (int tag = 0; tag < per_pair; tag += 2) post(s, tag);
        }
        ctx.barrier();
        for (int tag = 0; tag < per_pair; ++tag) {
            for (int i = 0; i < n; ++i) {
                const int d = (me + i) % n;
                const std::size_t at = static_cast<std::size_t>(d) * per_pair + tag;
                out[at] = am_test::pattern(size_at(tag, me), msg_seed(me, d, tag));
                sends.push_back(ctx.isend(d, tag, am::bytes(out[at])));
            }
        }
        for (int s = 0; s < n; ++s) {
            for (int tag = 1; tag < per_pair; tag += 2) post(s, tag);
        }
        // (An eager isend may hand back a request that is complete already: test() is true.)
        std::vector<char> done(recvs.size() + sends.size(), 0);
        std::size_t left = done.size();
        const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(20);
        while (left > 0 && std::chrono::steady_clock::now() < until) {
            std::size_t i = 0;
            for (auto* v : {&recvs, &sends}) {
                for (am::request& r : *v) {
                    if (!done[i] && r.test()) {
                        EXPECT_FALSE(r.active());
                        done[i] = 1;
                        --left;
                    }
                    ++i;
                }
            }
        }
        ASSERT_EQ(left, 0u) << "requests still incomplete after 20 s";
        for (int s = 0; s < n; ++s) {
            for (int tag = 0; tag < per_pair; ++tag) {
                const std::size_t at = static_cast<std::size_t>(s) * per_pair + tag;
                const am::message_status& st = recvs[at].status();
                EXPECT_EQ(st.source, s);
                EXPECT_EQ(st.tag, tag);
                EXPECT_EQ(st.bytes, size_at(tag, s));
                AM_EXPECT_BYTES(in[at], am_test::pattern(size_at(tag, s), msg_seed(s, me, tag)))
                    << " (rank " << s << ", tag " << tag << ")";
            }
        }
    });
    ASSERT_EQ(rc, 0);
}

// Destroying (or assigning over) a receive that nothing matched withdraws it: the next message
// with its source and tag goes to the next receive, and the withdrawn buffer stays untouched.
TEST_P(msg, cancel_unmatched_receive) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int right = (me + 1) % n, left = (me + n - 1) % n;
        std::vector<std::byte> dead5(200, std::byte{0xcd}), dead6(64 * kib, std::byte{0xcd}),
            in7(10, std::byte{0});
        { am::request r = ctx.irecv(left, 5, am::writable_bytes(dead5)); }
        am::request r = ctx.irecv(left, 6, am::writable_bytes(dead6));
        r = ctx.irecv(left, 7, am::writable_bytes(in7));  // withdraws the receive of tag 6
        EXPECT_TRUE(r.active());
        am::request moved = std::move(r);
        EXPECT_FALSE(r.active());  // NOLINT(bugprone-use-after-move): moved-from is inactive
        EXPECT_TRUE(moved.active());
        am::request unset;
        EXPECT_FALSE(unset.active());
        ctx.barrier();  // withdrawn before anything is sent
        const auto o5 = am_test::pattern(100, msg_seed(me, right, 5));
        const auto o6 = am_test::pattern(50 * kib, msg_seed(me, right, 6));
        const auto o7 = am_test::pattern(10, msg_seed(me, right, 7));
        am::request s5 = ctx.isend(right, 5, am::bytes(o5));
        am::request s6 = ctx.isend(right, 6, am::bytes(o6));
        am::request s7 = ctx.isend(right, 7, am::bytes(o7));
        std::vector<std::byte> in5(200), in6(64 * kib);
        am::request r5 = ctx.irecv(left, 5, am::writable_bytes(in5));
        am::request r6 = ctx.irecv(left, 6, am::writable_bytes(in6));
        am_test::require_complete(ctx, r5, std::chrono::seconds(10),
                                  "tag 5 did not reach the receive posted after the withdrawn one");
        am_test::require_complete(ctx, r6, std::chrono::seconds(10),
                                  "tag 6 did not reach the receive posted after the withdrawn one");
        EXPECT_EQ(r5.status().bytes, 100u);
        EXPECT_EQ(r6.status().bytes, 50 * kib);
        AM_EXPECT_BYTES(std::span(in5).first(100), am_test::pattern(100, msg_seed(left, me, 5)));
        AM_EXPECT_BYTES(std::span(in6).first(50 * kib),
                        am_test::pattern(50 * kib, msg_seed(left, me, 6)));
        EXPECT_TRUE(am_test::all_bytes(dead5, std::byte{0xcd})) << "withdrawn receive written";
        EXPECT_TRUE(am_test::all_bytes(dead6, std::byte{0xcd})) << "withdrawn receive written";
        EXPECT_EQ(moved.wait().tag, 7);
        AM_EXPECT_BYTES(in7, am_test::pattern(10, msg_seed(left, me, 7)));
        s5.wait(), s6.wait(), s7.wait();
    });
    ASSERT_EQ(rc, 0);
}

// Destroying an incomplete send waits for it: the buffer may be reused afterwards and the
// receiver still gets the original bytes (rendezvous and eager).
TEST_P(msg, destroying_send_waits) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int right = (me + 1) % n, left = (me + n - 1) % n;
        std::vector<std::byte> in_large(64 * kib), in_small(64);
        am::request r1 = ctx.irecv(left, 9, am::writable_bytes(in_large));
        am::request r2 = ctx.irecv(left, 10, am::writable_bytes(in_small));
        std::vector<std::byte> data = am_test::pattern(50 * kib, msg_seed(me, right, 9));
        { am::request s = ctx.isend(right, 9, am::bytes(data)); }
        std::ranges::fill(data, std::byte{0});
        data = am_test::pattern(64, msg_seed(me, right, 10));
        { am::request s = ctx.isend(right, 10, am::bytes(data)); }
        std::ranges::fill(data, std::byte{0});
        EXPECT_EQ(r1.wait().bytes, 50 * kib);
        AM_EXPECT_BYTES(std::span(in_large).first(50 * kib),
                        am_test::pattern(50 * kib, msg_seed(left, me, 9)));
        EXPECT_EQ(r2.wait().bytes, 64u);
        AM_EXPECT_BYTES(in_small, am_test::pattern(64, msg_seed(left, me, 10)));
    });
    ASSERT_EQ(rc, 0);
}

// Blocking send and recv, ping-pong between pairs of ranks over sizes from 0 to 1 MiB (eager
// and rendezvous); the pong echoes what arrived. A rank alone talks to itself with isend.
TEST_P(msg, blocking_ping_pong) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int partner = (me ^ 1) < n ? (me ^ 1) : me;
        std::vector<std::size_t> sizes = {0, 1};  // then 3, 5, 9, ..., 2^20 + 1
        for (std::size_t s = 2; s <= (std::size_t{1} << 20); s *= 2) sizes.push_back(s + 1);
        std::vector<std::byte> buf((std::size_t{1} << 20) + 1);
        for (std::size_t k = 0; k < sizes.size(); ++k) {
            const int tag = static_cast<int>(k);
            const std::size_t len = sizes[k];
            const auto data = am_test::pattern(len, msg_seed(me, partner, tag));
            if (partner == me) {
                am::request s = ctx.isend(me, tag, am::bytes(data));
                const am::message_status st = ctx.recv(me, tag, am::writable_bytes(buf));
                EXPECT_EQ(st.bytes, len);
                s.wait();
                AM_EXPECT_BYTES(std::span(buf).first(st.bytes), data) << " " << len << " bytes";
            } else if (me < partner) {
                ctx.send(partner, tag, am::bytes(data));
                const am::message_status st = ctx.recv(partner, tag, am::writable_bytes(buf));
                EXPECT_EQ(st.source, partner);
                EXPECT_EQ(st.bytes, len);
                AM_EXPECT_BYTES(std::span(buf).first(st.bytes), data) << " echo of " << len;
            } else {
                const am::message_status st = ctx.recv(partner, tag, am::writable_bytes(buf));
                EXPECT_EQ(st.bytes, len);
                AM_EXPECT_BYTES(std::span(buf).first(st.bytes),
                                am_test::pattern(len, msg_seed(partner, me, tag)));
                ctx.send(partner, tag, std::span<const std::byte>(buf).first(st.bytes));
            }
        }
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(msg, am_test::make_params({1, 2, 4}, {1, 2, 4}));

// ------------------------------------------------------------------- Fig. 2: ring exchange

class msg_ring : public spmd_test {};

// Order-sensitive fold of a ghost block.
std::uint64_t fold(std::span<const std::uint64_t> g) {
    std::uint64_t h = 0;
    for (std::size_t i = 0; i < g.size(); ++i) h += g[i] * (i + 1);
    return h;
}

// One step of the stencil on block `x` given its neighbours' ghost blocks.
void stencil(std::span<const std::uint64_t> x, std::span<std::uint64_t> next,
             std::span<const std::uint64_t> from_left, std::span<const std::uint64_t> from_right,
             std::size_t first, std::size_t last) {
    const std::size_t m = x.size();
    for (std::size_t i = first; i < last; ++i) {
        const std::uint64_t l = i == 0 ? fold(from_left) : x[i - 1];
        const std::uint64_t r = i == m - 1 ? fold(from_right) : x[i + 1];
        next[i] = l + 2 * x[i] + r;
    }
}

// The 1992 paper's Fig. 2 on every rank: isend the boundary to the right and to the left,
// compute the interior, receive the neighbours' boundaries (blocking recv; every other step
// with receives posted beforehand instead), finish the edges. Checked against the same
// computation done serially for the whole ring.
void ring_exchange(am::context& ctx, std::size_t w, int steps) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    const std::size_t m = 2 * w + 64;
    auto initial = [&](int r) {
        std::vector<std::uint64_t> v(m);
        for (std::size_t i = 0; i < m; ++i)
            v[i] = am_test::mix(static_cast<std::uint64_t>(r) * m + i);
        return v;
    };
    std::vector<std::uint64_t> x = initial(me), next(m), ghost_l(w), ghost_r(w);
    constexpr int to_right = 0, to_left = 1;  // tags: distinct even when left == right
    for (int step = 0; step < steps; ++step) {
        am::request pre_l, pre_r;
        if (step % 2 == 1) {
            pre_l = ctx.irecv(left, to_right, am::writable_bytes(ghost_l));
            pre_r = ctx.irecv(right, to_left, am::writable_bytes(ghost_r));
        }
        am::request send_r = ctx.isend(right, to_right, am::bytes(std::span(x).last(w)));
        am::request send_l = ctx.isend(left, to_left, am::bytes(std::span(x).first(w)));
        stencil(x, next, {}, {}, 1, m - 1);  // the interior needs no ghost
        if (step % 2 == 1) {
            EXPECT_EQ(pre_l.wait().bytes, w * 8);
            EXPECT_EQ(pre_r.wait().bytes, w * 8);
        } else {
            EXPECT_EQ(ctx.recv(left, to_right, am::writable_bytes(ghost_l)).bytes, w * 8);
            EXPECT_EQ(ctx.recv(right, to_left, am::writable_bytes(ghost_r)).bytes, w * 8);
        }
        stencil(x, next, ghost_l, ghost_r, 0, 1);
        stencil(x, next, ghost_l, ghost_r, m - 1, m);
        send_r.wait();
        send_l.wait();
        std::swap(x, next);
    }
    // The serial reference for the whole ring.
    std::vector<std::vector<std::uint64_t>> all(static_cast<std::size_t>(n)), nxt(all.size());
    for (int r = 0; r < n; ++r)
        all[static_cast<std::size_t>(r)] = initial(r), nxt[static_cast<std::size_t>(r)].resize(m);
    for (int step = 0; step < steps; ++step) {
        for (int r = 0; r < n; ++r) {
            const auto& l = all[static_cast<std::size_t>((r + n - 1) % n)];
            const auto& rr = all[static_cast<std::size_t>((r + 1) % n)];
            stencil(all[static_cast<std::size_t>(r)], nxt[static_cast<std::size_t>(r)],
                    std::span(l).last(w), std::span(rr).first(w), 0, m);
        }
        std::swap(all, nxt);
    }
    EXPECT_TRUE(x == all[static_cast<std::size_t>(me)])
        << "rank " << me << "'s block after " << steps << " steps";
}

TEST_P(msg_ring, fig2_eager) {
    ASSERT_EQ(run([](am::context& ctx) { ring_exchange(ctx, 16, ctx.size() > 16 ? 6 : 20); }), 0);
}

TEST_P(msg_ring, fig2_rendezvous) {
    // Boundaries larger than the eager limit (8 KiB): the three-phase protocol every step.
    ASSERT_EQ(run([](am::context& ctx) {
                  ring_exchange(ctx, ctx.size() > 16 ? 1100 : 4096, ctx.size() > 16 ? 4 : 12);
              }),
              0);
}

AM_INSTANTIATE(msg_ring, am_test::all_params());

// --------------------------------------------------------------- eager versus rendezvous

class msg_protocol : public spmd_test {};

// Rank 0 sends to rank 1 while rank 1 only polls, without a receive. Messages up to the eager
// limit complete at once (and their buffers may be overwritten: rank 1 still gets the
// original bytes); a message one byte larger waits for the receive. Rank 0 tells rank 1 when
// to go on with a short message (so the test works on every transport, mpi included).
void eager_versus_rendezvous(am::context& ctx, std::size_t eager) {
    const int me = ctx.rank();
    const std::size_t eager_sizes[] = {0, 1, 24, 25, eager};
    int stage = 0;  // on rank 1: the stage rank 0 reached
    auto advance = ctx.handler([&](am::token&, std::int32_t s) { stage = s; });
    ctx.barrier();
    if (me == 0) {
        std::vector<std::vector<std::byte>> out;
        for (std::size_t k = 0; k < std::size(eager_sizes); ++k) {
            out.push_back(am_test::pattern(eager_sizes[k], msg_seed(0, 1, static_cast<int>(k))));
            am::request r = ctx.isend(1, static_cast<int>(k), am::bytes(out.back()));
            am_test::require_complete(ctx, r, std::chrono::seconds(3),
                                      "an eager isend of " + std::to_string(eager_sizes[k]) +
                                          " bytes (limit " + std::to_string(eager) +
                                          ") waited for its receive");
            std::ranges::fill(out.back(), std::byte{0});
        }
        std::vector<std::byte> blocking = am_test::pattern(eager, msg_seed(0, 1, 50));
        ctx.send(1, 50, am::bytes(blocking));  // returns without a receive
        std::ranges::fill(blocking, std::byte{0});
        ctx.request(1, advance, std::int32_t{1});
        const auto big = am_test::pattern(eager + 1, msg_seed(0, 1, 60));
        am::request r = ctx.isend(1, 60, am::bytes(big));
        EXPECT_FALSE(am_test::complete_within(r, std::chrono::milliseconds(200)))
            << "an isend of " << eager + 1 << " bytes (eager limit " << eager
            << ") completed before its receive was posted";
        ctx.request(1, advance, std::int32_t{2});
        EXPECT_EQ(r.wait().bytes, eager + 1);
    } else if (me == 1) {
        ctx.wait([&] { return stage >= 1; });
        std::vector<std::byte> in(eager + 1);
        for (std::size_t k = 0; k < std::size(eager_sizes); ++k) {
            const am::message_status st = ctx.recv(0, static_cast<int>(k), am::writable_bytes(in));
            ASSERT_EQ(st.bytes, eager_sizes[k]);
            AM_EXPECT_BYTES(std::span(in).first(st.bytes),
                            am_test::pattern(st.bytes, msg_seed(0, 1, static_cast<int>(k))))
                << " eager message " << k << " changed after its send completed";
        }
        EXPECT_EQ(ctx.recv(0, 50, am::writable_bytes(in)).bytes, eager);
        AM_EXPECT_BYTES(std::span(in).first(eager), am_test::pattern(eager, msg_seed(0, 1, 50)));
        ctx.wait([&] { return stage >= 2; });
        EXPECT_EQ(ctx.recv(0, 60, am::writable_bytes(in)).bytes, eager + 1);
        AM_EXPECT_BYTES(in, am_test::pattern(eager + 1, msg_seed(0, 1, 60)));
    }
    ctx.quiesce();  // the stage messages are handled before `stage` goes
}

TEST_P(msg_protocol, eager_limit_default) {
    ASSERT_EQ(run([](am::context& ctx) { eager_versus_rendezvous(ctx, default_eager); }), 0);
}

TEST_P(msg_protocol, eager_limit_64) {
    ASSERT_EQ(run([](am::context& ctx) { eager_versus_rendezvous(ctx, 64); },
                  [](am::config& cfg) { cfg.eager_bytes = 64; }),
              0);
}

AM_INSTANTIATE(msg_protocol, am_test::make_params({2}, {2}));

}  // namespace
