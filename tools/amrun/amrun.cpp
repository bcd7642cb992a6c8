// SPDX-License-Identifier: MIT
// amrun -n N [--transport threads|shm] program [args...]
// Launches an `am` job on this host. threads: runs the program once with N thread-ranks.
// shm: starts N processes over one shared-memory region and supervises them.
#include "../../src/transport/shm/shm_transport.hpp"

#include <am/config.hpp>
#include <am/error.hpp>

#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

int usage(const char* msg) {
    if (msg) std::fprintf(stderr, "amrun: %s\n", msg);
    std::fprintf(stderr,
                 "usage: amrun -n N [--transport threads|shm] program [args...]\n"
                 "  -n N             number of ranks (1..4096)\n"
                 "  --transport T    threads (one process, N thread-ranks) or shm (N processes,\n"
                 "                   the default)\n"
                 "Environment: AM_RING_BYTES, AM_SEGMENT_BYTES, AM_MAX_MEDIUM, AM_STATS,\n"
                 "AM_PROGRESS_THREAD (see docs/transports.md).\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    int ranks = 0;
    std::string transport = "shm";
    int i = 1;
    for (; i < argc && argv[i][0] == '-'; ++i) {
        const std::string a = argv[i];
        if ((a == "-n" || a == "--ranks") && i + 1 < argc) {
            char* end = nullptr;
            const long v = std::strtol(argv[++i], &end, 10);
            if (*end != '\0' || v < 1 || v > 4096) return usage("-n takes a rank count in 1..4096");
            ranks = static_cast<int>(v);
        } else if (a == "--transport" && i + 1 < argc) {
            transport = argv[++i];
        } else if (a == "-h" || a == "--help") {
            return usage(nullptr);
        } else {
            return usage(("unknown option " + a).c_str());
        }
    }
    if (ranks == 0) return usage("-n is required");
    if (i >= argc) return usage("no program given");
    try {
        am::config cfg = am::config::from_env();
        cfg.ranks = ranks;
        if (transport == "threads") {
            setenv("AM_TRANSPORT", "threads", 1);
            setenv("AM_RANKS", std::to_string(ranks).c_str(), 1);
            execvp(argv[i], argv + i);
            std::fprintf(stderr, "amrun: cannot execute %s: %s\n", argv[i], std::strerror(errno));
            return 127;
        }
        if (transport != "shm") return usage("--transport takes threads or shm");
        return am::transport::shm::launch_exec(cfg, argv + i);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "amrun: %s\n", e.what());
        return 1;
    }
}
