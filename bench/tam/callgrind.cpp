// SPDX-License-Identifier: MIT
#include "callgrind.hpp"

#include "lib/child_process.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <stdexcept>

namespace am::bench::tam_table {
namespace {

/// Callgrind's cache options: "--I1=8192,4,64" etc. The last level is made large (8 MiB,
/// 16-way) so it does not matter: only L1 misses are charged.
std::string cache_option(const char* which, cache_kind k) {
    const unsigned ways = k == cache_kind::four_way ? 4 : 1;
    return std::string("--") + which + "=" + std::to_string(l1_bytes) + "," + std::to_string(ways) +
           "," + std::to_string(line_bytes);
}

bool executable(const std::string& path) {
    return !path.empty() && access(path.c_str(), X_OK) == 0;
}

}  // namespace

const char* to_string(cache_kind k) noexcept {
    return k == cache_kind::four_way ? "4way" : "direct";
}

counts parse_callgrind(const std::string& path) {
    std::ifstream in(path);
    if (!in) throw std::runtime_error("cannot read the callgrind output " + path);
    std::vector<std::string> events;
    std::vector<std::uint64_t> totals;
    std::string line;
    while (std::getline(in, line)) {
        std::istringstream words(line);
        std::string key;
        words >> key;
        if (key == "events:") {
            events.clear();
            for (std::string e; words >> e;) events.push_back(e);
        } else if (key == "totals:" || (key == "summary:" && totals.empty())) {
            totals.clear();
            for (std::uint64_t v = 0; words >> v;) totals.push_back(v);
        }
    }
    std::map<std::string, std::uint64_t> by_name;
    for (std::size_t i = 0; i < events.size(); ++i) {
        by_name[events[i]] = i < totals.size() ? totals[i] : 0;  // trailing zeros are omitted
    }
    if (events.empty()) throw std::runtime_error(path + ": no 'events:' line");
    auto get = [&](const char* name) {
        const auto it = by_name.find(name);
        if (it == by_name.end()) {
            throw std::runtime_error(path + ": no " + name + " count (cache simulation off?)");
        }
        return it->second;
    };
    counts c;
    c.ir = get("Ir");
    c.dr = get("Dr");
    c.dw = get("Dw");
    c.i1mr = get("I1mr");
    c.d1mr = get("D1mr");
    c.d1mw = get("D1mw");
    return c;
}

std::string find_valgrind(const std::string& given) {
    if (!given.empty()) return executable(given) ? given : std::string();
    const char* path = std::getenv("PATH");
    std::istringstream dirs(path != nullptr ? path : "/usr/bin:/bin");
    for (std::string d; std::getline(dirs, d, ':');) {
        const std::string candidate = (d.empty() ? "." : d) + "/valgrind";
        if (executable(candidate)) return candidate;
    }
    return {};
}

std::vector<std::string> callgrind_argv(const std::string& valgrind, cache_kind cache,
                                        const std::string& toggle, const std::string& out_file,
                                        const std::vector<std::string>& program) {
    std::vector<std::string> argv{valgrind,
                                  "--tool=callgrind",
                                  "--cache-sim=yes",
                                  cache_option("I1", cache),
                                  cache_option("D1", cache),
                                  "--LL=8388608,16,64",
                                  "--collect-atstart=no",
                                  "--toggle-collect=" + toggle,
                                  "--callgrind-out-file=" + out_file};
    argv.insert(argv.end(), program.begin(), program.end());
    return argv;
}

counts measure(const std::string& valgrind, cache_kind cache, const std::string& toggle,
               const std::vector<std::string>& program, const std::string& dir,
               const std::string& tag, const std::vector<std::string>& env) {
    const std::string out = dir + "/" + tag + ".out";
    const std::string log = dir + "/" + tag + ".log";
    const int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) throw std::runtime_error("cannot create " + log);
    child_process child;
    const bool started =
        child.start(callgrind_argv(valgrind, cache, toggle, out, program), fd, -1, env);
    close(fd);
    if (!started) throw std::runtime_error("cannot start " + valgrind);
    while (!child.wait_for(60 * 1000)) {
    }
    if (child.status() != 0) {
        throw std::runtime_error("the run under valgrind failed (status " +
                                 std::to_string(child.status()) + "), see " + log);
    }
    return parse_callgrind(out);
}

}  // namespace am::bench::tam_table
