// SPDX-License-Identifier: MIT
// Misuse of send/receive: a receive buffer too small for the matched message (errc::too_large,
// the message stays queued for a later receive), negative tags and bad ranks, and blocking
// calls in handlers (errc::bad_context; isend and irecv are allowed there). Nothing is sent
// by a refused call and messages accepted around it all arrive.
#include "msg/msg_support.hpp"

#include <chrono>
#include <climits>
#include <deque>
#include <thread>

namespace {

using am_test::expect_error;
using am_test::msg_seed;
using am_test::spmd_test;

constexpr std::size_t eager = 8 * 1024;

class msg_errors : public spmd_test {};

using am_test::rank_prefix;

// Expects a too_large error naming both sizes from `f`.
template <class F>
void expect_too_large(F&& f, std::size_t message, std::size_t buffer) {
    expect_error(std::forward<F>(f), am::errc::too_large,
                 {std::to_string(message), std::to_string(buffer)});
}

struct message {
    int tag;
    std::size_t len;
};

// Sends `msgs` to the right neighbour (payloads named by index); the buffers live in `out`.
std::vector<am::request> send_all(am::context& ctx, std::span<const message> msgs,
                                  std::deque<std::vector<std::byte>>& out) {
    const int right = (ctx.rank() + 1) % ctx.size();
    std::vector<am::request> sends;
    for (std::size_t k = 0; k < msgs.size(); ++k) {
        out.push_back(am_test::pattern(
            msgs[k].len, msg_seed(ctx.rank(), right, msgs[k].tag, static_cast<int>(k))));
        sends.push_back(ctx.isend(right, msgs[k].tag, am::bytes(out.back())));
    }
    return sends;
}

// Expects message `k` of `msgs` from the left neighbour in `buf`.
void expect_message(am::context& ctx, std::span<const message> msgs, std::size_t k,
                    const am::message_status& st, std::span<const std::byte> buf) {
    const int left = (ctx.rank() + ctx.size() - 1) % ctx.size();
    const message& m = msgs[k];
    EXPECT_EQ(st.source, left);
    EXPECT_EQ(st.tag, m.tag);
    ASSERT_EQ(st.bytes, m.len) << "message " << k;
    AM_EXPECT_BYTES(buf.first(m.len),
                    am_test::pattern(m.len, msg_seed(left, ctx.rank(), m.tag, static_cast<int>(k))))
        << " message " << k;
}

// Messages that are already there (unexpected) when a too-small receive matches them: recv and
// irecv raise too_large naming both sizes; the message stays first in line for its tag.
TEST_P(msg_errors, too_small_for_unexpected) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int left = (me + n - 1) % n;
        const std::size_t big = 3 * eager + 5;
        // A and B share tag 1: A, too large at first, must still come before B.
        const message msgs[] = {{1, 100}, {1, 10}, {2, big}};
        std::deque<std::vector<std::byte>> out;
        std::vector<am::request> sends = send_all(ctx, msgs, out);
        ctx.quiesce();  // every message (or its announcement) has arrived
        std::vector<std::byte> buf(big), b99(99), b50(50);
        expect_error([&] { (void)ctx.recv(left, 1, am::writable_bytes(b99)); }, am::errc::too_large,
                     {"am::context::recv", rank_prefix(ctx), "100 bytes", "99 bytes"});
        {
            am::request r = ctx.irecv(left, 1, am::writable_bytes(b50));
            expect_too_large([&] { (void)r.wait(); }, 100, 50);
        }
        expect_message(ctx, msgs, 0, ctx.recv(left, 1, am::writable_bytes(buf)), buf);
        expect_message(ctx, msgs, 1, ctx.recv(left, 1, am::writable_bytes(buf)), buf);
        // Rendezvous: too large is known from the announcement; the data waits.
        expect_error([&] { (void)ctx.recv(left, 2, std::span(buf).first(100)); },
                     am::errc::too_large,
                     {"am::context::recv", rank_prefix(ctx), std::to_string(big), "100 bytes"});
        {
            am::request r = ctx.irecv(left, 2, am::writable_bytes(buf));
            expect_message(ctx, msgs, 2, r.wait(), buf);
        }
        for (auto& s : sends) s.wait();
    });
    ASSERT_EQ(rc, 0);
}

// Receives posted before the message arrives turn out too small: the error comes from the
// request's wait/test, and a later receive gets the message.
TEST_P(msg_errors, too_small_posted) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int left = (me + n - 1) % n;
        const std::size_t big = 3 * eager + 5;
        const message msgs[] = {{3, 200}, {4, big}};
        std::vector<std::byte> buf(big), small3(199), small4(big - 1);
        am::request posted3 = ctx.irecv(left, 3, am::writable_bytes(small3));
        am::request posted4 = ctx.irecv(left, 4, am::writable_bytes(small4));
        ctx.barrier();
        std::deque<std::vector<std::byte>> out;
        std::vector<am::request> sends = send_all(ctx, msgs, out);
        expect_too_large([&] { (void)posted3.wait(); }, 200, 199);
        expect_too_large(
            [&] {
                while (!posted4.test()) {
                }
            },
            big, big - 1);
        expect_message(ctx, msgs, 0, ctx.recv(left, 3, am::writable_bytes(buf)), buf);
        expect_message(ctx, msgs, 1, ctx.recv(left, 4, am::writable_bytes(buf)), buf);
        for (auto& s : sends) s.wait();
    });
    ASSERT_EQ(rc, 0);
}

