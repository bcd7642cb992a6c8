// SPDX-License-Identifier: MIT
// Contiguous put and get (Split-C) on both paths: every rank to and from every rank at once
// with random sizes (empty, one byte, odd, above max_medium(), ~300 KiB) at random offsets,
// flags counted exactly; blocking calls; puts and gets to self; calls issued from handlers;
// typed pointers; and that the configured path is the one taken.
#include "rma/rma_support.hpp"

#include <algorithm>
#include <random>

namespace {

using am_test::rma_test;

constexpr std::size_t kib = 1024;

struct xfer {
    std::size_t off = 0, len = 0;
    std::uint64_t seed = 0;
};

// Transfer number `round` from rank `src` to rank `dst`, inside a slot of `slot` bytes. Pairs
// cycle through the edge cases in different rounds, so one round mixes all sizes.
xfer plan(int src, int dst, int round, std::size_t slot, std::size_t max_medium) {
    std::mt19937_64 rng(
        am_test::mix(static_cast<std::uint64_t>(src * 1000003 + dst * 1009 + round)));
    xfer x;
    x.seed = rng();
    auto place = [&](std::size_t len) {
        x.len = std::min(len, slot);
        x.off = std::uniform_int_distribution<std::size_t>(0, slot - x.len)(rng);
    };
    switch ((round + src + dst) % 8) {
        case 0:
            place(0);
            break;
        case 1:
            place(1);
            break;
        case 2:
            place(max_medium + 1);
            break;
        case 3:  // ~300 KiB, odd, ending at the end of the slot
            x.len = std::min<std::size_t>(300 * kib + 3, slot);
            x.off = slot - x.len;
            break;
        case 4:
            place(max_medium);
            break;
        case 5:
            place(4095);
            break;
        default:
            place(std::uniform_int_distribution<std::size_t>(0, slot)(rng));
    }
    return x;
}

class put_get : public rma_test {};

// Rounds of split-phase puts from every rank into a slot per source in every rank's inbox.
// The target's flag counts exactly one per put (empty ones included) once the data is there;
// `done` counts on the origin.
AM_RMA_TEST(put_get, all_to_all_puts) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::uint64_t>(n);
    const std::size_t slot = 320 * kib;
    const int rounds = 8;
    am::counter flag(ctx), done(ctx);
    const auto inbox = ctx.allocate<std::byte>(slot * static_cast<std::size_t>(n));
    const std::vector<am::global_ptr<std::byte>> boxes = ctx.exchange(inbox);
    const std::span<std::byte> mine(ctx.local(inbox), slot * static_cast<std::size_t>(n));
    for (int k = 0; k < rounds; ++k) {
        for (int i = 0; i < n; ++i) {
            const int d = (me + i) % n;
            const xfer x = plan(me, d, k, slot, ctx.max_medium());
            std::vector<std::byte> src = am_test::pattern(x.len, x.seed);
            const auto to =
                boxes[static_cast<std::size_t>(d)] +
                static_cast<std::ptrdiff_t>(static_cast<std::size_t>(me) * slot + x.off);
            ctx.put(to, src.data(), x.len, flag, done);
            std::ranges::fill(src, std::byte{0xee});  // the source may be reused at once
        }
        flag.wait(un * static_cast<std::uint64_t>(k + 1));
        done.wait(un * static_cast<std::uint64_t>(k + 1));
        for (int s = 0; s < n; ++s) {
            const xfer x = plan(s, me, k, slot, ctx.max_medium());
            AM_EXPECT_BYTES(mine.subspan(static_cast<std::size_t>(s) * slot + x.off, x.len),
                            am_test::pattern(x.len, x.seed))
                << " round " << k << ": " << x.len << " bytes at " << x.off << " from rank " << s;
        }
        ctx.barrier();  // every rank checked round k before round k+1 overwrites it
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), un * rounds) << "puts received";
    EXPECT_EQ(done.value(), un * rounds) << "puts completed";
}

