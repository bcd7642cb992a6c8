// SPDX-License-Identifier: MIT
// Termination of TAM runs whose work bounces between ranks (the single token of a ring is in
// semantics_test.cpp): 16 tokens travel a ring of nodes, one per rank, at once, each for its
// own number of hops, so that many messages are in flight while ranks go idle in between. run
// may return only when every token is home: the root finishes when the last one has arrived,
// so a termination declared early shows as finished == false (or a wrong sum) on some rank.
#include "tam/tam_support.hpp"

namespace {

using namespace am_tam_test;
using am::tam::codeblock_def;
using am::tam::program;

class tam_termination : public tam_test {};

namespace tokens {

constexpr unsigned count = 16;
constexpr word mult = 1000003;
constexpr unsigned node_slot = 3;      // root: node refs from here
constexpr unsigned queue_slot = 5;     // node: token queue from here, 2 words a token
constexpr unsigned queue_cap = count;  // every token could be queued at one node

word hops_of(unsigned i) {
    return 40 + (13 * word{i}) % 37;
}

word expected(int ranks) {
    word sum = 0;
    for (unsigned i = 0; i < count; ++i) {
        int at = static_cast<int>(i) % ranks;
        word acc = i + 1;
        for (word h = hops_of(i) + 1; h-- > 0;) {
            acc = acc * mult + static_cast<word>(at + 1);
            at = (at + 1) % ranks;
        }
        sum += acc;
    }
    return sum;
}

enum : am::tam::thread_id { r_t0, r_all, r_go, r_done };
enum : am::tam::thread_id { n_hello, n_ack, n_fwd };

program make() {
    codeblock_def root = codeblock("tokens_root", node_slot + 8);  // -, sum, -, nodes
    root.threads = {
        {[](frame& f) {
             const auto n = static_cast<std::uint32_t>(f.ranks());
             f.set_count(r_all, n);
             f.set_count(r_go, n);
             f.set_count(r_done, count);
             for (int r = 0; r < f.ranks(); ++r) {
                 f.call(1, r, 0, {f.self().as_word(), am::tam::to_word(r)});
             }
         },
         1, "t0"},
        {[](frame& f) {
             const unsigned n = static_cast<unsigned>(f.ranks());
             for (unsigned r = 0; r < n; ++r) {
                 f.send(frame_ref::from(f.slot(node_slot + r)), 1,
                        {f.slot(node_slot + (r + 1) % n)});
             }
         },
         runtime_count, "all_in"},
        {[](frame& f) {
             const unsigned n = static_cast<unsigned>(f.ranks());
             for (unsigned i = 0; i < count; ++i) {
                 f.send(frame_ref::from(f.slot(node_slot + i % n)), 2, {hops_of(i), i + 1});
             }
         },
         runtime_count, "go"},
        {[](frame& f) { f.finish(f.slot(1)); }, runtime_count, "done"},
    };
    root.inlets = {
        [](frame& f, std::span<const word>) {
            f.slot(1) = 0;
            f.post(r_t0);
        },
        [](frame& f, std::span<const word> a) {  // hello {rank, node}
            f.slot(node_slot + static_cast<unsigned>(a[0])) = a[1];
            f.post(r_all);
        },
        [](frame& f, std::span<const word>) { f.post(r_go); },  // a node knows its successor
        [](frame& f, std::span<const word> a) {                 // a token is home {acc}
            f.slot(1) += a[0];
            f.post(r_done);
        },
    };
    // root, rank, successor, head, tail, queue
    codeblock_def node = codeblock("tokens_node", queue_slot + 2 * queue_cap);
    node.threads = {
        {[](frame& f) {
             f.send(frame_ref::from(f.slot(0)), 1, {f.slot(1), f.self().as_word()});
         },
         1, "hello"},
        {[](frame& f) { f.send(frame_ref::from(f.slot(0)), 2, {}); }, 1, "ack"},
        {[](frame& f) {  // one run per queued token
             const unsigned at = queue_slot + 2 * static_cast<unsigned>(f.slot(3) % queue_cap);
             ++f.slot(3);
             const word hops = f.slot(at);
             const word acc = f.slot(at + 1) * mult + static_cast<word>(f.rank() + 1);
             if (hops == 0) {
                 f.send(frame_ref::from(f.slot(0)), 3, {acc});
             } else {
                 f.send(frame_ref::from(f.slot(2)), 2, {hops - 1, acc});
             }
         },
         1, "fwd"},
    };
    node.inlets = {
        [](frame& f, std::span<const word> a) {  // {root, rank}
            f.slot(0) = a[0];
            f.slot(1) = a[1];
            f.slot(3) = f.slot(4) = 0;
            f.post(n_hello);
        },
        [](frame& f, std::span<const word> a) {  // {successor}
            f.slot(2) = a[0];
            f.post(n_ack);
        },
        [](frame& f, std::span<const word> a) {  // a token {hops, acc}: queue it
            const unsigned at = queue_slot + 2 * static_cast<unsigned>(f.slot(4) % queue_cap);
            ++f.slot(4);
            f.slot(at) = a[0];
            f.slot(at + 1) = a[1];
            f.post(n_fwd);
        },
    };
    return program_of(std::move(root), std::move(node));
}

}  // namespace tokens

TAM_TEST_P(tam_termination, many_tokens_in_flight) {
    watchdog dog("many_tokens_in_flight", 25);
    t.job_ok([p](am::context& ctx) {
        const am::tam::result res = am::tam::run(ctx, tokens::make(), 0, {}, opts(p));
        word visits = 0;
        for (unsigned i = 0; i < tokens::count; ++i) visits += tokens::hops_of(i) + 1;
        const word n = static_cast<word>(ctx.size());
        EXPECT_TRUE(res.finished) << "rank " << ctx.rank() << ": run returned before the end";
        EXPECT_EQ(res.value, tokens::expected(ctx.size())) << "rank " << ctx.rank();
        // root: t0, all_in, go, done; nodes: hello, ack; one fwd per visit
        EXPECT_EQ(res.total.threads, 4 + 2 * n + visits);
        // root: start, n hellos, n acks, a token home each; nodes: start, successor, a visit each
        EXPECT_EQ(res.total.inlets, 1 + 2 * n + tokens::count + 2 * n + visits);
    });
}

// With poll_every > 1 the core is polled less often; the result and the counts are the same.
TAM_TEST_P(tam_termination, many_tokens_poll_every_8) {
    watchdog dog("many_tokens_poll_every_8", 25);
    t.job_ok([p](am::context& ctx) {
        am::tam::options o = opts(p);
        o.poll_every = 8;
        const am::tam::result res = am::tam::run(ctx, tokens::make(), 0, {}, o);
        EXPECT_TRUE(res.finished) << "rank " << ctx.rank();
        EXPECT_EQ(res.value, tokens::expected(ctx.size())) << "rank " << ctx.rank();
    });
}

AM_INSTANTIATE(tam_termination, tam_params());

}  // namespace
