// SPDX-License-Identifier: MIT
// Misuse of the Split-C layer on both paths: ranges outside the target's segment, bad ranks,
// null pointers, to_global() of foreign memory, a full segment, sizes that overflow, and
// blocking calls in handlers. Each throws am::error with the right code and a message naming
// the call, the rank and the limit; nothing is written or counted for a rejected call, and
// operations accepted before (and after) it all complete.
#include "rma/rma_support.hpp"

#include <climits>
#include <cstdint>

namespace {

using am_test::expect_error;
using am_test::rank_prefix;
using am_test::rma_test;

class rma_errors : public rma_test {};

// Split-phase operations accepted around the errors: each `issue()` puts 100 bytes into the
// right neighbour's inbox and gets 100 bytes from its exposed area. Made on every rank (it
// allocates and exchanges the inbox and the exposed area); the tests pass its counters to the
// calls they expect to be refused too, which must count nothing.
struct accepted {
    explicit accepted(am::context& c)
        : ctx(c),
          put_flag(c),
          done(c),
          get_flag(c),
          my_inbox(c.allocate<std::byte>(100 * 64)),
          my_exposed(c.allocate<std::byte>(100)) {
        am_test::fill_pattern({ctx.local(my_exposed), 100}, 55);
        const auto right = static_cast<std::size_t>((c.rank() + 1) % c.size());
        inbox = c.exchange(my_inbox)[right];
        exposed = c.exchange(my_exposed)[right];
    }
    accepted(const accepted&) = delete;
    accepted& operator=(const accepted&) = delete;

    am::context& ctx;
    am::counter put_flag, done, get_flag;
    am::global_ptr<std::byte> my_inbox, my_exposed;  // this rank's
    am::global_ptr<std::byte> inbox, exposed;        // of the right neighbour
    std::vector<std::vector<std::byte>> gets = {};
    int count = 0;

    void issue() {
        const auto data = am_test::pattern(100, static_cast<std::uint64_t>(count));
        ctx.put(inbox + static_cast<std::ptrdiff_t>(100 * count), data.data(), 100, put_flag, done);
        gets.emplace_back(100, std::byte{0});  // moving the vectors keeps their buffers
        ctx.get(gets.back().data(), exposed, 100, get_flag);
        ++count;
    }
    // Waits for everything issued, then checks exact counts and the data in this rank's inbox.
    void check() {
        const std::span<const std::byte> mine(ctx.local(my_inbox), 100 * 64);
        const auto want = static_cast<std::uint64_t>(count);
        put_flag.wait(want);
        done.wait(want);
        get_flag.wait(want);
        ctx.quiesce();
        EXPECT_EQ(put_flag.value(), want) << "puts received";
        EXPECT_EQ(done.value(), want) << "puts completed";
        EXPECT_EQ(get_flag.value(), want) << "gets completed";
        for (int i = 0; i < count; ++i) {
            AM_EXPECT_BYTES(mine.subspan(static_cast<std::size_t>(100 * i), 100),
                            am_test::pattern(100, static_cast<std::uint64_t>(i)))
                << " accepted put " << i;
        }
        for (const auto& g : gets) AM_EXPECT_BYTES(g, am_test::pattern(100, 55)) << " accepted get";
    }
};

AM_RMA_TEST(rma_errors, out_of_segment) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    const std::span<std::byte> seg = ctx.segment();
    const std::size_t size = seg.size();
    constexpr std::size_t tail = 4096;
    // The end of every segment holds a pattern that rejected puts must leave alone; nothing is
    // allocated there (the blocks below are small and come first).
    am_test::fill_pattern(seg.last(tail), 1234);
    accepted ok(ctx);
    ctx.barrier();
    for (int i = 0; i < 8; ++i) ok.issue();