// Every rank exposes a pattern; all ranks get random pieces of every rank's at once, all
// outstanding together, into private buffers and (every other round) into their own segment.
AM_RMA_TEST(put_get, all_to_all_gets) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::size_t>(n);
    const std::size_t area = 640 * kib, slot = 320 * kib;
    const int rounds = 6;
    am::counter flag(ctx);
    const auto exposed = ctx.allocate<std::byte>(area);
    am_test::fill_pattern({ctx.local(exposed), area}, 500 + static_cast<std::uint64_t>(me));
    const auto all = ctx.exchange(exposed);
    const auto landing = ctx.allocate<std::byte>(un * slot * (rounds / 2));
    std::vector<std::vector<std::byte>> bufs(un * rounds);
    std::vector<std::span<std::byte>> dst(un * rounds);
    ctx.barrier();
    for (int k = 0; k < rounds; ++k) {
        for (int i = 0; i < n; ++i) {
            const int s = (me + i) % n;
            const std::size_t idx = static_cast<std::size_t>(k) * un + static_cast<std::size_t>(s);
            const xfer x = plan(s, me, k, area, ctx.max_medium());
            if (k % 2 == 0) {
                bufs[idx].assign(x.len, std::byte{0xcd});
                dst[idx] = bufs[idx];
            } else {
                const std::size_t at = (static_cast<std::size_t>(k / 2) * un + s) * slot;
                dst[idx] = {ctx.local(landing) + at, std::min(x.len, slot)};
            }
            const auto from = all[static_cast<std::size_t>(s)] + static_cast<std::ptrdiff_t>(x.off);
            ctx.get(dst[idx].data(), from, dst[idx].size(), flag);
        }
    }
    flag.wait(un * rounds);
    for (int k = 0; k < rounds; ++k) {
        for (int s = 0; s < n; ++s) {
            const std::size_t idx = static_cast<std::size_t>(k) * un + static_cast<std::size_t>(s);
            const xfer x = plan(s, me, k, area, ctx.max_medium());
            const auto want = am_test::pattern(area, 500 + static_cast<std::uint64_t>(s));
            AM_EXPECT_BYTES(dst[idx], std::span(want).subspan(x.off, dst[idx].size()))
                << " round " << k << ": " << dst[idx].size() << " bytes at " << x.off << " of rank "
                << s;
        }
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), un * rounds) << "gets completed";
}

// Blocking put returns with the data in place at the target: a get issued right after it (no
// barrier) reads it back; the target sees it after a barrier.
AM_RMA_TEST(put_get, blocking) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    const std::size_t slot = 320 * kib;
    const int rounds = 8;
    const auto inbox = ctx.allocate<std::byte>(slot);
    const auto boxes = ctx.exchange(inbox);
    for (int k = 0; k < rounds; ++k) {
        const xfer x = plan(me, right, k, slot, ctx.max_medium());
        std::vector<std::byte> src = am_test::pattern(x.len, x.seed);
        const auto to = boxes[static_cast<std::size_t>(right)] + static_cast<std::ptrdiff_t>(x.off);
        ctx.put(to, src.data(), x.len);
        std::ranges::fill(src, std::byte{0});
        std::vector<std::byte> back(x.len, std::byte{0xcd});
        ctx.get(back.data(), to, x.len);
        AM_EXPECT_BYTES(back, am_test::pattern(x.len, x.seed))
            << " round " << k << ": " << x.len << " bytes at " << x.off << " read back";
        ctx.barrier();
        const xfer y = plan(left, me, k, slot, ctx.max_medium());
        AM_EXPECT_BYTES(std::span(ctx.local(inbox) + y.off, y.len), am_test::pattern(y.len, y.seed))
            << " round " << k << ": as seen by the target";
        ctx.barrier();
    }
}

