// SPDX-License-Identifier: MIT
// The trace file as a whole (issue 36, item 8): a job that fails with a trace on creates no
// file and leaves an existing one byte for byte as it was, with no temporary file left next to
// it; a rank over the cap on events warns once, naming itself and the cap, and the file is
// valid JSON that records how many events each rank dropped; a trace larger than the window
// rank 0 pulls at a time (1 MiB) arrives whole, and writing one takes less memory than its
// text. (A failing job on mpi ends with MPI_Abort, so its test runs the job from a script:
// failed_job_check.sh.)
#include "trace/trace_support.hpp"

#include <algorithm>
#include <atomic>
#include <fstream>
#include <iterator>
#include <sstream>
#include <stdexcept>

namespace {

using am_test::spmd_test;
using namespace am_trace_test;

class trace_file_base : public spmd_test {
  protected:
    // The same on every rank of the job (all its processes run this test case).
    [[nodiscard]] static std::string trace_path() { return test_trace_path("am_trace_file_"); }
    [[nodiscard]] bool rank0_here() const {
        const std::vector<int> here = visible_ranks();
        return std::find(here.begin(), here.end(), 0) != here.end();
    }
};

// Traffic to trace: every rank pings every rank (itself too) and waits for its pings.
void trace_file_ping_all(am::context& ctx) {
    am::counter got(ctx);
    auto ping = ctx.handler([&](am::token&) { got.add(); });
    ctx.barrier();
    for (int d = 0; d < ctx.size(); ++d) ctx.request(d, ping);
    got.wait(static_cast<std::uint64_t>(ctx.size()));
}

// Traffic to trace: every rank sends `messages` pings to the next rank and waits for those it
// gets; `index`, if given, receives the ping handler's index (the same on every rank).
void trace_file_ping_next(am::context& ctx, int messages,
                          std::atomic<std::uint32_t>* index = nullptr) {
    am::counter got(ctx);
    auto ping = ctx.handler([&](am::token&) { got.add(); });
    if (index != nullptr) index->store(ping.index);
    ctx.barrier();
    const int peer = (ctx.rank() + 1) % ctx.size();
    for (int k = 0; k < messages; ++k) ctx.request(peer, ping);
    got.wait(static_cast<std::uint64_t>(messages));
}

// Traffic with the trace on, then the last rank throws: the job fails before trace_stop. A
// failing job ends with MPI_Abort on mpi: threads and shm only here.
class trace_failed_job : public trace_file_base {
  protected:
    [[nodiscard]] int run_failing(const std::string& path) const {
        return run(
            [](am::context& ctx) {
                trace_file_ping_all(ctx);
                ctx.barrier();
                if (ctx.rank() == ctx.size() - 1) {
                    throw std::runtime_error("trace_failed_job: deliberate failure");
                }
                ctx.barrier();  // the last rank never comes: the job fails here
            },
            [&](am::config& c) { c.trace_path = path; });
    }
};
class trace_replace : public trace_file_base {};
class trace_cap : public trace_file_base {};
class trace_large : public trace_file_base {
  protected:
    void pings_span_windows(const am_test::tweak_fn& tweak);
};
// One thread rank: rank 0 runs in the test process, whose memory the test reads.
class trace_memory : public trace_file_base {};

std::string file_bytes(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Entries of the file's directory named after it plus a suffix (a temporary file of the trace).
std::vector<std::string> strays_of(const std::string& path) {
    const std::filesystem::path p(path);
    const std::string prefix = p.filename().string() + ".";
    std::vector<std::string> found;
    for (const auto& e : std::filesystem::directory_iterator(p.parent_path())) {
        const std::string name = e.path().filename().string();
        if (name.compare(0, prefix.size(), prefix) == 0) found.push_back(name);
    }
    return found;
}

TEST_P(trace_failed_job, keeps_an_existing_trace) {
    const std::string path = trace_path();
    const std::string good =
        "{\"traceEvents\":[\n{\"name\":\"an earlier good trace\",\"ph\":\"i\",\"s\":\"t\","
        "\"ts\":1,\"pid\":0,\"tid\":1}\n]}\n";
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << good;
    }
    const int rc = run_failing(path);
    EXPECT_NE(rc, 0) << "the job should have failed";
    EXPECT_EQ(file_bytes(path), good) << "the failed job changed the existing trace " << path;
    EXPECT_EQ(strays_of(path), std::vector<std::string>{}) << "files left next to " << path;
    std::filesystem::remove(path);
}

TEST_P(trace_failed_job, creates_no_file) {
    const std::string path = trace_path();
    std::filesystem::remove(path);
    const int rc = run_failing(path);
    EXPECT_NE(rc, 0) << "the job should have failed";
    EXPECT_FALSE(std::filesystem::exists(path)) << "the failed job created " << path;
    EXPECT_EQ(strays_of(path), std::vector<std::string>{}) << "files left next to " << path;
    std::filesystem::remove(path);
}

// A job that succeeds replaces an existing file (here not JSON at all) with its trace, which
// keeps the old file's permissions, and leaves nothing next to it.
TEST_P(trace_replace, replaces_an_existing_file_keeping_its_mode) {
    const std::string path = trace_path();
    {
        std::ofstream out(path, std::ios::binary | std::ios::trunc);
        out << "not a trace";
    }
    namespace fs = std::filesystem;
    const auto mode = fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read;
    fs::permissions(path, mode);
    const int rc = run(trace_file_ping_all, [&](am::config& c) { c.trace_path = path; });
    ASSERT_EQ(rc, 0);
    if (!rank0_here()) return;  // rank 0 wrote it
    const json::value doc = json::parse_file(path);
    EXPECT_EQ(doc.at("otherData").at("ranks").num, ranks());
    EXPECT_EQ(fs::status(path).permissions() & fs::perms::all, mode);
    EXPECT_EQ(strays_of(path), std::vector<std::string>{}) << "files left next to " << path;
    fs::remove(path);
}

// A path that is a symbolic link: the trace replaces the file it leads to, the link stays.
TEST_P(trace_replace, writes_through_a_symbolic_link) {
    namespace fs = std::filesystem;
    const std::string path = trace_path();
    const std::string target = path + "-target";  // not a stray of `path`
    {
        std::ofstream out(target, std::ios::binary | std::ios::trunc);
        out << "not a trace";
    }
    // Every process of an mpi job does this before its rank starts: none removes a link
    // another made, so rank 0 finds the link when it checks the path.
    std::error_code ignored;
    if (!fs::is_symlink(path)) {
        fs::remove(path, ignored);
        fs::create_symlink(target, path, ignored);
    }
    ASSERT_TRUE(fs::is_symlink(path));
    const int rc = run(trace_file_ping_all, [&](am::config& c) { c.trace_path = path; });
    ASSERT_EQ(rc, 0);
    if (!rank0_here()) return;  // rank 0 wrote it
    EXPECT_TRUE(fs::is_symlink(path)) << "the trace replaced the link " << path;
    const json::value doc = json::parse_file(target);
    EXPECT_EQ(doc.at("otherData").at("ranks").num, ranks());
    EXPECT_EQ(strays_of(target), std::vector<std::string>{}) << "files left next to " << target;
    fs::remove(path);
    fs::remove(target);
}

// Non-metadata events of rank `pid` in the file.
std::size_t events_of_rank(const json::value& doc, int pid) {
    std::size_t n = 0;
    for (const json::value& e : doc.at("traceEvents").arr) {
        if (static_cast<int>(e.at("pid").num) == pid && e.at("ph").str != "M") ++n;
    }
    return n;
}

std::size_t count_of(const std::string& text, const std::string& what) {
    std::size_t n = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) {
        ++n;
    }
    return n;
}

