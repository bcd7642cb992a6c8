// SPDX-License-Identifier: MIT
// The job region (src/transport/ring/region.hpp): every part of the layout aligned, inside the
// region, overlapping no other part, for several rank counts and ring and segment sizes; the
// header, the failure reason, and the announcements through which a rank learns which rings
// to scan.
#include "transport/ring/region.hpp"

#include <am/error.hpp>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <thread>
#include <tuple>
#include <vector>

namespace {

namespace ring = am::transport::ring;
using am::transport::num_lanes;

constexpr std::size_t page = 4096;

/// Zero-filled, page-aligned memory for a region of `p` (heap memory, so the address
/// sanitizer sees accesses past its end).
struct region_memory {
    explicit region_memory(const ring::region_params& p)
        : bytes(ring::layout(p).total),
          mem(static_cast<std::byte*>(std::aligned_alloc(page, bytes)), &std::free) {
        if (mem == nullptr) throw std::bad_alloc();
        std::memset(mem.get(), 0, bytes);
        ring::initialize(mem.get(), p);
    }
    std::byte* base() const { return mem.get(); }

    std::size_t bytes;
    std::unique_ptr<std::byte, decltype(&std::free)> mem;
};

/// The parameters of a small region: `ranks` ranks, rings of 1 KiB, no segments.
ring::region_params small_region(int ranks) {
    ring::region_params p;
    p.ranks = ranks;
    p.ring_bytes = 1024;
    return p;
}

/// One part of the region: [begin, end) in bytes from its start.
struct part {
    std::uint64_t begin, end;
    std::string what;
};

std::uint64_t offset(const ring::region& r, const void* p) {
    return static_cast<std::uint64_t>(static_cast<const std::byte*>(p) -
                                      reinterpret_cast<const std::byte*>(&r.header()));
}

/// Every part of the region as the accessors give it, in the order of the layout.
std::vector<part> parts_of(const ring::region& r, const ring::region_params& p) {
    const int n = p.ranks;
    std::vector<part> parts;
    const auto add = [&](const void* at, std::uint64_t size, std::string what) {
        const std::uint64_t b = offset(r, at);
        parts.push_back({b, b + size, std::move(what)});
    };
    add(&r.header(), sizeof(ring::region_header), "header");
    for (int k = 0; k < n; ++k)
        add(&r.info(k), sizeof(ring::rank_info), "info " + std::to_string(k));
    for (int k = 0; k < n; ++k) {
        add(r.gather_slot(k), ring::gather_slot_bytes, "gather " + std::to_string(k));
    }
    for (int k = 0; k < n; ++k) {
        const ring::announce_area a = r.announcements(k);
        add(a.count, 64, "announce count " + std::to_string(k));  // a line of its own
        add(a.entries, sizeof(std::uint32_t) * num_lanes * static_cast<std::size_t>(n),
            "announce entries " + std::to_string(k));
    }
    for (int s = 0; s < n; ++s) {
        for (int d = 0; d < n; ++d) {
            for (unsigned l = 0; l < num_lanes; ++l) {
                const std::string name =
                    std::to_string(s) + "->" + std::to_string(d) + " lane " + std::to_string(l);
                add(r.ring(s, d, l), sizeof(ring::ring_ctl), "ring ctl " + name);
                add(r.ring_data(s, d, l), ring::data_bytes(p.ring_bytes), "ring data " + name);
            }
        }
    }
    for (int k = 0; k < n; ++k) add(r.segment(k), p.segment_bytes, "segment " + std::to_string(k));
    return parts;
}

using sizes = std::tuple<int, std::size_t, std::size_t>;  // ranks, ring bytes, segment bytes

class region_layout : public ::testing::TestWithParam<sizes> {
  protected:
    ring::region_params params() const {
        const auto [ranks, ring_bytes, segment_bytes] = GetParam();
        ring::region_params p;
        p.ranks = ranks;
        p.ring_bytes = ring_bytes;
        p.segment_bytes = segment_bytes;
        return p;
    }
};

// Every part lies inside the region, and the parts, in layout order, do not overlap.
TEST_P(region_layout, parts_inside_and_disjoint) {
    const ring::region_params p = params();
    region_memory mem(p);
    const ring::region r(mem.base());
    const std::vector<part> parts = parts_of(r, p);
    const ring::region_layout l = ring::layout(p);
    std::uint64_t prev_end = 0;
    std::string prev = "start";
    for (const part& x : parts) {
        EXPECT_LE(x.end, l.total) << x.what << " ends past the region";
        EXPECT_GE(x.begin, prev_end) << x.what << " overlaps " << prev;
        prev_end = x.end;
        prev = x.what;
    }
    EXPECT_EQ(l.total, mem.bytes);
    // The last segment ends the region (no segments: the rings area, page-aligned).
    EXPECT_EQ(l.total, l.segments_off + static_cast<std::uint64_t>(p.ranks) * p.segment_bytes);
}

// Parts start where the layout says and are aligned: lines for everything shared between
// ranks, pages for the rings and segments.
TEST_P(region_layout, parts_aligned) {
    const ring::region_params p = params();
    region_memory mem(p);
    const ring::region r(mem.base());
    const ring::region_layout l = ring::layout(p);
    const int n = p.ranks;
    for (std::uint64_t off : {l.ranks_off, l.gather_off, l.announce_off}) EXPECT_EQ(off % 64, 0u);
    EXPECT_EQ(l.rings_off % page, 0u);
    EXPECT_EQ(l.segments_off % page, 0u);
    EXPECT_EQ(offset(r, &r.info(0)), l.ranks_off);
    EXPECT_EQ(offset(r, r.gather_slot(0)), l.gather_off);
    EXPECT_EQ(offset(r, r.announcements(0).count), l.announce_off);
    EXPECT_EQ(offset(r, r.ring(0, 0, 0)), l.rings_off);
    EXPECT_EQ(offset(r, r.segment(0)), l.segments_off);
    for (int k = 0; k < n; ++k) {
        EXPECT_EQ(offset(r, &r.info(k)) % alignof(ring::rank_info), 0u) << k;
        EXPECT_EQ(offset(r, r.gather_slot(k)) % 64, 0u) << k;
        EXPECT_EQ(offset(r, r.announcements(k).count) % 64, 0u) << k;
        EXPECT_EQ(offset(r, r.announcements(k).entries) % 64, 0u) << k;
        EXPECT_EQ(offset(r, r.segment(k)) % page, 0u) << k;
        for (int d = 0; d < n; ++d) {
            for (unsigned lane = 0; lane < num_lanes; ++lane) {
                EXPECT_EQ(offset(r, r.ring(k, d, lane)) % 64, 0u);
                EXPECT_EQ(
                    r.ring_data(k, d, lane),
                    reinterpret_cast<std::byte*>(r.ring(k, d, lane)) + sizeof(ring::ring_ctl));
            }
        }
    }
}

// The header describes the region: magic, sizes, the layout; a fresh region has not failed,
// no rank has a state, no ring is announced.
TEST_P(region_layout, header_and_fresh_state) {
    const ring::region_params p = params();
    region_memory mem(p);
    const ring::region r(mem.base());
    EXPECT_EQ(r.header().magic, ring::region_magic);
    EXPECT_EQ(r.header().l, ring::layout(p));
    EXPECT_EQ(r.ranks(), p.ranks);
    EXPECT_EQ(r.header().l.ring_bytes, p.ring_bytes);
    EXPECT_EQ(r.header().l.segment_bytes, p.segment_bytes);
    EXPECT_FALSE(r.failed());
    EXPECT_EQ(r.reason(), "");
    for (int k = 0; k < p.ranks; ++k) {
        EXPECT_EQ(r.info(k).state.load(), static_cast<std::uint32_t>(ring::rank_state::none));
        EXPECT_EQ(r.announcements(k).count->load(), 0u);
        EXPECT_EQ(r.ring(k, 0, 0)->head.load(), 0u);
        EXPECT_EQ(r.ring(k, 0, 0)->announced.load(), 0u);
    }
}

INSTANTIATE_TEST_SUITE_P(unit, region_layout,
                         ::testing::Values(sizes{1, 1024, 0}, sizes{1, 4096, page},
                                           sizes{2, 1024, page}, sizes{2, 2048, 16 * page},
                                           sizes{3, 4096, page}, sizes{4, 1024, 0},
                                           sizes{5, 8192, 3 * page}, sizes{8, 1024, page},
                                           sizes{17, 4096, 2 * page}),
                         [](const ::testing::TestParamInfo<sizes>& param) {
                             return "np" + std::to_string(std::get<0>(param.param)) + "_ring" +
                                    std::to_string(std::get<1>(param.param)) + "_seg" +
                                    std::to_string(std::get<2>(param.param));
                         });

// Large jobs, layout only (their rings would not fit in memory): parts in order, aligned, and
// each area large enough for what it holds.
TEST(region_layout_large, areas_hold_their_parts) {
    for (const int n : {64, 255, 1000, 4096}) {
        for (const std::size_t ring_bytes : {std::size_t{16} << 10, std::size_t{1} << 20}) {
            ring::region_params p;
            p.ranks = n;
            p.ring_bytes = ring_bytes;
            p.segment_bytes = 64 * page;
            const ring::region_layout l = ring::layout(p);
            const auto un = static_cast<std::uint64_t>(n);
            EXPECT_GE(l.ranks_off, sizeof(ring::region_header));
            EXPECT_GE(l.gather_off, l.ranks_off + un * sizeof(ring::rank_info));
            EXPECT_GE(l.announce_off, l.gather_off + un * ring::gather_slot_bytes);
            EXPECT_GE(l.rings_off, l.announce_off + un * (64 + un * num_lanes * 4));
            EXPECT_GE(l.segments_off,
                      l.rings_off + un * un * num_lanes *
                                        (sizeof(ring::ring_ctl) + ring::data_bytes(ring_bytes)));
            EXPECT_EQ(l.total, l.segments_off + un * p.segment_bytes);
            EXPECT_EQ(l.rings_off % page, 0u);
            EXPECT_EQ(l.segments_off % page, 0u);
            EXPECT_EQ(l.announce_off % 64, 0u);
        }
    }
}

TEST(region, uninitialised_memory_is_refused) {
    std::vector<std::byte> zeros(sizeof(ring::region_header) + 64);
    // Aligned for the header inside the vector's allocation.
    void* at = zeros.data();
    std::size_t room = zeros.size();
    ASSERT_NE(std::align(alignof(ring::region_header), sizeof(ring::region_header), at, room),
              nullptr);
    EXPECT_THROW(ring::region(static_cast<std::byte*>(at)), am::error);
}

// The first failure reason stays (later ones are dropped), cut to fit.
TEST(region, first_failure_reason_kept) {
    const ring::region_params p = small_region(2);
    region_memory mem(p);
    const ring::region r(mem.base());
    r.fail("rank 1 failed: first");
    r.fail("rank 0 failed: second");
    EXPECT_TRUE(r.failed());
    EXPECT_EQ(r.reason(), "rank 1 failed: first");

    region_memory mem2(p);
    const ring::region r2(mem2.base());
    r2.fail(std::string(5000, 'x'));
    EXPECT_EQ(r2.reason(), std::string(ring::reason_bytes - 1, 'x'));
}

// A caller that loses the claim on the reason raises `failed` at once, while the first caller
// may still be writing its reason (two threads or two ranks of a node failing together, e.g. a
// heartbeat thread and the rank): a reader that sees `failed` must still get the whole first
// reason, not a half-written or empty one. Here the first caller is mid-copy (claimed, nothing
// written yet) when the second raises the flag; it finishes 20 ms later.
TEST(region, reason_read_while_the_first_caller_still_writes_it) {
    const ring::region_params p = small_region(2);
    region_memory mem(p);
    const ring::region r(mem.base());
    ring::region_header& h = r.header();
    h.reason_claimed.store(1);  // the first caller's claim; its copy has not started
    r.fail("rank 0 failed: second");
    ASSERT_TRUE(r.failed());
    std::thread first([&h] {
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const std::string text = "rank 1 failed: first";
        std::memcpy(h.reason, text.c_str(), text.size() + 1);
        h.reason_claimed.store(2, std::memory_order_release);
    });
    EXPECT_EQ(r.reason(), "rank 1 failed: first");
    first.join();
}

/// Records what a poll delivers.
struct recorder final : am::transport::message_sink {
    struct msg {
        int source;
        unsigned lane;
        std::string bytes;
    };
    std::vector<msg> got;
    void deliver(int source, unsigned lane, std::byte* m, std::size_t len) override {
        got.push_back({source, lane, std::string(reinterpret_cast<const char*>(m), len)});
    }
};

void send(ring::ring_transport& tp, int dest, unsigned lane, const std::string& text) {
    std::byte* at = tp.try_reserve(dest, lane, text.size());
    ASSERT_NE(at, nullptr);
    std::memcpy(at, text.data(), text.size());
    tp.commit(dest, lane, at, text.size());
}

// A ring is announced to its receiver when first used, once: the announcement names the
// ring's place in the receiver's scan order (reply lane first, then by source), and the
// receiver's polls find its records, reply rings first.
TEST(region, announcements_name_rings_in_scan_order) {
    const ring::region_params p = small_region(3);
    region_memory mem(p);
    const ring::region r(mem.base());
    ring::ring_transport t0(mem.base(), 0), t1(mem.base(), 1), t2(mem.base(), 2);
    for (int k = 0; k < 3; ++k) {
        EXPECT_EQ(r.info(k).state.load(), static_cast<std::uint32_t>(ring::rank_state::attached));
    }
    const ring::announce_area a = r.announcements(1);
    EXPECT_EQ(a.count->load(), 0u);

    send(t2, 1, 0, "request from 2");
    send(t0, 1, 0, "request from 0");
    send(t0, 1, 1, "reply from 0");
    send(t0, 1, 1, "second reply from 0");  // the same ring: no new announcement
    ASSERT_EQ(a.count->load(), 3u);
    // order = (num_lanes - 1 - lane) * ranks + source, stored plus one.
    EXPECT_EQ(a.entries[0].load(), 1u * 3 + 2 + 1);
    EXPECT_EQ(a.entries[1].load(), 1u * 3 + 0 + 1);
    EXPECT_EQ(a.entries[2].load(), 0u * 3 + 0 + 1);
    EXPECT_EQ(r.ring(0, 1, 1)->announced.load(), 1u);
    EXPECT_EQ(r.ring(1, 0, 0)->announced.load(), 0u);
    EXPECT_EQ(r.announcements(0).count->load(), 0u);

    recorder rec;
    EXPECT_EQ(t1.poll(rec), 4u);
    ASSERT_EQ(rec.got.size(), 4u);
    EXPECT_EQ(rec.got[0].bytes, "reply from 0");
    EXPECT_EQ(rec.got[0].lane, 1u);
    EXPECT_EQ(rec.got[1].bytes, "second reply from 0");
    EXPECT_EQ(rec.got[2].bytes, "request from 0");
    EXPECT_EQ(rec.got[2].source, 0);
    EXPECT_EQ(rec.got[3].bytes, "request from 2");
    EXPECT_EQ(rec.got[3].source, 2);
    EXPECT_EQ(rec.got[3].lane, 0u);
    EXPECT_EQ(t0.poll(rec) + t2.poll(rec), 0u);
}

// A later run over the same region (new transports) scans the rings announced in earlier
// runs from the start, and carries on at the rings' positions.
TEST(region, announcements_outlive_a_run) {
    const ring::region_params p = small_region(2);
    region_memory mem(p);
    const ring::region r(mem.base());
    {
        ring::ring_transport t0(mem.base(), 0), t1(mem.base(), 1);
        send(t0, 1, 0, "run 1");
        recorder rec;
        EXPECT_EQ(t1.poll(rec), 1u);
    }
    ring::ring_transport t0(mem.base(), 0), t1(mem.base(), 1);
    recorder rec;
    EXPECT_EQ(t1.poll(rec), 0u);
    send(t0, 1, 0, "run 2");
    EXPECT_EQ(r.announcements(1).count->load(), 1u);  // announced once, in run 1
    EXPECT_EQ(t1.poll(rec), 1u);
    ASSERT_EQ(rec.got.size(), 1u);
    EXPECT_EQ(rec.got[0].bytes, "run 2");
}

// A failed region makes every poll throw the reason.
TEST(region, poll_of_failed_job_throws) {
    const ring::region_params p = small_region(2);
    region_memory mem(p);
    ring::ring_transport t0(mem.base(), 0);
    t0.fail_job("rank 1 failed: test");
    recorder rec;
    try {
        (void)t0.poll(rec);
        FAIL() << "no exception";
    } catch (const am::error& e) {
        EXPECT_NE(std::string(e.what()).find("rank 1 failed: test"), std::string::npos) << e.what();
    }
}

}  // namespace
