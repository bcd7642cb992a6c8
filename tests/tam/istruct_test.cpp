// SPDX-License-Identifier: MIT
// I-structures (include/am/tam.hpp): a fetch before the store is deferred and its reader gets
// the value when it is written; a fetch after the store is answered at once; many deferred
// readers of one element all get it; stores and fetches across ranks; structures ialloc'd on
// one rank and published to another through messages. Both policies, every transport.
#include "tam/tam_support.hpp"

namespace {

using namespace am_tam_test;
using am::tam::codeblock_def;
using am::tam::program;

class tam_istruct : public tam_test {};

// One frame on rank 0. t0 stores element 1 and fetches element 0 (empty: deferred), then
// forks t1, which fetches element 1 (written: answered at once) and stores element 0 (the
// deferred reader gets 42). The reply inlet files each value by its tag; "done" (entry 2)
// finishes with both.
TAM_TEST_P(tam_istruct, fetch_before_and_after_store) {
    t.job_ok([p](am::context& ctx) {
        codeblock_def cb = codeblock("ist_local", 3);
        cb.threads = {
            {[](frame& f) {
                const istruct_ref a = f.ialloc(2);
                f.slot(0) = a.as_word();
                f.istore(a, 1, 7);
                f.ifetch(a, 0, 1, 0);
                f.fork(1);
            }},
            {[](frame& f) {
                const istruct_ref a = istruct_ref::from(f.slot(0));
                f.ifetch(a, 1, 1, 1);
                f.istore(a, 0, 42);
            }},
            {[](frame& f) { f.finish(f.slot(1) * 1000 + f.slot(2)); }, 2, "done"},
        };
        cb.inlets = {
            [](frame& f, std::span<const word>) { f.post(0); },
            [](frame& f, std::span<const word> a) {  // {value, tag}
                f.slot(1 + static_cast<unsigned>(a[1])) = a[0];
                f.post(2);
            },
        };
        const am::tam::result res = am::tam::run(ctx, program_of(std::move(cb)), 0, {}, opts(p));
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, 42007u) << "element 0 * 1000 + element 1";
        EXPECT_EQ(res.total.fetches, 2u);
        EXPECT_EQ(res.total.deferred, 1u) << "only the fetch before the store waits";
        EXPECT_EQ(res.total.stores, 2u);
        EXPECT_EQ(res.total.inlets, 3u);  // start and two replies
    });
}

// 16 fetches of one empty element, then its store: every reader gets the value once (each
// reply adds value * (tag + 1) and posts "done", entry 16).
TAM_TEST_P(tam_istruct, many_deferred_readers) {
    t.job_ok([p](am::context& ctx) {
        codeblock_def cb = codeblock("ist_many", 2);
        cb.threads = {
            {[](frame& f) {
                const istruct_ref a = f.ialloc(1);
                f.slot(0) = a.as_word();
                for (word i = 0; i < 16; ++i) f.ifetch(a, 0, 1, i);
                f.fork(1);
            }},
            {[](frame& f) { f.istore(istruct_ref::from(f.slot(0)), 0, 5); }},
            {[](frame& f) { f.finish(f.slot(1)); }, 16, "done"},
        };
        cb.inlets = {
            [](frame& f, std::span<const word>) {
                f.slot(1) = 0;
                f.post(0);
            },
            [](frame& f, std::span<const word> a) {
                f.slot(1) += a[0] * (a[1] + 1);
                f.post(2);
            },
        };
        const am::tam::result res = am::tam::run(ctx, program_of(std::move(cb)), 0, {}, opts(p));
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, 5u * (16 * 17 / 2));
        EXPECT_EQ(res.total.fetches, 16u);
        EXPECT_EQ(res.total.deferred, 16u);
        EXPECT_EQ(res.total.stores, 1u);
    });
}

