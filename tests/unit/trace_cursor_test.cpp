// SPDX-License-Identifier: MIT
// The tracer's JSON made a piece at a time (src/core/trace.hpp, tracer::json_cursor), which
// rank 0 streams into the file (issue 36, item 8): pieces asked for W bytes hold at most W plus
// one event's text, whatever the number of events, and together they are exactly the text made
// in one go, valid JSON with every event. The cap: a tracer keeps its first max_events records
// and counts the rest as dropped.
#include "core/trace.hpp"

#include "../trace/json_reader.hpp"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <thread>

namespace {

using am::detail::trace_kind;
using am::detail::trace_rec;
using am::detail::tracer;

std::string name_handler(std::uint32_t i) {
    return "unit \"handler\" " + std::to_string(i);
}

// `n` records of the kinds whose text differs most, one with an async pair; from this thread
// and from a second one (a second track).
void fill_tracer(tracer& t, std::size_t n) {
    auto some = [&t](std::size_t from, std::size_t to) {
        for (std::size_t i = from; i < to; ++i) {
            const trace_kind kind =
                i % 4 == 3 ? trace_kind::tam_quantum : static_cast<trace_kind>(i % 3);
            t.record(trace_rec{1000 + i, 2000 + i, kind, static_cast<std::uint32_t>(i % 7), i, 8});
        }
    };
    some(0, n / 2);
    std::thread other([&] { some(n / 2, n); });
    other.join();
}

TEST(trace_cursor, pieces_are_bounded_and_make_the_whole_text) {
    constexpr std::size_t records = 20000;
    tracer t(3, std::this_thread::get_id(), 1000, records);
    fill_tracer(t, records);
    EXPECT_EQ(t.dropped(), 0u);

    std::string whole;
    tracer::json_cursor all(t, name_handler);
    EXPECT_TRUE(all.fill(whole, ~std::size_t{0}));
    EXPECT_TRUE(all.fill(whole, ~std::size_t{0})) << "done stays done";
    ASSERT_GT(whole.size(), 40 * 4096u) << "the test wants many pieces";

    constexpr std::size_t want = 4096;
    constexpr std::size_t longest_event = 1024;  // two lines of an async pair, generously
    std::string joined, piece;
    std::size_t pieces = 0, largest = 0;
    tracer::json_cursor cursor(t, name_handler);
    for (bool done = false; !done; piece.clear()) {
        done = cursor.fill(piece, want);
        largest = std::max(largest, piece.size());
        joined += piece;
        ++pieces;
    }
    EXPECT_LE(largest, want + longest_event) << "a piece grew past what was asked for";
    EXPECT_GT(pieces, whole.size() / (want + longest_event));
    EXPECT_EQ(joined, whole);

    const am_test::json::value doc = am_test::json::reader("[" + joined + "]").parse();
    std::size_t events = 0, threads = 0;
    for (const am_test::json::value& e : doc.arr) {
        EXPECT_EQ(e.at("pid").num, 3.0);
        if (e.at("ph").str != "M") ++events;
        if (e.at("name").str == "thread_name") ++threads;
    }
    EXPECT_EQ(events, records + records / 4) << "one event per record, two per async pair";
    EXPECT_EQ(threads, 2u);
}

TEST(trace_cursor, cap_keeps_the_first_records_and_counts_the_rest) {
    tracer t(0, std::this_thread::get_id(), 0, 10);
    for (std::uint64_t i = 0; i < 25; ++i) {
        t.record(trace_rec{i, i + 1, trace_kind::handler, 1, i, 0});
    }
    EXPECT_EQ(t.dropped(), 15u);
    EXPECT_EQ(t.max_events(), 10u);
    std::string text;
    tracer::json_cursor cursor(t, name_handler);
    EXPECT_TRUE(cursor.fill(text, ~std::size_t{0}));
    const am_test::json::value doc = am_test::json::reader("[" + text + "]").parse();
    std::size_t events = 0;
    for (const am_test::json::value& e : doc.arr) {
        if (e.at("ph").str == "M") continue;
        EXPECT_LT(e.at("args").at("source").num, 10.0) << "a record past the cap was kept";
        ++events;
    }
    EXPECT_EQ(events, 10u);
}

}  // namespace