// Puts and gets whose target is this rank: from private memory and from the segment itself,
// into private memory and into the segment.
AM_RMA_TEST(put_get, to_self) {
    const int me = ctx.rank();
    const std::size_t len = 200 * kib + 11;
    am::counter flag(ctx), done(ctx), got(ctx);
    const auto a = ctx.allocate<std::byte>(len), b = ctx.allocate<std::byte>(len),
               c = ctx.allocate<std::byte>(len);
    const auto want = am_test::pattern(len, 77 + static_cast<std::uint64_t>(me));
    ctx.put(a, want.data(), len, flag, done);  // private -> segment
    flag.wait(1);
    done.wait(1);
    AM_EXPECT_BYTES(std::span(ctx.local(a), len), want) << " after a put to self";
    ctx.put(b, ctx.local(a), len, flag);  // segment -> segment
    flag.wait(2);
    AM_EXPECT_BYTES(std::span(ctx.local(b), len), want);
    ctx.get(ctx.local(c), b, len, got);  // segment -> segment
    std::vector<std::byte> back(len);
    ctx.get(back.data(), c + 1, len - 1, got);  // -> private, unaligned start
    got.wait(2);
    AM_EXPECT_BYTES(std::span(ctx.local(c), len), want);
    AM_EXPECT_BYTES(std::span(back).first(len - 1), std::span(want).subspan(1));
    // Blocking, one byte and empty.
    const std::byte one{0x5a};
    ctx.put(a + 17, &one, 1);
    EXPECT_EQ(ctx.local(a)[17], one);
    std::byte out{0};
    ctx.get(&out, a + 17, 1);
    EXPECT_EQ(out, one);
    ctx.put(a, static_cast<const std::byte*>(nullptr), 0);
    ctx.get(static_cast<std::byte*>(nullptr), a, 0);
    ctx.quiesce();
    EXPECT_EQ(flag.value(), 2u);
    EXPECT_EQ(done.value(), 1u);
    EXPECT_EQ(got.value(), 2u);
}

// Split-phase puts and gets issued by a request handler: rank r asks its right neighbour to
// put data into r's inbox and to get data from r's exposed area.
AM_RMA_TEST(put_get, from_handler) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    const std::size_t sizes[] = {1, 5000, ctx.max_medium() + 1, 100 * kib + 1};
    constexpr std::size_t count = std::size(sizes);
    const std::size_t slot = 128 * kib;
    am::counter put_flag(ctx), put_done(ctx), get_flag(ctx), asked(ctx);
    const auto inbox = ctx.allocate<std::byte>(slot * count);
    const auto exposed = ctx.allocate<std::byte>(slot);
    am_test::fill_pattern({ctx.local(exposed), slot}, 900 + static_cast<std::uint64_t>(me));
    const auto boxes = ctx.exchange(inbox);
    const auto areas = ctx.exchange(exposed);
    std::vector<std::byte> pulled(slot * count, std::byte{0xcd});  // valid until the end
    auto serve = ctx.handler([&](am::token& t, std::uint64_t k, std::uint64_t len) {
        const std::size_t src = static_cast<std::size_t>(t.source());
        const std::vector<std::byte> data = am_test::pattern(len, 1000 * k + src);
        t.ctx().put(boxes[src] + static_cast<std::ptrdiff_t>(k * slot), data.data(), len, put_flag,
                    put_done);
        t.ctx().get(pulled.data() + k * slot, areas[src] + static_cast<std::ptrdiff_t>(k), len,
                    get_flag);
        asked.add();
    });
    ctx.barrier();
    for (std::size_t k = 0; k < count; ++k) ctx.request(right, serve, std::uint64_t{k}, sizes[k]);
    put_flag.wait(count);  // the right neighbour's puts into this rank
    for (std::size_t k = 0; k < count; ++k) {
        AM_EXPECT_BYTES(std::span(ctx.local(inbox) + k * slot, sizes[k]),
                        am_test::pattern(sizes[k], 1000 * k + static_cast<std::uint64_t>(me)))
            << " put " << k << " from a handler on rank " << right;
    }
    asked.wait(count);
    get_flag.wait(count);  // this rank's handler-issued gets from the left neighbour
    put_done.wait(count);
    const auto theirs = am_test::pattern(slot, 900 + static_cast<std::uint64_t>(left));
    for (std::size_t k = 0; k < count; ++k) {
        AM_EXPECT_BYTES(std::span(pulled).subspan(k * slot, sizes[k]),
                        std::span(theirs).subspan(k, sizes[k]))
            << " get " << k << " from a handler, from rank " << left;
    }
    ctx.quiesce();
    EXPECT_EQ(put_flag.value(), count);
    EXPECT_EQ(put_done.value(), count);
    EXPECT_EQ(get_flag.value(), count);
}