// Across ranks. The root (rank 0) allocates A (one element per rank) and calls a worker on
// every rank r with {root, A, r}. Worker r stores A[(r + 1) % n] = 100 + 7r (a remote store
// but on rank 0) and fetches A[r] (remote, written by worker r - 1, maybe not yet: then
// deferred); it allocates B on its own rank, stores B[0] = 1000 (r + 1) and publishes B to the
// root in a message. When every B has arrived the root fetches each B[0] (remote fetches of
// structures ialloc'd elsewhere). Workers send their A value times (r + 1) to the root and
// release their frames; the root finishes with the sum of everything.
namespace remote {

enum : am::tam::thread_id { t_start, t_fetch_b, t_done };
enum : am::tam::thread_id { w_start, w_reply };
constexpr unsigned b_slot = 2;

word expected(int n) {
    word sum = 0;
    for (int r = 0; r < n; ++r) {
        const int writer = (r + n - 1) % n;
        sum += (100 + 7 * static_cast<word>(writer)) * static_cast<word>(r + 1);
        sum += 1000 * static_cast<word>(r + 1);
    }
    return sum;
}

program make() {
    codeblock_def root = codeblock("ist_root", b_slot + 8);  // A, sum, B of each rank
    root.threads = {
        {[](frame& f) {
             const auto n = static_cast<std::uint32_t>(f.ranks());
             const istruct_ref a = f.ialloc(n);
             f.slot(0) = a.as_word();
             f.set_count(t_fetch_b, n);
             f.set_count(t_done, 2 * n);
             for (int r = 0; r < f.ranks(); ++r) {
                 f.call(1, r, 0, {f.self().as_word(), a.as_word(), am::tam::to_word(r)});
             }
         },
         1, "start"},
        {[](frame& f) {
             for (unsigned r = 0; r < static_cast<unsigned>(f.ranks()); ++r) {
                 f.ifetch(istruct_ref::from(f.slot(b_slot + r)), 0, 3, r);
             }
         },
         runtime_count, "fetch_b"},
        {[](frame& f) { f.finish(f.slot(1)); }, runtime_count, "done"},
    };
    root.inlets = {
        [](frame& f, std::span<const word>) {
            f.slot(1) = 0;
            f.post(t_start);
        },
        [](frame& f, std::span<const word> a) {  // {r, B}
            f.slot(b_slot + static_cast<unsigned>(a[0])) = a[1];
            f.post(t_fetch_b);
        },
        [](frame& f, std::span<const word> a) {  // {r, A[r] * (r + 1)}
            f.slot(1) += a[1];
            f.post(t_done);
        },
        [](frame& f, std::span<const word> a) {  // {B_r[0], r}
            f.slot(1) += a[0];
            f.post(t_done);
        },
    };
    codeblock_def worker = codeblock("ist_worker", 4);  // root, A, r, value
    worker.threads = {
        {[](frame& f) {
             const istruct_ref a = istruct_ref::from(f.slot(1));
             const auto r = static_cast<std::uint32_t>(f.slot(2));
             const auto n = static_cast<std::uint32_t>(f.ranks());
             f.istore(a, (r + 1) % n, 100 + 7 * word{r});
             f.ifetch(a, r, 1, r);
             const istruct_ref b = f.ialloc(1);
             f.istore(b, 0, 1000 * (word{r} + 1));
             f.send(frame_ref::from(f.slot(0)), 1, {word{r}, b.as_word()});
         },
         1, "start"},
        {[](frame& f) {
             f.send(frame_ref::from(f.slot(0)), 2, {f.slot(2), f.slot(3) * (f.slot(2) + 1)});
             f.release();
         },
         1, "reply"},
    };
    worker.inlets = {
        [](frame& f, std::span<const word> a) {
            f.slot(0) = a[0];
            f.slot(1) = a[1];
            f.slot(2) = a[2];
            f.post(w_start);
        },
        [](frame& f, std::span<const word> a) {
            f.slot(3) = a[0];
            f.post(w_reply);
        },
    };
    return program_of(std::move(root), std::move(worker));
}

}  // namespace remote

