// SPDX-License-Identifier: MIT
// AM_ASSERT is on exactly where the build says (Debug, sanitizer builds, -DAM_ASSERT=ON), and
// when on it stops the process with a message naming the condition; when off, the condition
// is not even evaluated.
#include "util/assert.hpp"

#include <gtest/gtest.h>

namespace {

bool evaluated(int& count) {
    ++count;
    return false;
}

TEST(assert, on_when_the_build_says) {
#ifdef AM_ENABLE_ASSERT
    const bool on = true;
#else
    const bool on = false;
#endif
    EXPECT_EQ(on, AM_EXPECT_ASSERT != 0)
        << "AM_ASSERT should be " << (AM_EXPECT_ASSERT ? "on" : "off") << " in this build";
}

#ifdef AM_ENABLE_ASSERT
TEST(assert, failure_aborts_naming_the_condition) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    int n = 0;
    EXPECT_DEATH(
        AM_ASSERT(evaluated(n), "the invariant"),
        "am: assertion failed at .*assert_test.cpp:[0-9]+: evaluated\\(n\\): the invariant");
}
#else
TEST(assert, off_evaluates_nothing) {
    int n = 0;
    AM_ASSERT(evaluated(n), "never evaluated");
    EXPECT_EQ(n, 0);
}
#endif

}  // namespace