// 50 events per rank, and every rank records hundreds: each warns once, the file says how
// many were dropped, and no rank has more than 50 events in it.
TEST_P(trace_cap, over_the_cap_warns_and_records_the_drop) {
    const std::string path = trace_path();
    constexpr std::size_t cap = 50;
    constexpr int messages = 200;
    ::testing::internal::CaptureStderr();  // forked shm ranks inherit the redirection
    const int rc = run([](am::context& ctx) { trace_file_ping_next(ctx, messages); },
                       [&](am::config& c) {
                           c.trace_path = path;
                           c.trace_max_events = cap;
                       });
    const std::string err = ::testing::internal::GetCapturedStderr();
    ASSERT_EQ(rc, 0) << err;
    for (const int r : visible_ranks()) {
        const std::string warning = "am: warning: rank " + std::to_string(r) +
                                    ": the trace reached its cap of 50 events per rank";
        EXPECT_EQ(count_of(err, warning), 1u) << "rank " << r << ", stderr:\n" << err;
    }
    if (!rank0_here()) return;  // rank 0 wrote the file
    const json::value doc = json::parse_file(path);
    const json::value& other = doc.at("otherData");
    EXPECT_EQ(other.at("max_events_per_rank").num, static_cast<double>(cap));
    const auto& by_rank = other.at("dropped_events_by_rank").arr;
    ASSERT_EQ(by_rank.size(), static_cast<std::size_t>(ranks()));
    double total = 0;
    for (int r = 0; r < ranks(); ++r) {
        const double dropped = by_rank[static_cast<std::size_t>(r)].num;
        // At least the sends and handler runs beyond the cap.
        EXPECT_GE(dropped, 2.0 * messages - static_cast<double>(cap)) << "rank " << r;
        EXPECT_EQ(events_of_rank(doc, r), cap) << "rank " << r;
        total += dropped;
    }
    EXPECT_EQ(other.at("dropped_events").num, total);
    std::filesystem::remove(path);
}