TAM_TEST_P(tam_istruct, remote_fetch_store_and_published_structures) {
    t.job_ok([p](am::context& ctx) {
        const am::tam::result res = am::tam::run(ctx, remote::make(), 0, {}, opts(p));
        const word n = static_cast<word>(ctx.size());
        EXPECT_TRUE(res.finished) << "rank " << ctx.rank();
        EXPECT_EQ(res.value, remote::expected(ctx.size())) << "rank " << ctx.rank();
        EXPECT_EQ(res.total.stores, 2 * n);
        EXPECT_EQ(res.total.fetches, 2 * n);
        EXPECT_LE(res.total.deferred, n);  // only A's elements can be read before written
        EXPECT_EQ(res.local.stores, ctx.rank() == 0 ? n + 1 : 1u);
        EXPECT_EQ(res.local.fetches, ctx.rank() == 0 ? n + 1 : 1u);
        EXPECT_EQ(res.total.frames, 1 + n);
        EXPECT_EQ(res.total.released, n);
        if (ctx.size() > 1) {
            EXPECT_GT(res.total.remote_messages, 0u);
        }
    });
}

// Deferred readers on every rank of an element stored last: each worker fetches the root's
// element 0, which the root stores only after every worker has said it has asked (the
// fetches are on their way or served, so most are deferred).
TAM_TEST_P(tam_istruct, remote_deferred_readers) {
    t.job_ok([p](am::context& ctx) {
        codeblock_def root = codeblock("ist_wait_root", 2);
        root.threads = {
            {[](frame& f) {
                const istruct_ref a = f.ialloc(1);
                f.slot(0) = a.as_word();
                f.set_count(1, static_cast<std::uint32_t>(f.ranks()));
                f.set_count(2, static_cast<std::uint32_t>(f.ranks()));
                for (int r = 0; r < f.ranks(); ++r) {
                    f.call(1, r, 0, {f.self().as_word(), a.as_word()});
                }
            }},
            {[](frame& f) { f.istore(istruct_ref::from(f.slot(0)), 0, 11); }, runtime_count,
             "store"},
            {[](frame& f) { f.finish(f.slot(1)); }, runtime_count, "done"},
        };
        root.inlets = {
            [](frame& f, std::span<const word>) {
                f.slot(1) = 0;
                f.post(0);
            },
            [](frame& f, std::span<const word>) { f.post(1); },  // a worker has asked
            [](frame& f, std::span<const word> a) {              // {value, rank}
                f.slot(1) += a[0] << (4 * a[1]);
                f.post(2);
            },
        };
        codeblock_def worker = codeblock("ist_wait_worker", 3);
        worker.threads = {
            {[](frame& f) {
                f.ifetch(istruct_ref::from(f.slot(1)), 0, 1);
                f.send(frame_ref::from(f.slot(0)), 1, {});
            }},
            {[](frame& f) {
                f.send(frame_ref::from(f.slot(0)), 2, {f.slot(2), word(f.rank())});
                f.release();
            }},
        };
        worker.inlets = {
            [](frame& f, std::span<const word> a) {
                f.slot(0) = a[0];
                f.slot(1) = a[1];
                f.post(0);
            },
            [](frame& f, std::span<const word> a) {
                f.slot(2) = a[0];
                f.post(1);
            },
        };
        const am::tam::result res =
            am::tam::run(ctx, program_of(std::move(root), std::move(worker)), 0, {}, opts(p));
        word expected = 0;
        for (int r = 0; r < ctx.size(); ++r) expected += word{11} << (4 * r);
        EXPECT_TRUE(res.finished);
        EXPECT_EQ(res.value, expected);
        EXPECT_EQ(res.total.fetches, static_cast<word>(ctx.size()));
        EXPECT_EQ(res.total.stores, 1u);
        if (ctx.size() == 1) {
            EXPECT_EQ(res.total.deferred, 1u);
        }
    });
}

AM_INSTANTIATE(tam_istruct, tam_params());

}  // namespace