    using gp = am::global_ptr<std::byte>;
    struct range {
        std::uint64_t offset;
        std::size_t len;
    };
    const range ranges[] = {
        {size, 1},            // one byte past the end
        {size - 10, 11},      // ends one past the end
        {size + 4096, 8},     // well past the end
        {UINT64_MAX - 3, 8},  // offset + length wraps around
        {size - tail, tail + 1},
    };
    auto expect_oos = [&](auto&& f, const char* call) {
        expect_error(f, am::errc::out_of_segment, {call, rank_prefix(ctx), std::to_string(size)});
    };
    for (const range& r : ranges) {
        SCOPED_TRACE("offset " + std::to_string(r.offset) + ", " + std::to_string(r.len) +
                     " bytes");
        const std::vector<std::byte> big = am_test::pattern(r.len, 3);
        std::vector<std::byte> sink(r.len, std::byte{0xcd});
        const gp at(right, r.offset);
        expect_oos([&] { ctx.put(at, big.data(), r.len, ok.put_flag, ok.done); },
                   "am::context::put");
        expect_oos([&] { ctx.put(at, big.data(), r.len, ok.put_flag); }, "am::context::put");
        expect_oos([&] { ctx.put(at, big.data(), r.len); }, "am::context::put");
        expect_oos([&] { ctx.get(sink.data(), at, r.len, ok.get_flag); }, "am::context::get");
        expect_oos([&] { ctx.get(sink.data(), at, r.len); }, "am::context::get");
        EXPECT_TRUE(std::ranges::all_of(sink, [](std::byte b) { return b == std::byte{0xcd}; }))
            << "a rejected get wrote into its destination";
        ok.issue();
    }
    // Strided: the first rows fit, the last one ends one byte past the segment.
    {
        const std::size_t stride = 1000, width = 16, rows = 4;
        const gp at(right, size - (rows - 1) * stride - width + 1);
        const auto rows_src = am_test::pattern(rows * width, 4);
        std::vector<std::byte> rows_dst(rows * width, std::byte{0xcd});
        expect_oos(
            [&] { ctx.put_strided(at, stride, rows_src.data(), width, width, rows, ok.put_flag); },
            "am::context::put_strided");
        expect_oos([&] { ctx.put_strided(at, stride, rows_src.data(), width, width, rows); },
                   "am::context::put_strided");
        expect_oos(
            [&] { ctx.get_strided(rows_dst.data(), width, at, stride, width, rows, ok.get_flag); },
            "am::context::get_strided");
        expect_oos([&] { ctx.get_strided(rows_dst.data(), width, at, stride, width, rows); },
                   "am::context::get_strided");
        EXPECT_TRUE(
            std::ranges::all_of(rows_dst, [](std::byte b) { return b == std::byte{0xcd}; }));
    }
    // Indexed: every index fits but the last, which is the first element past the segment.
    {
        const am::global_ptr<std::uint32_t> base(right, 0);
        const std::vector<std::uint64_t> idx = {0, 1, (size - tail) / 4, size / 4};
        const std::vector<std::uint32_t> vals = {1, 2, 3, 4};
        std::vector<std::uint32_t> sink(idx.size(), 0xcdcdcdcd);
        expect_oos([&] { ctx.put_indexed(base, idx, vals.data(), ok.put_flag); },
                   "am::context::put_indexed");
        expect_oos([&] { ctx.put_indexed(base, idx, vals.data()); }, "am::context::put_indexed");
        expect_oos([&] { ctx.get_indexed(sink.data(), base, idx, ok.get_flag); },
                   "am::context::get_indexed");
        expect_oos([&] { ctx.get_indexed(sink.data(), base, idx); }, "am::context::get_indexed");
        EXPECT_EQ(sink, std::vector<std::uint32_t>(idx.size(), 0xcdcdcdcd));
    }
    for (int i = 0; i < 8; ++i) ok.issue();
    ok.check();  // everything accepted completes, once
    AM_EXPECT_BYTES(seg.last(tail), am_test::pattern(tail, 1234))
        << " the end of the segment was written by a rejected put";
    ctx.barrier();
}