// A blocking recv already waiting when the too-large message arrives: the error names recv.
// Needs a sender and a receiver: instantiated for 2 and 4 ranks only.
class msg_errors_peers : public spmd_test {};

TEST_P(msg_errors_peers, too_small_blocking_recv_waiting) {
    const int rc = run([](am::context& ctx) {
        ctx.barrier();
        if (ctx.rank() == 0) {  // sends to rank 1 well after rank 1 entered recv
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
            const auto out = am_test::pattern(300, msg_seed(0, 1, 5));
            ctx.send(1, 5, am::bytes(out));
        } else if (ctx.rank() == 1) {
            std::vector<std::byte> buf(300), b299(299);
            expect_error(
                [&] { (void)ctx.recv(0, 5, am::writable_bytes(b299)); }, am::errc::too_large,
                {"am::context::recv", am_test::rank_prefix(ctx), "300 bytes", "299 bytes"});
            const am::message_status st = ctx.recv(0, 5, am::writable_bytes(buf));
            EXPECT_EQ(st.bytes, 300u);
            AM_EXPECT_BYTES(buf, am_test::pattern(300, msg_seed(0, 1, 5)));
        }
    });
    ASSERT_EQ(rc, 0);
}

// Two receives posted for one (source, tag), the first too small for a message of `len`
// bytes: the message that fails the first goes to the second, which was posted before it
// arrived.
void refused_then_larger_posted(am::context& ctx, std::size_t len) {
    const int n = ctx.size(), me = ctx.rank();
    const int left = (me + n - 1) % n;
    const message msgs[] = {{6, len}};
    std::vector<std::byte> small(len / 2), buf(len);
    am::request first = ctx.irecv(left, 6, am::writable_bytes(small));
    am::request second = ctx.irecv(left, 6, am::writable_bytes(buf));
    ctx.barrier();
    std::deque<std::vector<std::byte>> out;
    std::vector<am::request> sends = send_all(ctx, msgs, out);
    expect_too_large([&] { (void)first.wait(); }, len, len / 2);
    am_test::require_complete(ctx, second, std::chrono::seconds(5),
                              "the message of " + std::to_string(len) +
                                  " bytes refused by a too-small receive never reached the "
                                  "larger receive posted after it");
    expect_message(ctx, msgs, 0, second.status(), buf);
    for (auto& s : sends) s.wait();
}

TEST_P(msg_errors, too_small_then_larger_posted_eager) {
    ASSERT_EQ(run([](am::context& ctx) { refused_then_larger_posted(ctx, 100); }), 0);
}

TEST_P(msg_errors, too_small_then_larger_posted_rendezvous) {
    ASSERT_EQ(run([](am::context& ctx) { refused_then_larger_posted(ctx, 3 * eager + 5); }), 0);
}