// Every send and handler run of `messages` pings per rank is in the file at `path`.
void expect_every_ping(const std::string& path, int ranks, int messages, std::uint32_t ping) {
    const json::value doc = json::parse_file(path);
    EXPECT_EQ(doc.at("otherData").at("dropped_events").num, 0.0);
    std::vector<int> sends(static_cast<std::size_t>(ranks)), runs(static_cast<std::size_t>(ranks));
    for (const json::value& e : doc.at("traceEvents").arr) {
        if (e.at("ph").str == "M") continue;
        const auto pid = static_cast<std::size_t>(e.at("pid").num);
        ASSERT_LT(pid, sends.size());
        const std::string& cat = e.at("cat").str;
        if (cat != "send" && cat != "handler") continue;
        if (static_cast<std::uint32_t>(e.at("args").at("handler").num) != ping) continue;
        ++(cat == "send" ? sends : runs)[pid];
    }
    for (int r = 0; r < ranks; ++r) {
        EXPECT_EQ(sends[static_cast<std::size_t>(r)], messages) << "rank " << r;
        EXPECT_EQ(runs[static_cast<std::size_t>(r)], messages) << "rank " << r;
    }
}

// Each rank records more than rank 0 pulls at a time (1 MiB of JSON, about 5000 events): its
// events arrive in several windows, whole. `tweak` adds to the configuration.
void trace_large::pings_span_windows(const am_test::tweak_fn& tweak) {
    const std::string path = trace_path();
    constexpr int messages = 6000;  // a send and a handler run each: ~2.4 MB of JSON per rank
    am_test::shared<std::atomic<std::uint32_t>> ping_index;  // the same on every rank
    const int rc = run([&](am::context& ctx) { trace_file_ping_next(ctx, messages, &*ping_index); },
                       [&](am::config& c) {
                           c.trace_path = path;
                           if (tweak) tweak(c);
                       });
    ASSERT_EQ(rc, 0);
    if (!rank0_here()) return;
    EXPECT_GT(std::filesystem::file_size(path), std::uintmax_t{2} << 20);
    expect_every_ping(path, ranks(), messages, ping_index->load());
    std::filesystem::remove(path);
}

TEST_P(trace_large, spans_several_windows) {
    pings_span_windows({});
}

// The windows' pieces arrive on rank 0's progress thread while its own thread waits for them.
TEST_P(trace_large, spans_several_windows_with_progress_thread) {
    pings_span_windows([](am::config& c) { c.progress_thread = true; });
}

// ASan keeps freed memory in quarantine and TSan shadows it: the peak of a sanitized process
// says nothing about what the writer holds, so there the bound is not checked.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool rss_means_nothing = true;
#else
constexpr bool rss_means_nothing = false;
#endif

// The process's peak resident memory so far (VmHWM), in bytes.
std::size_t peak_rss() {
    std::ifstream in("/proc/self/status");
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("VmHWM:", 0) == 0) return std::stoul(line.substr(6)) * 1024;
    }
    throw std::runtime_error("no VmHWM in /proc/self/status");
}

// Writing a trace takes memory for the records (40 bytes each) and a few windows of text, not
// for the file: 300 000 events make about 70 MiB of JSON, while the peak grows by about 20 MiB
// (the records, 12 MB, their vector's growth, the windows); the bound is 40 MiB. Built in one
// string, the text alone would take the 70 MiB.
TEST_P(trace_memory, writing_takes_less_memory_than_the_file) {
    const std::string path = trace_path();
    constexpr int messages = 150'000;
    constexpr std::size_t bound = std::size_t{40} << 20;
    const std::size_t before = peak_rss();
    const int rc = run(
        [](am::context& ctx) {
            am::counter got(ctx);
            auto ping = ctx.handler([&](am::token&) { got.add(); });
            ctx.barrier();
            for (int k = 0; k < messages; ++k) ctx.request(0, ping);
            got.wait(messages);
        },
        [&](am::config& c) { c.trace_path = path; });
    ASSERT_EQ(rc, 0);
    const std::size_t grown = peak_rss() - before;
    const std::uintmax_t file = std::filesystem::file_size(path);
    EXPECT_GT(file, bound) << "the text alone would not fit in the bound";
    if (!rss_means_nothing) {
        EXPECT_LT(grown, bound) << "the peak grew by " << (grown >> 20) << " MiB writing a "
                                << (file >> 20) << " MiB trace";
    }
    std::filesystem::remove(path);
}

AM_INSTANTIATE(trace_failed_job, am_test::without_mpi(am_test::make_params({1, 2, 4}, {1, 2, 4})));
AM_INSTANTIATE(trace_replace, am_test::make_params({1, 2}, {2}));
AM_INSTANTIATE(trace_cap, am_test::make_params({1, 2, 4}, {1, 2, 4}));
AM_INSTANTIATE(trace_large, am_test::make_params({1, 4}, {4}));
AM_INSTANTIATE(trace_memory, am_test::make_params({1}, {}));

}  // namespace
