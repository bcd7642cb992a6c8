// SPDX-License-Identifier: MIT
// The mpi transport's liveness watchdog without running MPI (src/transport/mpi/liveness*.hpp):
// the check of an arrived datagram, the choice of a peer's address, when heartbeats are on, and
// two watchdogs of a 2-rank "job" in this process over loopback UDP: a silent peer is declared
// lost within the bound, one that said bye is not, forged datagrams are ignored, and a failure
// the rank does not end is ended by the watchdog.
#include "transport/mpi/liveness.hpp"
#include "transport/mpi/liveness_format.hpp"
#include "transport/mpi/liveness_setup.hpp"

#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace mpi = am::transport::mpi;
using namespace std::chrono_literals;

namespace {

constexpr std::uint64_t job = 0x1234'5678'9abc'def0;

std::vector<std::byte> bytes_of(const mpi::beat_datagram& d) {
    std::vector<std::byte> b(sizeof d);
    std::memcpy(b.data(), &d, sizeof d);
    return b;
}

std::optional<mpi::beat_message> parse(const mpi::beat_datagram& d, int size = 4, int me = 0) {
    return mpi::parse_beat(bytes_of(d), job, size, me);
}

}  // namespace

TEST(LivenessFormat, AcceptsTheDatagramsOfTheJob) {
    auto m = parse(mpi::make_beat(job, mpi::beat_kind::beat, 3, 7));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, mpi::beat_kind::beat);
    EXPECT_EQ(m->from, 3);
    m = parse(mpi::make_beat(job, mpi::beat_kind::bye, 1, 8));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, mpi::beat_kind::bye);
    m = parse(mpi::make_beat(job, mpi::beat_kind::lost, 2, 9, 3));
    ASSERT_TRUE(m);
    EXPECT_EQ(m->kind, mpi::beat_kind::lost);
    EXPECT_EQ(m->subject, 3);
}

TEST(LivenessFormat, IgnoresForgedDatagrams) {
    const mpi::beat_datagram good = mpi::make_beat(job, mpi::beat_kind::beat, 1, 1);
    std::vector<std::byte> b = bytes_of(good);
    b.push_back(std::byte{0});
    EXPECT_FALSE(mpi::parse_beat(b, job, 4, 0)) << "too long";
    b.resize(sizeof good - 1);
    EXPECT_FALSE(mpi::parse_beat(b, job, 4, 0)) << "too short";
    EXPECT_FALSE(mpi::parse_beat({}, job, 4, 0)) << "empty";
    EXPECT_FALSE(parse(mpi::make_beat(job + 1, mpi::beat_kind::beat, 1, 1))) << "another job";
    EXPECT_FALSE(parse(mpi::make_beat(job, mpi::beat_kind::beat, 4, 1))) << "sender >= size";
    EXPECT_FALSE(parse(mpi::make_beat(job, mpi::beat_kind::beat, -1, 1))) << "sender < 0";
    EXPECT_FALSE(parse(mpi::make_beat(job, mpi::beat_kind::beat, 0, 1))) << "from this rank";
    EXPECT_FALSE(parse(mpi::make_beat(job, mpi::beat_kind::lost, 1, 1, 4))) << "lost >= size";
    EXPECT_FALSE(parse(mpi::make_beat(job, mpi::beat_kind::beat, 1, 1, 2))) << "subject in a beat";
    mpi::beat_datagram d = good;
    d.kind = 0;
    EXPECT_FALSE(parse(d)) << "kind 0";
    d.kind = 4;
    EXPECT_FALSE(parse(d)) << "unknown kind";
    d = good;
    d.reserved = 1;
    EXPECT_FALSE(parse(d)) << "reserved word";
}

TEST(LivenessAddress, PrefersASharedSubnet) {
    const auto ip = [](const char* text) {
        in_addr a{};
        inet_pton(AF_INET, text, &a);
        return a.s_addr;
    };
    const std::uint32_t m24 = ip("255.255.255.0"), m16 = ip("255.255.0.0");
    const std::vector<mpi::ipv4_address> mine = {{ip("10.0.0.1"), m24}, {ip("172.16.0.1"), m16}};
    const std::vector<mpi::ipv4_address> theirs = {{ip("192.168.1.2"), m24},
                                                   {ip("172.16.5.2"), m16}};
    EXPECT_EQ(mpi::address_text(mpi::choose_address(mine, theirs)), "172.16.5.2");
    const std::vector<mpi::ipv4_address> elsewhere = {{ip("192.168.1.2"), m24},
                                                      {ip("10.0.1.2"), m24}};
    EXPECT_EQ(mpi::address_text(mpi::choose_address(mine, elsewhere)), "192.168.1.2");
}

TEST(LivenessSetup, HeartbeatsAreOnWhenTheJobSpansHostsOrWhenAsked) {
    am::config cfg;  // AM_HEARTBEAT=auto
    EXPECT_EQ(mpi::heartbeat_timeout(cfg, 4, 8), 5000ms) << "two hosts";
    EXPECT_EQ(mpi::heartbeat_timeout(cfg, 1, 8), 5000ms) << "eight hosts";
    EXPECT_EQ(mpi::heartbeat_timeout(cfg, 8, 8), 0ms) << "one host";
    cfg.heartbeat = 0;
    EXPECT_EQ(mpi::heartbeat_timeout(cfg, 4, 8), 0ms) << "off";
    cfg.heartbeat = 2.5;
    EXPECT_EQ(mpi::heartbeat_timeout(cfg, 8, 8), 2500ms) << "forced on one host";
    EXPECT_EQ(mpi::heartbeat_timeout(cfg, 1, 1), 0ms) << "one rank";
}

