// SPDX-License-Identifier: MIT
// graph/progress.hpp (no ranks): the duration format, the estimate of the remaining time, the
// text of the line; a progress_line writes nothing to a file that is not a terminal, and on a
// pseudo-terminal it draws the line in place and erases it at the end.
#include <graph/progress.hpp>

#include <gtest/gtest.h>

#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <string>

namespace {

using am::graph::estimate_remaining;
using am::graph::format_duration;
using am::graph::format_progress;
using am::graph::progress_line;

TEST(graph_progress, duration_format) {
    EXPECT_EQ(format_duration(0), "0.0 s");
    EXPECT_EQ(format_duration(12.34), "12.3 s");
    EXPECT_EQ(format_duration(59.9), "59.9 s");
    EXPECT_EQ(format_duration(59.96), "1 min 00 s");
    EXPECT_EQ(format_duration(245.4), "4 min 05 s");
    EXPECT_EQ(format_duration(3720), "1 h 02 min");
    EXPECT_EQ(format_duration(-1), "0.0 s");
}

TEST(graph_progress, remaining_from_the_mean_step) {
    EXPECT_FALSE(estimate_remaining(5, 0, 10).has_value());  // no step done: no estimate
    EXPECT_FALSE(estimate_remaining(5, 3, 0).has_value());   // no step count
    EXPECT_DOUBLE_EQ(*estimate_remaining(10, 5, 20), 30);    // 2 s a step, 15 to go
    EXPECT_DOUBLE_EQ(*estimate_remaining(10, 20, 20), 0);
    EXPECT_DOUBLE_EQ(*estimate_remaining(10, 25, 20), 0);
}

TEST(graph_progress, line_text) {
    EXPECT_EQ(format_progress("bfs: roots", 12, 64, 3.0, 3.0),
              "bfs: roots 12/64  elapsed 3.0 s  remaining ~13.0 s");
    // 1 s into step 13: 1 s less to go; past the estimate: 0, not negative.
    EXPECT_EQ(format_progress("bfs: roots", 12, 64, 4.0, 3.0),
              "bfs: roots 12/64  elapsed 4.0 s  remaining ~12.0 s");
    EXPECT_EQ(format_progress("bfs: roots", 63, 64, 9.0, 6.3),
              "bfs: roots 63/64  elapsed 9.0 s  remaining ~0.0 s");
    EXPECT_EQ(format_progress("bfs: roots", 0, 64, 0.5, 0), "bfs: roots 0/64  elapsed 0.5 s");
    EXPECT_EQ(format_progress("generate + build CSR", 0, 0, 75, 0),
              "generate + build CSR  elapsed 1 min 15 s");
}

std::string read_all(int fd) {
    std::string s;
    char buf[4096];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0) s.append(buf, static_cast<std::size_t>(n));
    return s;
}

TEST(graph_progress, nothing_on_a_file) {
    std::FILE* f = std::tmpfile();
    ASSERT_NE(f, nullptr);
    {
        progress_line bar(true, f);
        EXPECT_FALSE(bar.active());
        bar.phase("bfs", 4);
        for (int i = 1; i <= 4; ++i) bar.step(i);
        bar.message("a line\n");  // other output still goes through, untouched
    }
    std::fflush(f);
    std::rewind(f);
    EXPECT_EQ(read_all(fileno(f)), "a line\n");
    std::fclose(f);
}

TEST(graph_progress, drawn_and_erased_on_a_terminal) {
    const int master = posix_openpt(O_RDWR | O_NOCTTY);
    if (master < 0) GTEST_SKIP() << "no pseudo-terminal here (posix_openpt failed)";
    ASSERT_EQ(grantpt(master), 0);
    ASSERT_EQ(unlockpt(master), 0);
    std::FILE* tty = std::fopen(ptsname(master), "w");
    ASSERT_NE(tty, nullptr);
    {
        progress_line off(false, tty);  // disabled (--quiet): nothing even on a terminal
        off.phase("off", 2);
        off.step(1);
    }
    {
        progress_line bar(true, tty);
        EXPECT_TRUE(bar.active());
        bar.phase("bfs: roots", 4);
        bar.step(1);
        usleep(150 * 1000);  // past the 100 ms throttle: the next step redraws
        bar.step(2);
        bar.message("root line\n");
    }
    std::fclose(tty);
    ASSERT_EQ(fcntl(master, F_SETFL, O_NONBLOCK), 0);
    const std::string out = read_all(master);
    close(master);
    EXPECT_EQ(out.find("off"), std::string::npos) << out;
    EXPECT_NE(out.find("\r\033[Kbfs: roots 0/4  elapsed "), std::string::npos) << out;
    EXPECT_NE(out.find("bfs: roots 2/4  elapsed "), std::string::npos) << out;
    EXPECT_NE(out.find("remaining ~"), std::string::npos) << out;
    EXPECT_NE(out.find("\r\033[Kroot line"), std::string::npos) << out;  // erased, then written
    EXPECT_EQ(out.substr(out.size() - 4), "\r\033[K") << out;            // erased at the end
}

}  // namespace
