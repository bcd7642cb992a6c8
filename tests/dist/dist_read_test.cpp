// SPDX-License-Identifier: MIT
// am::dist::read_lines and split_fields. Rank 0 writes the files (under /tmp, named by its
// pid, which it broadcasts) before a barrier; every member reads its byte range, sending each
// line into a bag (read_lines' callback may send) and a counting_set. Every line must be read
// exactly once across the team: the gathered lines equal the file's lines as a multiset, each
// line's count is one, and the members' returned counts sum to the number of lines. Files end
// with and without a newline, have CRLF lines, are empty, have fewer lines than ranks, and are
// read several at once (a line never spans two files). A missing path throws
// errc::invalid_argument naming it on every member.
#include "support/expect.hpp"
#include "support/spmd.hpp"

#include <am/dist.hpp>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

namespace {

using am_test::mix;
using am_test::spmd_test;

class dist_read : public spmd_test {};

/// The lines of `text` as read_lines gives them: split at '\n', a '\r' before it dropped, no
/// line after a final '\n'.
std::vector<std::string> dist_read_lines_of(const std::string& text) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < text.size()) {
        const std::size_t nl = text.find('\n', at);
        std::string line = text.substr(at, nl == std::string::npos ? std::string::npos : nl - at);
        if (nl != std::string::npos && !line.empty() && line.back() == '\r') line.pop_back();
        out.push_back(line);
        if (nl == std::string::npos) break;
        at = nl + 1;
    }
    return out;
}

/// A directory named by rank 0's pid (the same on every rank), files written by rank 0.
struct dist_read_files {
    std::string dir;
    std::vector<std::string> paths;
    const am::team& team;
    dist_read_files(const am::team& t, const std::string& test,
                    const std::vector<std::string>& contents)
        : team(t) {
        const int pid = am::coll::broadcast(t, static_cast<int>(::getpid()), 0);
        dir = "/tmp/am-dist-read-" + std::to_string(pid) + "-" + test;
        for (std::size_t i = 0; i < contents.size(); ++i) {
            paths.push_back(dir + "-" + std::to_string(i) + ".txt");
        }
        if (t.rank() == 0) {
            for (std::size_t i = 0; i < contents.size(); ++i) {
                std::ofstream out(paths[i], std::ios::binary | std::ios::trunc);
                out << contents[i];
                EXPECT_TRUE(out.good()) << paths[i];
            }
        }
        am::coll::barrier(t);
    }
    ~dist_read_files() {
        am::coll::barrier(team);
        if (team.rank() == 0) {
            for (const auto& p : paths) std::remove(p.c_str());
        }
    }
    dist_read_files(const dist_read_files&) = delete;
    dist_read_files& operator=(const dist_read_files&) = delete;
};

/// Reads `contents` as files through read_lines and checks that every line came exactly once.
void dist_read_check(const am::team& t, const std::string& name,
                     const std::vector<std::string>& contents) {
    SCOPED_TRACE(name);
    dist_read_files files(t, name, contents);
    am::dist::bag<std::string> lines(t);
    am::dist::counting_set<std::string> counts(t);
    std::size_t want = 0;
    for (const auto& c : contents) want += dist_read_lines_of(c).size();
    const std::uint64_t mine = am::dist::read_lines(t, files.paths, [&](std::string_view l) {
        lines.insert(std::string(l));
        counts.add(std::string(l));
    });
    EXPECT_EQ(am::coll::allreduce(t, mine, am::coll::sum{}), std::uint64_t{want})
        << "the members' line counts";
    auto got = lines.gather(0);
    if (t.rank() == 0) {
        std::vector<std::string> want_text;
        for (std::size_t i = 0; i < contents.size(); ++i) {
            for (auto& l : dist_read_lines_of(contents[i])) want_text.push_back(l);
        }
        std::sort(got.begin(), got.end());
        std::sort(want_text.begin(), want_text.end());
        EXPECT_EQ(got, want_text);
    }
    // Lines whose text is unique in the input were read once.
    std::map<std::string, std::uint64_t> times;
    for (std::size_t i = 0; i < contents.size(); ++i) {
        for (auto& l : dist_read_lines_of(contents[i])) ++times[l];
    }
    const auto all = counts.gather(0);
    if (t.rank() == 0) {
        std::map<std::string, std::uint64_t> got_times(all.begin(), all.end());
        EXPECT_TRUE(got_times == times) << "a line was read twice or not at all";
    }
}

