// SPDX-License-Identifier: MIT
// Many thread ranks in one process (tests/scale/CMakeLists.txt): every rank registers a
// handler, passes the handshake barrier, sends one request to its right neighbour and waits
// for it to be answered; then the process checks its peak memory.
//
//   scale_prog MAX_MIB     fails when the process's peak resident memory exceeds MAX_MIB
//
// Rings, their producers and the poll's scan are per peer a rank talks to, not per rank of the
// job: 4096 thread ranks took ~27 GB when every rank had state for every peer.
#include <am/am.hpp>

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>

namespace {

long peak_rss_mib() {
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind("VmHWM:", 0) == 0) return std::atol(line.c_str() + 6) / 1024;
    }
    return -1;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc != 2) {
        std::fprintf(stderr, "usage: scale_prog MAX_MIB\n");
        return 2;
    }
    const long max_mib = std::atol(argv[1]);
    const int rc = am::run(argc, argv, [](am::context& ctx) {
        am::counter answered(ctx);
        auto pong = ctx.handler([&](am::token&) { answered.add(); });
        auto ping = ctx.handler([pong](am::token& t) { t.reply(pong); });
        ctx.barrier();
        ctx.request((ctx.rank() + 1) % ctx.size(), ping);
        answered.wait(1);
        ctx.quiesce();
        if (ctx.rank() == 0) std::printf("scale_prog: %d ranks passed\n", ctx.size());
    });
    const long peak = peak_rss_mib();
    std::printf("scale_prog: peak resident memory %ld MiB (limit %ld MiB)\n", peak, max_mib);
    if (rc != 0) return rc;
    return peak >= 0 && peak <= max_mib ? 0 : 1;
}