// Negative tags (any_tag only as a receive's tag) and ranks outside [0, size) (any_source only
// as a receive's source): refused with the right code, nothing sent, and the messages sent
// around them arrive.
TEST_P(msg_errors, bad_tag_and_rank) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int right = (me + 1) % n, left = (me + n - 1) % n;
        const auto first = am_test::pattern(40, msg_seed(me, right, 1));
        const auto second = am_test::pattern(eager * 2, msg_seed(me, right, 2));
        std::vector<std::byte> buf(eager * 2);
        am::request s1 = ctx.isend(right, 1, am::bytes(first));
        auto expect_code = [&](auto&& f, am::errc code, const char* call, int value) {
            expect_error(f, code, {call, rank_prefix(ctx), std::to_string(value)});
        };
        for (int tag : {am::any_tag, -2, INT_MIN}) {
            SCOPED_TRACE("tag " + std::to_string(tag));
            expect_code([&] { ctx.send(right, tag, am::bytes(first)); }, am::errc::invalid_argument,
                        "am::context::send", tag);
            expect_code([&] { (void)ctx.isend(right, tag, am::bytes(first)); },
                        am::errc::invalid_argument, "am::context::isend", tag);
            if (tag != am::any_tag) {
                expect_code([&] { (void)ctx.recv(left, tag, am::writable_bytes(buf)); },
                            am::errc::invalid_argument, "am::context::recv", tag);
                expect_code([&] { (void)ctx.irecv(left, tag, am::writable_bytes(buf)); },
                            am::errc::invalid_argument, "am::context::irecv", tag);
            }
        }
        for (int rank : {n, n + 1, INT_MAX, am::any_source, -2, INT_MIN}) {
            SCOPED_TRACE("rank " + std::to_string(rank));
            expect_code([&] { ctx.send(rank, 3, am::bytes(first)); }, am::errc::bad_rank,
                        "am::context::send", rank);
            expect_code([&] { (void)ctx.isend(rank, 3, am::bytes(second)); }, am::errc::bad_rank,
                        "am::context::isend", rank);
            if (rank != am::any_source) {
                expect_code([&] { (void)ctx.recv(rank, 3, am::writable_bytes(buf)); },
                            am::errc::bad_rank, "am::context::recv", rank);
                expect_code([&] { (void)ctx.irecv(rank, 3, am::writable_bytes(buf)); },
                            am::errc::bad_rank, "am::context::irecv", rank);
            }
        }
        am::request s2 = ctx.isend(right, 2, am::bytes(second));
        const am::message_status a = ctx.recv(left, 1, am::writable_bytes(buf));
        EXPECT_EQ(a.bytes, 40u);
        AM_EXPECT_BYTES(std::span(buf).first(40), am_test::pattern(40, msg_seed(left, me, 1)));
        const am::message_status b = ctx.recv(am::any_source, am::any_tag, am::writable_bytes(buf));
        EXPECT_EQ(b.source, left);
        EXPECT_EQ(b.tag, 2);
        EXPECT_EQ(b.bytes, eager * 2);
        AM_EXPECT_BYTES(buf, am_test::pattern(eager * 2, msg_seed(left, me, 2)));
        s1.wait();
        s2.wait();
        // Nothing else was sent: after quiescence no message is waiting to be received.
        ctx.quiesce();
        {
            am::request probe = ctx.irecv(am::any_source, am::any_tag, am::writable_bytes(buf));
            for (int i = 0; i < 100; ++i) {
                const bool done = probe.test();
                EXPECT_FALSE(done)
                    << "a refused send delivered a message with tag " << probe.status().tag;
                if (done) break;
            }
        }  // withdrawn
        ctx.barrier();
    });
    ASSERT_EQ(rc, 0);
}

// In a handler, send, recv and request::wait are refused (errc::bad_context) while isend and
// irecv work: the right neighbour's handler answers each request with an isend and posts an
// irecv for a message the requester sends next.
TEST_P(msg_errors, handlers) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const int right = (me + 1) % n, left = (me + n - 1) % n;
        const std::size_t sizes[] = {100, 3 * eager};
        am::counter handled(ctx);
        std::deque<std::vector<std::byte>> bufs;  // stable addresses for the handler's requests
        std::vector<am::request> reqs;
        std::vector<std::byte> never(8);
        am::request pending = ctx.irecv(left, 99, am::writable_bytes(never));  // never matched
        auto h = ctx.handler([&](am::token& t, std::uint64_t k) {
            const int src = t.source();
            std::vector<std::byte> tmp(16);
            expect_error([&] { t.ctx().send(src, 1, am::bytes(tmp)); }, am::errc::bad_context,
                         {"am::context::send", rank_prefix(ctx), "handler"});
            expect_error(
                [&] { (void)t.ctx().recv(am::any_source, am::any_tag, am::writable_bytes(tmp)); },
                am::errc::bad_context, {"am::context::recv", rank_prefix(ctx), "handler"});
            expect_error([&] { (void)pending.wait(); }, am::errc::bad_context,
                         {"wait", rank_prefix(ctx), "handler"});
            bufs.push_back(am_test::pattern(sizes[k], msg_seed(me, src, 11, static_cast<int>(k))));
            reqs.push_back(t.ctx().isend(src, 11, am::bytes(bufs.back())));
            bufs.emplace_back(sizes[k], std::byte{0xcd});
            reqs.push_back(t.ctx().irecv(src, 12, am::writable_bytes(bufs.back())));
            handled.add();
        });
        ctx.barrier();
        std::vector<std::byte> in(3 * eager);
        for (std::uint64_t k = 0; k < std::size(sizes); ++k) {
            ctx.request(right, h, k);
            const am::message_status st = ctx.recv(right, 11, am::writable_bytes(in));
            EXPECT_EQ(st.bytes, sizes[k]);
            AM_EXPECT_BYTES(
                std::span(in).first(sizes[k]),
                am_test::pattern(sizes[k], msg_seed(right, me, 11, static_cast<int>(k))))
                << " isend from a handler";
            const auto out =
                am_test::pattern(sizes[k], msg_seed(me, right, 12, static_cast<int>(k)));
            ctx.send(right, 12, am::bytes(out));
        }
        handled.wait(std::size(sizes));
        for (auto& r : reqs) r.wait();
        // The receives the handler posted for the left neighbour's messages.
        for (std::size_t k = 0; k < std::size(sizes); ++k) {
            AM_EXPECT_BYTES(bufs[2 * k + 1],
                            am_test::pattern(sizes[k], msg_seed(left, me, 12, static_cast<int>(k))))
                << " irecv from a handler";
        }
        ctx.barrier();
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(msg_errors, am_test::make_params({1, 2, 4}, {1, 2, 4}));
AM_INSTANTIATE(msg_errors_peers, am_test::make_params({2, 4}, {2, 4}));

}  // namespace