// global_ptr<T> of a struct: element arithmetic, puts and gets in objects.
struct record {
    std::uint64_t key;
    std::uint32_t a, b;
    double value;
};

record make_record(int rank, std::size_t i) {
    return {am_test::mix(static_cast<std::uint64_t>(rank) * 100000 + i),
            static_cast<std::uint32_t>(i), static_cast<std::uint32_t>(rank),
            static_cast<double>(i) * 0.5};
}

bool same(const record& x, const record& y) {
    return x.key == y.key && x.a == y.a && x.b == y.b && x.value == y.value;
}

AM_RMA_TEST(put_get, typed_objects) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    constexpr std::size_t count = 4000;  // 96 000 bytes: above max_medium()
    am::counter flag(ctx), got(ctx);
    const auto arr = ctx.allocate<record>(count + 10);
    const auto arrs = ctx.exchange(arr);
    std::vector<record> src(count);
    for (std::size_t i = 0; i < count; ++i) src[i] = make_record(me, i);
    ctx.put(arrs[static_cast<std::size_t>(right)] + 3, src.data(), count, flag);
    flag.wait(1);
    const record* at = ctx.local(arr);
    for (std::size_t i = 0; i < count; ++i) {
        if (!same(at[3 + i], make_record(left, i))) {
            ADD_FAILURE() << "record " << i << " from rank " << left << " differs";
            break;
        }
    }
    ctx.barrier();
    std::vector<record> back(count / 2);
    ctx.get(back.data(), arrs[static_cast<std::size_t>(right)] + 3 + count / 2, count / 2, got);
    got.wait(1);
    for (std::size_t i = 0; i < count / 2; ++i) {
        if (!same(back[i], make_record(me, count / 2 + i))) {
            ADD_FAILURE() << "record " << i << " read back from rank " << right << " differs";
            break;
        }
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), 1u);
    EXPECT_EQ(got.value(), 1u);
}

AM_INSTANTIATE(put_get, am_test::make_params({1, 2, 4}, {1, 2, 4}));

// ------------------------------------------------------------------------------- many ranks

class put_get_small : public rma_test {};