// Ranks outside [0, size) and null pointers, for every call.
AM_RMA_TEST(rma_errors, bad_rank_and_null) {
    const int n = ctx.size();
    accepted ok(ctx);
    ok.issue();
    const auto src = am_test::pattern(16, 1);
    std::vector<std::byte> sink(16, std::byte{0xcd});
    const std::vector<std::uint64_t> idx = {0, 1};
    // Every call on pointer `p`; `check(f, call)` judges each.
    auto every_call = [&](am::global_ptr<std::byte> p, auto&& check) {
        check([&] { ctx.put(p, src.data(), 16, ok.put_flag, ok.done); }, "am::context::put");
        check([&] { ctx.put(p, src.data(), 16, ok.put_flag); }, "am::context::put");
        check([&] { ctx.put(p, src.data(), 16); }, "am::context::put");
        check([&] { ctx.get(sink.data(), p, 16, ok.get_flag); }, "am::context::get");
        check([&] { ctx.get(sink.data(), p, 16); }, "am::context::get");
        check([&] { ctx.put_strided(p, 8, src.data(), 4, 4, 2, ok.put_flag); },
              "am::context::put_strided");
        check([&] { ctx.get_strided(sink.data(), 4, p, 8, 4, 2, ok.get_flag); },
              "am::context::get_strided");
        check([&] { ctx.put_indexed(p, idx, src.data(), ok.put_flag); },
              "am::context::put_indexed");
        check([&] { ctx.get_indexed(sink.data(), p, idx, ok.get_flag); },
              "am::context::get_indexed");
    };
    for (int bad : {n, n + 1, INT_MAX}) {
        SCOPED_TRACE("rank " + std::to_string(bad));
        every_call(am::global_ptr<std::byte>(bad, 0), [&](auto&& f, const char* call) {
            expect_error(f, am::errc::bad_rank, {call, rank_prefix(ctx), std::to_string(bad)});
        });
    }
    // A null pointer (rank -1) is invalid_argument (docs/splitc.md).
    every_call(am::global_ptr<std::byte>{}, [&](auto&& f, const char* call) {
        expect_error(f, am::errc::invalid_argument, {call, rank_prefix(ctx)});
    });
    // Other negative ranks: null too (global_ptr::is_null), or a bad rank.
    for (int bad : {-2, INT_MIN}) {
        SCOPED_TRACE("rank " + std::to_string(bad));
        every_call(am::global_ptr<std::byte>(bad, 0), [&](auto&& f, const char* call) {
            try {
                f();
                ADD_FAILURE() << call << " accepted a pointer of rank " << bad;
            } catch (const am::error& e) {
                EXPECT_TRUE(e.code() == am::errc::bad_rank ||
                            e.code() == am::errc::invalid_argument)
                    << e.what();
                EXPECT_TRUE(am_test::contains(e.what(), call)) << e.what();
                EXPECT_TRUE(am_test::contains(e.what(), rank_prefix(ctx))) << e.what();
            }
        });
    }
    // A null local buffer with a non-zero length: invalid_argument.
    const auto target = ok.inbox;
    expect_error([&] { ctx.put(target, static_cast<const std::byte*>(nullptr), 16, ok.put_flag); },
                 am::errc::invalid_argument, {"am::context::put", rank_prefix(ctx)});
    expect_error([&] { ctx.get(static_cast<std::byte*>(nullptr), target, 16, ok.get_flag); },
                 am::errc::invalid_argument, {"am::context::get", rank_prefix(ctx)});
    expect_error([&] { ctx.put(target, static_cast<const std::byte*>(nullptr), 16); },
                 am::errc::invalid_argument, {"am::context::put", rank_prefix(ctx)});
    EXPECT_TRUE(std::ranges::all_of(sink, [](std::byte b) { return b == std::byte{0xcd}; }));
    ok.issue();
    ok.check();
}

// to_global() of memory that is not (entirely) in this rank's segment.
AM_RMA_TEST(rma_errors, to_global_outside) {
    const int n = ctx.size(), me = ctx.rank();
    const std::span<std::byte> seg = ctx.segment();
    const std::size_t size = seg.size();
    const std::vector<std::string> parts = {"to_global", rank_prefix(ctx)};
    int on_stack = 0;
    expect_error([&] { (void)ctx.to_global(&on_stack); }, am::errc::out_of_segment, parts);
    auto heap = std::make_unique<double>(1.0);
    expect_error([&] { (void)ctx.to_global(heap.get()); }, am::errc::out_of_segment, parts);
    expect_error([&] { (void)ctx.to_global(static_cast<std::byte*>(nullptr)); },
                 am::errc::out_of_segment, parts);
    expect_error([&] { (void)ctx.to_global(seg.data() + size); }, am::errc::out_of_segment, parts);
    // An object that starts inside and ends outside.
    expect_error(
        [&] { (void)ctx.to_global(reinterpret_cast<std::uint64_t*>(seg.data() + size - 4)); },
        am::errc::out_of_segment, parts);
    const auto before =
        reinterpret_cast<std::byte*>(reinterpret_cast<std::uintptr_t>(seg.data()) - 1);
    expect_error([&] { (void)ctx.to_global(before); }, am::errc::out_of_segment, parts);
    // Another rank's segment, mapped here (threads, shm, a rank of this node on mpi; automatic
    // path), is not this rank's.
    const int right = (me + 1) % n;
    if (n > 1 && path == am::rma_path::automatic && am_test::same_node(me, right)) {
        std::byte* theirs = ctx.local(am::global_ptr<std::byte>(right, 64));
        ASSERT_NE(theirs, nullptr);
        expect_error([&] { (void)ctx.to_global(theirs); }, am::errc::out_of_segment, parts);
    }
    // The limits themselves are fine.
    EXPECT_EQ(ctx.to_global(seg.data() + size - 1).offset(), size - 1);
    EXPECT_EQ(ctx.to_global(reinterpret_cast<std::uint64_t*>(seg.data() + size - 8)).offset(),
              size - 8);
    ctx.barrier();
}

