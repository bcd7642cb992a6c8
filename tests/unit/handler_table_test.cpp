// SPDX-License-Identifier: MIT
// The handler table (src/core/handler_table.hpp) and its digest, which ranks compare to agree
// that they registered the same handlers in the same order: equal for equal registrations,
// different when the order, a name, a callable's type, a category or an argument count
// differs, and digest(n) a function of the first n entries only.
#include "core/handler_table.hpp"

#include <am/error.hpp>

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace {

using am::category;
using am::detail::handler_desc;
using am::detail::handler_table;

struct entry {
    std::string name;
    category kind = category::short_am;
    std::uint8_t nargs = 0;
    const char* id = nullptr;
};

handler_desc desc_of(const entry& e) {
    return handler_desc{e.kind, e.nargs, nullptr, nullptr, nullptr, e.name, e.id};
}

/// Program handlers after no library ones.
void fill(handler_table& t, const std::vector<entry>& entries) {
    for (const entry& e : entries) (void)t.add(desc_of(e), 0, false, 0);
}

std::uint64_t digest_of(const std::vector<entry>& entries) {
    handler_table t;
    fill(t, entries);
    return t.digest(t.count());
}

const std::vector<entry> base = {
    {"on_ping", category::short_am, 1},
    {"on_data", category::medium, 2},
    {"on_put", category::long_am, 3},
    {"lambda", category::short_am, 0, "Z4mainEUlRN2am5tokenEE_"},
};

TEST(handler_table, add_appends_in_order) {
    handler_table t;
    EXPECT_EQ(t.count(), 0u);
    for (std::uint32_t i = 0; i < base.size(); ++i) {
        EXPECT_EQ(t.add(desc_of(base[i]), 0, false, 0), i);
        EXPECT_EQ(t.count(), i + 1);
        EXPECT_EQ(t.signature(i), am::detail::signature_of(base[i].kind, base[i].nargs));
        EXPECT_EQ(t.cold(i).name, base[i].name);
        EXPECT_EQ(t.cold(i).kind, base[i].kind);
        EXPECT_EQ(t.cold(i).nargs, base[i].nargs);
    }
    EXPECT_EQ(t.signatures()[2], am::detail::signature_of(category::long_am, 3));
}

TEST(handler_table, same_registrations_same_digest) {
    handler_table a, b;
    fill(a, base);
    fill(b, base);
    for (std::uint32_t n = 0; n <= base.size(); ++n) EXPECT_EQ(a.digest(n), b.digest(n)) << n;
    // Library handlers first, then the program's: the same entries give the same digest.
    handler_table c;
    for (std::size_t i = 0; i < 2; ++i) (void)c.add(desc_of(base[i]), 3, true, 0);
    for (std::size_t i = 2; i < base.size(); ++i) (void)c.add(desc_of(base[i]), 3, false, 2);
    EXPECT_EQ(c.digest(c.count()), a.digest(a.count()));
}

TEST(handler_table, order_changes_digest) {
    std::vector<entry> swapped = base;
    std::swap(swapped[0], swapped[1]);
    EXPECT_NE(digest_of(swapped), digest_of(base));
    std::vector<entry> rotated(base.begin() + 1, base.end());
    rotated.push_back(base[0]);
    EXPECT_NE(digest_of(rotated), digest_of(base));
    // Two entries alike but for their names, swapped.
    const std::vector<entry> ab = {{"a"}, {"b"}};
    const std::vector<entry> ba = {{"b"}, {"a"}};
    EXPECT_NE(digest_of(ab), digest_of(ba));
}

// Any one field of any one entry changed: a different digest (and all of them distinct).
TEST(handler_table, any_field_changes_digest) {
    std::vector<std::vector<entry>> variants = {base};
    for (std::size_t i = 0; i < base.size(); ++i) {
        std::vector<entry> v = base;
        v[i].name += "x";
        variants.push_back(v);
        v = base;
        v[i].name.pop_back();
        variants.push_back(v);
        v = base;
        v[i].kind = v[i].kind == category::medium ? category::long_am : category::medium;
        variants.push_back(v);
        v = base;
        v[i].nargs = static_cast<std::uint8_t>(v[i].nargs + 1);
        variants.push_back(v);
        v = base;
        v[i].id = v[i].id == nullptr ? "Z1fvEUlvE_" : "Z4mainEUlRN2am5tokenEE0_";
        variants.push_back(v);
    }
    // An entry more, an entry fewer.
    std::vector<entry> longer = base;
    longer.push_back({"extra"});
    variants.push_back(longer);
    variants.emplace_back(base.begin(), base.end() - 1);
    std::set<std::uint64_t> digests;
    for (const auto& v : variants) digests.insert(digest_of(v));
    EXPECT_EQ(digests.size(), variants.size());
}

// Fields must not blur into each other: a name ending in a digit and the argument count, the
// name and the callable's type.
TEST(handler_table, fields_do_not_run_together) {
    EXPECT_NE(digest_of({{"f1", category::short_am, 2}}),
              digest_of({{"f", category::short_am, 12}}));
    EXPECT_NE(digest_of({{"f", category::short_am, 0, "Z1g"}}),
              digest_of({{"f|Z1g", category::short_am, 0}}));
    EXPECT_NE(digest_of({{"ab"}, {"c"}}), digest_of({{"a"}, {"bc"}}));
}

// digest(n) depends only on the first n entries: tables that differ after n agree on it,
// and it does not change when more entries are added.
TEST(handler_table, digest_of_prefix) {
    std::vector<entry> other = base;
    other[3].name = "different";
    other.push_back({"more", category::medium, 4});
    handler_table a, b;
    fill(a, base);
    fill(b, other);
    for (std::uint32_t n = 0; n <= 3; ++n) EXPECT_EQ(a.digest(n), b.digest(n)) << n;
    EXPECT_NE(a.digest(4), b.digest(4));

    handler_table growing;
    fill(growing, {base[0], base[1]});
    const std::uint64_t two = growing.digest(2);
    const std::uint64_t one = growing.digest(1);
    fill(growing, {base[2], base[3]});
    EXPECT_EQ(growing.digest(2), two);
    EXPECT_EQ(growing.digest(1), one);
    EXPECT_NE(growing.digest(2), growing.digest(3));
    EXPECT_NE(growing.digest(0), growing.digest(1));
}

// The program may register max_program_handlers of its own after the library's; one more is
// refused with am::error, and the table keeps its entries.
TEST(handler_table, program_limit) {
    handler_table t;
    (void)t.add(desc_of({"builtin"}), 0, true, 0);
    for (std::uint32_t i = 0; i < am::detail::max_program_handlers; ++i) {
        ASSERT_EQ(t.add(desc_of({"h" + std::to_string(i)}), 0, false, 1), i + 1);
    }
    try {
        (void)t.add(desc_of({"one too many"}), 5, false, 1);
        FAIL() << "no exception";
    } catch (const am::error& e) {
        EXPECT_EQ(e.code(), am::errc::too_large);
        EXPECT_NE(std::string(e.what()).find("rank 5"), std::string::npos) << e.what();
    }
    EXPECT_EQ(t.count(), am::detail::max_program_handlers + 1);
}

}  // namespace