// Every rank puts a few bytes into and gets a few bytes from every rank, twice, all at once
// (cheap enough for 64 oversubscribed ranks).
AM_RMA_TEST(put_get_small, all_to_all) {
    const int n = ctx.size(), me = ctx.rank();
    const auto un = static_cast<std::size_t>(n);
    constexpr std::size_t slot = 64;
    am::counter flag(ctx), got(ctx);
    const auto inbox = ctx.allocate<std::byte>(slot * un * 2);
    const auto exposed = ctx.allocate<std::byte>(slot);
    am_test::fill_pattern({ctx.local(exposed), slot}, 40 + static_cast<std::uint64_t>(me));
    const auto boxes = ctx.exchange(inbox);
    const auto areas = ctx.exchange(exposed);
    auto len_of = [](int s, int d, int k) {
        return static_cast<std::size_t>(1 + (s * 7 + d * 3 + k * 5) % static_cast<int>(slot));
    };
    std::vector<std::byte> back(slot * un * 2, std::byte{0xcd});
    for (int k = 0; k < 2; ++k) {
        for (int i = 0; i < n; ++i) {
            const int d = (me + i) % n;
            const std::size_t len = len_of(me, d, k);
            const auto data = am_test::pattern(len, static_cast<std::uint64_t>(me * 131 + d + k));
            const std::size_t at = (static_cast<std::size_t>(k) * un + me) * slot;
            ctx.put(boxes[static_cast<std::size_t>(d)] + static_cast<std::ptrdiff_t>(at),
                    data.data(), len, flag);
            const std::size_t back_at = (static_cast<std::size_t>(k) * un + d) * slot;
            ctx.get(back.data() + back_at, areas[static_cast<std::size_t>(d)], len, got);
        }
    }
    flag.wait(2 * un);
    got.wait(2 * un);
    for (int k = 0; k < 2; ++k) {
        for (int s = 0; s < n; ++s) {
            const std::size_t len = len_of(s, me, k);
            const std::size_t at = (static_cast<std::size_t>(k) * un + s) * slot;
            AM_EXPECT_BYTES(std::span(ctx.local(inbox) + at, len),
                            am_test::pattern(len, static_cast<std::uint64_t>(s * 131 + me + k)))
                << " put from rank " << s;
            const std::size_t glen = len_of(me, s, k);
            const auto theirs = am_test::pattern(slot, 40 + static_cast<std::uint64_t>(s));
            AM_EXPECT_BYTES(std::span(back).subspan(at, glen), std::span(theirs).first(glen))
                << " got from rank " << s;
        }
    }
    ctx.quiesce();
    EXPECT_EQ(flag.value(), 2 * un);
    EXPECT_EQ(got.value(), 2 * un);
}

AM_INSTANTIATE(put_get_small, am_test::all_params());

// ----------------------------------------------------------------------------- path choice

class path_choice : public rma_test {};

// The configured path is the one taken: through active messages every byte of a put or get to
// another rank travels in messages; the automatic path copies directly when the target's
// segment is mapped here (threads and shm map every segment, mpi those of the ranks of this
// node), so almost nothing does, uses the one-sided network where the transport has one (ucx,
// other nodes), so nothing travels in messages either, and otherwise sends it in messages too.
AM_RMA_TEST(path_choice, data_travels_as_configured) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n;
    const std::size_t len = 100 * kib;
    const auto inbox = ctx.allocate<std::byte>(len);
    const auto boxes = ctx.exchange(inbox);
    const auto data = am_test::pattern(len, 3);
    std::vector<std::byte> back(len);
    const am::stats before = ctx.stats();
    ctx.put(boxes[static_cast<std::size_t>(right)], data.data(), len);
    const am::stats mid = ctx.stats();
    ctx.get(back.data(), boxes[static_cast<std::size_t>(right)], len);
    const am::stats after = ctx.stats();
    AM_EXPECT_BYTES(back, data);
    const std::uint64_t put_bytes = mid.bytes_sent - before.bytes_sent;
    const std::uint64_t get_bytes = after.bytes_received - mid.bytes_received;
    const bool direct = path == am::rma_path::automatic && am_test::same_node(me, right);
    const bool network = path == am::rma_path::automatic && am_test::one_sided(me, right);
    EXPECT_EQ(ctx.local(boxes[static_cast<std::size_t>(right)]) != nullptr, direct)
        << "rank " << right << "'s segment seen from rank " << me
        << " with AM_RMA=" << am_test::rma_path_name(path);
    if (network) {
        EXPECT_LT(put_bytes, len / 2)
            << "a put over the one-sided network sent its data as messages";
        EXPECT_LT(get_bytes, len / 2)
            << "a get over the one-sided network got its data as messages";
    } else if (!direct) {
        EXPECT_GE(put_bytes, len) << "payload bytes sent by a put through active messages";
        EXPECT_GE(get_bytes, len) << "payload bytes received by a get through active messages";
    } else {
        EXPECT_LT(put_bytes, len / 2) << "the automatic path sent the data of a put as messages";
        EXPECT_LT(get_bytes, len / 2) << "the automatic path received a get's data as messages";
    }
    ctx.barrier();
}

AM_INSTANTIATE(path_choice, am_test::make_params({2, 4}, {2, 4}));

}  // namespace