// A full segment: allocate throws no_memory naming the segment size; after releasing,
// allocation works again.
AM_RMA_TEST(rma_errors, no_memory) {
    const std::size_t size = ctx.segment().size();
    const std::vector<std::string> parts = {"allocate", rank_prefix(ctx), std::to_string(size)};
    expect_error([&] { (void)ctx.allocate<std::byte>(size + 1); }, am::errc::no_memory, parts);
    expect_error([&] { (void)ctx.allocate<double>(size); }, am::errc::no_memory, parts);
    expect_error([&] { (void)ctx.allocate<std::byte>(SIZE_MAX); }, am::errc::no_memory, parts);
    expect_error([&] { (void)ctx.allocate<double>(SIZE_MAX / 8); }, am::errc::no_memory, parts);
    const std::size_t blk = size / 16;
    std::vector<am::global_ptr<std::byte>> blocks;
    for (int i = 0; i < 17; ++i) {
        try {
            blocks.push_back(ctx.allocate<std::byte>(blk));
        } catch (const am::error& e) {
            EXPECT_EQ(e.code(), am::errc::no_memory) << e.what();
            for (const auto& p : parts) EXPECT_TRUE(am_test::contains(e.what(), p)) << e.what();
            break;
        }
    }
    EXPECT_GE(blocks.size(), 8u) << "less than half the segment could be allocated";
    EXPECT_LE(blocks.size(), 16u) << "more was allocated than the segment holds";
    // Full now (no block of `blk` left); one released block can be had again.
    expect_error([&] { (void)ctx.allocate<std::byte>(blk); }, am::errc::no_memory, parts);
    ctx.deallocate(blocks[blocks.size() / 2]);
    blocks[blocks.size() / 2] = ctx.allocate<std::byte>(blk);
    for (const auto& p : blocks) ctx.deallocate(p);
    const auto half = ctx.allocate<std::byte>(size / 2);
    EXPECT_EQ(half.rank(), ctx.rank());
}

// Sizes whose byte count overflows size_t (n * sizeof(T), index * sizeof(T), stride *
// sizeof(T)) must be refused, not wrapped into small, valid-looking requests.
AM_RMA_TEST(rma_errors, size_overflow) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    am::counter flag(ctx);
    const auto inbox = ctx.allocate<std::uint32_t>(64);
    std::fill(ctx.local(inbox), ctx.local(inbox) + 64, 0xcdcdcdcdu);
    const auto inboxes = ctx.exchange(inbox);
    const auto target = inboxes[static_cast<std::size_t>(right)];
    ctx.barrier();
    // 2^61 + 1 eight-byte objects: 8 bytes after wrapping.
    try {
        const auto p = ctx.allocate<std::uint64_t>((SIZE_MAX / 8) + 2);
        ADD_FAILURE() << "allocate of 2^61 + 1 objects of 8 bytes returned a block at offset "
                      << p.offset();
    } catch (const am::error& e) {
        EXPECT_EQ(e.code(), am::errc::no_memory) << e.what();
    }
    const std::vector<std::uint32_t> vals(4, 7);
    std::vector<std::uint32_t> sink(4, 0);
    const std::uint64_t wrap = std::uint64_t{1} << 62;  // * 4 bytes = 2^64, i.e. 0
    const std::vector<std::uint64_t> idx = {1, wrap};
    auto refused = [&](auto&& f, const char* what) {
        try {
            f();
            ADD_FAILURE() << what << " was accepted";
        } catch (const am::error& e) {
            EXPECT_TRUE(e.code() == am::errc::out_of_segment ||
                        e.code() == am::errc::invalid_argument)
                << what << ": " << e.what();
        }
    };
    refused([&] { ctx.put_indexed(target, idx, vals.data(), flag); }, "put_indexed at index 2^62");
    refused([&] { ctx.get_indexed(sink.data(), target, idx, flag); }, "get_indexed at index 2^62");
    // 2^62 + 1 objects of 4 bytes: a stride of 4 bytes after wrapping, rows side by side.
    refused([&] { ctx.put_strided(target, wrap + 1, vals.data(), 1, 1, 2, flag); },
            "put_strided with a stride of 2^62 + 1 objects");
    refused([&] { ctx.get_strided(sink.data(), 1, target, wrap + 1, 1, 2, flag); },
            "get_strided with a stride of 2^62 + 1 objects");
    refused([&] { ctx.put(target, vals.data(), (SIZE_MAX / 4) + 2, flag); },
            "put of 2^62 + 1 objects of 4 bytes");
    refused([&] { ctx.get(sink.data(), target, (SIZE_MAX / 4) + 2, flag); },
            "get of 2^62 + 1 objects of 4 bytes");
    ctx.barrier();
    ctx.quiesce();
    EXPECT_EQ(flag.value(), 0u) << "a refused operation counted";
    const std::uint32_t* mine = ctx.local(inbox);
    EXPECT_TRUE(std::all_of(mine, mine + 64, [](std::uint32_t v) { return v == 0xcdcdcdcdu; }))
        << "a refused operation wrote into the segment";
}