namespace {

// A rank of a 2-rank job whose watchdog reports into this record.
struct rank_record {
    std::mutex m;
    std::vector<std::string> raised;
    std::atomic<bool> failed{false};

    mpi::liveness_hooks hooks() {
        return {[this](const std::string& why) {
                    std::lock_guard lock(m);
                    raised.push_back(why);
                    failed = true;
                },
                [this] { return failed.load(); },
                [this] {
                    std::lock_guard lock(m);
                    return raised.empty() ? std::string("(none)") : raised.front();
                }};
    }
    std::vector<std::string> seen() {
        std::lock_guard lock(m);
        return raised;
    }
};

constexpr auto timeout = 300ms;

struct pair_of_ranks {
    rank_record rec[2];
    std::unique_ptr<mpi::liveness> live[2];

    pair_of_ranks() {
        std::uint32_t lo = htonl(INADDR_LOOPBACK);
        for (int r = 0; r < 2; ++r) {
            live[r] = std::make_unique<mpi::liveness>(r, 2, timeout, rec[r].hooks());
        }
        std::vector<mpi::peer_endpoint> peers = {{lo, live[0]->port(), "h0"},
                                                 {lo, live[1]->port(), "h1"}};
        for (auto& l : live) l->start(peers, job);
        for (auto& l : live) EXPECT_EQ(l->wait_heard(2s), -1);
        for (auto& l : live) l->arm();
    }
};

}  // namespace

TEST(LivenessWatchdog, DeclaresASilentPeerLost) {
    pair_of_ranks p;
    std::this_thread::sleep_for(3 * timeout);  // beating: nobody lost
    EXPECT_TRUE(p.rec[0].seen().empty());
    EXPECT_TRUE(p.rec[1].seen().empty());
    const auto silent_since = std::chrono::steady_clock::now();
    p.live[1]->stop(false);  // rank 1 goes silent without a bye
    while (p.rec[0].seen().empty() && std::chrono::steady_clock::now() - silent_since < 5s) {
        std::this_thread::sleep_for(10ms);
    }
    const auto took = std::chrono::steady_clock::now() - silent_since;
    const std::vector<std::string> seen = p.rec[0].seen();
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_NE(seen[0].find("rank 0: lost rank 1 (host h1, 127.0.0.1): no heartbeat for"),
              std::string::npos)
        << seen[0];
    // Silence is counted from the last heartbeat heard, up to an interval (timeout / 5) before
    // the stop; the loss is seen at the first check after the timeout, at most an interval
    // later. Some slack for a loaded machine.
    EXPECT_GE(took, timeout - timeout / 5);
    EXPECT_LT(took, timeout + timeout / 5 + 500ms);
    p.live[0]->stop(false);
}

TEST(LivenessWatchdog, APeerThatSaidByeIsNotLost) {
    pair_of_ranks p;
    p.live[1]->stop(true);
    std::this_thread::sleep_for(4 * timeout);
    EXPECT_TRUE(p.rec[0].seen().empty());
    p.live[0]->stop(true);
}

TEST(LivenessWatchdog, IgnoresForgedDatagramsAndCountsThem) {
    pair_of_ranks p;
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    ASSERT_GE(fd, 0);
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons(p.live[0]->port());
    const auto send = [&](const mpi::beat_datagram& d, std::size_t len) {
        sendto(fd, &d, len, 0, reinterpret_cast<const sockaddr*>(&a), sizeof a);
    };
    send(mpi::make_beat(job + 1, mpi::beat_kind::lost, 1, 1, 0), 32);  // another job
    send(mpi::make_beat(job, mpi::beat_kind::lost, 5, 1, 0), 32);      // no such rank
    send(mpi::make_beat(job, mpi::beat_kind::lost, 1, 1, 0), 31);      // cut short
    const auto until = std::chrono::steady_clock::now() + 2s;
    while (p.live[0]->ignored() < 3 && std::chrono::steady_clock::now() < until) {
        std::this_thread::sleep_for(5ms);
    }
    EXPECT_EQ(p.live[0]->ignored(), 3u);
    EXPECT_TRUE(p.rec[0].seen().empty());
    // A well-formed report of this job is believed: rank 1 says rank 0 was lost.
    send(mpi::make_beat(job, mpi::beat_kind::lost, 1, 1, 0), 32);
    while (p.rec[0].seen().empty() && std::chrono::steady_clock::now() < until + 2s) {
        std::this_thread::sleep_for(5ms);
    }
    ASSERT_EQ(p.rec[0].seen().size(), 1u);
    EXPECT_NE(p.rec[0].seen()[0].find("this rank was declared lost by rank 1"), std::string::npos);
    close(fd);
    p.live[0]->stop(true);
    p.live[1]->stop(true);
}

TEST(LivenessWatchdogDeathTest, EndsAProcessThatDoesNotEndAfterAFailure) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            pair_of_ranks p;
            p.live[1]->stop(false);  // rank 0 declares it lost; nobody ends the "rank"
            std::this_thread::sleep_for(30s);
        },
        testing::ExitedWithCode(1),
        "am: rank 0: still running 3.0 s after the job failed .* the failure: rank 0: lost rank 1 "
        "\\(host h1, 127.0.0.1\\)");
}