std::string dist_read_text(std::uint64_t seed, int lines, bool final_newline, bool crlf) {
    std::string s;
    for (int i = 0; i < lines; ++i) {
        const std::uint64_t d = mix(seed * 1000 + static_cast<std::uint64_t>(i));
        // Unique text per line (its number), of varied lengths, some lines nearly empty.
        std::string line = "f" + std::to_string(seed) + "l" + std::to_string(i);
        if (d % 4 != 0)
            line += std::string(static_cast<std::size_t>(d % 90), 'a' + static_cast<char>(d % 26));
        if (d % 7 == 0) line += ",x,,y";
        if (d % 11 == 0) line += "\rmid";  // a '\r' not before '\n' stays
        s += line;
        if (i + 1 < lines || final_newline) s += crlf ? "\r\n" : "\n";
    }
    return s;
}

TEST_P(dist_read, every_line_once) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  dist_read_check(w, "newline", {dist_read_text(1, 60, true, false)});
                  dist_read_check(w, "no-newline", {dist_read_text(2, 60, false, false)});
                  dist_read_check(w, "crlf", {dist_read_text(3, 40, true, true)});
                  dist_read_check(w, "crlf-no-newline", {dist_read_text(4, 40, false, true)});
                  dist_read_check(w, "empty", {std::string()});
                  dist_read_check(w, "one-line", {"only"});
                  dist_read_check(w, "two-lines", {"first\nsecond\n"});  // fewer than ranks
                  dist_read_check(w, "one-byte-lines", {"a\nb\nc\nd\ne\nf\ng\n"});
                  dist_read_check(w, "long-line", {"s\n" + std::string(100000, 'L') + "\nt", "u"});
                  // Several files as one sequence, empty ones among them; a file without a final
                  // newline is followed by another (its last line still ends at the file).
                  dist_read_check(
                      w, "several",
                      {dist_read_text(5, 9, false, false), std::string(),
                       dist_read_text(6, 1, true, false), dist_read_text(7, 13, true, true),
                       std::string(), "z", dist_read_text(8, 30, false, false)});
              }),
              0);
}

TEST_P(dist_read, empty_lines_and_halves) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const am::team half = w.split(ctx.rank() % 2, 0);
                  // Empty lines: counted (by the returned numbers), not told apart by text.
                  dist_read_files f(w, "blank", {"\n\n\r\n\n", "\n"});
                  std::uint64_t empty = 0;
                  const std::uint64_t mine =
                      am::dist::read_lines(w, f.paths, [&](std::string_view l) {
                          EXPECT_TRUE(l.empty()) << "[" << l << "]";
                          ++empty;
                      });
                  EXPECT_EQ(mine, empty);
                  EXPECT_EQ(am::coll::allreduce(w, mine, am::coll::sum{}), 5u);
                  // A team reads the whole file among its members.
                  dist_read_check(half, "half" + std::to_string(ctx.rank() % 2),
                                  {dist_read_text(9, 25, true, false)});
              }),
              0);
}

TEST_P(dist_read, missing_path_throws_naming_it) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            dist_read_files f(w, "present", {"a\nb\n"});
            const std::string missing = f.dir + "-does-not-exist.txt";
            am_test::expect_error(
                [&] {
                    (void)am::dist::read_lines(w, {f.paths[0], missing}, [](std::string_view) {});
                },
                am::errc::invalid_argument,
                {"am::dist::read_lines", "rank " + std::to_string(ctx.rank()), missing});
            // A directory is not a file.
            am_test::expect_error(
                [&] { (void)am::dist::read_lines(w, {"/tmp"}, [](std::string_view) {}); },
                am::errc::invalid_argument, {"\"/tmp\""});
            // Afterwards the team works on.
            const std::uint64_t n = am::dist::read_lines(w, f.paths, [](std::string_view) {});
            EXPECT_EQ(am::coll::allreduce(w, n, am::coll::sum{}), 2u);
        }),
        0);
}

TEST(dist_read_split, fields) {
    using v = std::vector<std::string_view>;
    EXPECT_EQ(am::dist::split_fields("a,b,,c"), (v{"a", "b", "", "c"}));
    EXPECT_EQ(am::dist::split_fields(""), (v{""}));
    EXPECT_EQ(am::dist::split_fields("abc"), (v{"abc"}));
    EXPECT_EQ(am::dist::split_fields(","), (v{"", ""}));
    EXPECT_EQ(am::dist::split_fields("x\ty\t", '\t'), (v{"x", "y", ""}));
    const std::string line = "1,22,333";
    const auto f = am::dist::split_fields(line);
    ASSERT_EQ(f.size(), 3u);
    EXPECT_EQ(f[2].data(), line.data() + 5) << "fields are views into the line";
}

AM_INSTANTIATE(dist_read, am_test::make_params({1, 2, 3, 5}, {2, 3}));

}  // namespace