// Blocking put and get (every variant) in a handler: errc::bad_context, nothing written;
// split-phase calls in the same handler work.
AM_RMA_TEST(rma_errors, blocking_in_handler) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    am::counter flag(ctx), handled(ctx);
    const auto inbox = ctx.allocate<std::byte>(256);
    std::fill(ctx.local(inbox), ctx.local(inbox) + 256, std::byte{0xcd});
    const auto inboxes = ctx.exchange(inbox);
    std::vector<std::byte> sink(16, std::byte{0xab});
    auto h = ctx.handler([&](am::token& t) {
        const auto src = static_cast<std::size_t>(t.source());
        const auto p = inboxes[src];
        const auto data = am_test::pattern(16, 8);
        const std::vector<std::uint64_t> idx = {0, 1};
        auto check = [&](auto&& f, const char* call) {
            expect_error(f, am::errc::bad_context, {call, rank_prefix(ctx), "handler"});
        };
        check([&] { t.ctx().put(p, data.data(), 16); }, "am::context::put");
        check([&] { t.ctx().get(sink.data(), p, 16); }, "am::context::get");
        check([&] { t.ctx().put_strided(p, 8, data.data(), 4, 4, 2); }, "am::context::put_strided");
        check([&] { t.ctx().get_strided(sink.data(), 4, p, 8, 4, 2); }, "am::context::get_strided");
        check([&] { t.ctx().put_indexed(p, idx, data.data()); }, "am::context::put_indexed");
        check([&] { t.ctx().get_indexed(sink.data(), p, idx); }, "am::context::get_indexed");
        t.ctx().put(p + 128, data.data(), 16, flag);  // split-phase is fine
        handled.add();
    });
    ctx.barrier();
    ctx.request(right, h);
    flag.wait(1);
    handled.wait(1);
    ctx.quiesce();
    EXPECT_EQ(flag.value(), 1u);
    const std::byte* mine = ctx.local(inbox);
    EXPECT_TRUE(std::all_of(mine, mine + 128, [](std::byte b) { return b == std::byte{0xcd}; }))
        << "a blocking put refused in a handler wrote into the segment";
    AM_EXPECT_BYTES(std::span(mine + 128, 16), am_test::pattern(16, 8));
    EXPECT_TRUE(std::ranges::all_of(sink, [](std::byte b) { return b == std::byte{0xab}; }))
        << "a blocking get refused in a handler wrote its destination";
}

// Calls that send requests are not allowed in reply handlers (docs/splitc.md): a split-phase
// put to another rank (at least two ranks) issued from a reply handler is refused with bad_context,
// and, like every refused call, writes nothing.
class rma_errors_peers : public rma_test {};

AM_RMA_TEST(rma_errors_peers, put_from_reply_handler) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    am::counter flag(ctx), answered(ctx);
    const auto inbox = ctx.allocate<std::byte>(64);
    std::fill_n(ctx.local(inbox), 64, std::byte{0xcd});
    const auto inboxes = ctx.exchange(inbox);
    auto answer = ctx.handler([&](am::token& t) {
        EXPECT_FALSE(t.is_request());
        const auto data = am_test::pattern(64, 4);
        expect_error(
            [&] { t.ctx().put(inboxes[static_cast<std::size_t>(right)], data.data(), 64, flag); },
            am::errc::bad_context, {"am::context::put", rank_prefix(ctx)});
        answered.add();
    });
    auto ask = ctx.handler([answer](am::token& t) { t.reply(answer); });
    ctx.barrier();
    ctx.request(right, ask);
    answered.wait(1);
    ctx.quiesce();
    EXPECT_EQ(flag.value(), 0u);
    const std::byte* mine = ctx.local(inbox);
    EXPECT_TRUE(std::all_of(mine, mine + 64, [](std::byte b) { return b == std::byte{0xcd}; }))
        << "a put refused in a reply handler wrote into the target's segment";
}

AM_INSTANTIATE(rma_errors, am_test::make_params({1, 2, 4}, {1, 2, 4}));
AM_INSTANTIATE(rma_errors_peers, am_test::make_params({2, 4}, {2, 4}));

}  // namespace
