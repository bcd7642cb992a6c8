// SPDX-License-Identifier: MIT
#include "ucx_baseline.hpp"

#include "child_process.hpp"
#include "sys.hpp"

#include <netinet/in.h>
#include <sched.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <optional>
#include <string_view>
#include <thread>
#include <utility>

namespace am::bench {
namespace {

constexpr int port_attempts = 5;              // fresh ports tried when the server cannot bind
constexpr int listen_timeout_ms = 10000;      // server start-up, until it listens
constexpr int server_exit_timeout_ms = 5000;  // server exit after the client's

/// The `transport` value of the UCX lines of a run with UCX_TLS=`tls`: "ucx-" and its first
/// transport ("ucx-sm" for the default sm,self; "ucx-tcp" for tcp,self).
std::string ucx_transport(const std::string& tls) {
    return "ucx-" + tls.substr(0, tls.find(','));
}

void sleep_ms(long ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, nullptr);
}

bool executable(const std::string& p) {
    return !p.empty() && access(p.c_str(), X_OK) == 0;
}

/// `name` if it names a file (contains '/'), else the first match on PATH; empty if none.
std::string resolve(const std::string& name) {
    if (name.find('/') != std::string::npos) return executable(name) ? name : std::string{};
    const char* env = std::getenv("PATH");
    std::string_view path = env != nullptr ? env : "";
    while (!path.empty()) {
        const std::size_t colon = path.find(':');
        const std::string_view dir = path.substr(0, colon);
        const std::string file = dir.empty() ? name : std::string(dir) + "/" + name;
        if (executable(file)) return file;
        if (colon == std::string_view::npos) break;
        path.remove_prefix(colon + 1);
    }
    return {};
}

/// The id of the `index`-th CPU this thread may run on (the core `pin_to_core(index)` picks),
/// or -1 when there are not that many.
int usable_cpu(int index) {
    cpu_set_t set;
    CPU_ZERO(&set);
    if (sched_getaffinity(0, sizeof set, &set) != 0) return -1;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (CPU_ISSET(cpu, &set) && index-- == 0) return cpu;
    }
    return -1;
}

/// A TCP port that nobody listens on right now (the kernel's pick for port 0).
int free_port() {
    const int s = socket(AF_INET, SOCK_STREAM, 0);
    if (s < 0) return -1;
    sockaddr_in a{};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_ANY);
    socklen_t len = sizeof a;
    int port = -1;
    if (bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
        getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0) {
        port = ntohs(a.sin_port);
    }
    close(s);
    return port;
}

/// Whether some socket listens on TCP `port` (/proc/net/tcp and tcp6, state 0A = LISTEN).
/// Watching the table, rather than connecting, leaves the server's one accept to the client.
bool port_listening(int port) {
    char want[8];
    std::snprintf(want, sizeof want, ":%04X", port);
    for (const char* table : {"/proc/net/tcp", "/proc/net/tcp6"}) {
        std::ifstream in(table);
        std::string sl, local, remote, state;
        std::string rest;
        std::getline(in, rest);  // header
        while (in >> sl >> local >> remote >> state) {
            if (state == "0A" && local.size() > 5 && local.ends_with(want)) return true;
            std::getline(in, rest);
        }
    }
    return false;
}

/// The batch file both processes read: one line per (point, repetition), named
/// "<point index>:<repetition>" so the client's CSV lines can be matched back.
class batch_file {
  public:
    batch_file(const std::vector<ucx_point>& points, int reps) {
        const char* tmp = std::getenv("TMPDIR");
        _path = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/am-ucx-XXXXXX";
        const int fd = mkstemp(_path.data());
        if (fd < 0) {
            _path.clear();
            return;
        }
        std::string text;
        for (std::size_t i = 0; i < points.size(); ++i) {
            const ucx_point& p = points[i];
            for (int r = 0; r < reps; ++r) {
                text += std::to_string(i) + ":" + std::to_string(r) + " -t " + ucx_op(p.test) +
                        " -s " + std::to_string(p.bytes) + " -n " + std::to_string(p.iters) +
                        " -w " + std::to_string(p.warmup) + "\n";
            }
        }
        const bool ok = write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
        close(fd);
        if (!ok) {
            unlink(_path.c_str());
            _path.clear();
        }
    }
    batch_file(const batch_file&) = delete;
    batch_file& operator=(const batch_file&) = delete;
    ~batch_file() {
        if (!_path.empty()) unlink(_path.c_str());
    }
    [[nodiscard]] const std::string& path() const noexcept { return _path; }

  private:
    std::string _path;
};

/// One final CSV line of the client (`-v -f`): name, iterations, percentile latency,
/// average latency, overall latency (µs), average and overall bandwidth (MiB/s), average
/// and overall message rate (messages/s).
struct csv_line {
    std::size_t point;
    int rep;
    double iters, overall_lat_us, overall_msgps;
};

std::optional<csv_line> parse_csv(const std::string& line, std::size_t points, int reps) {
    const std::vector<std::string> f = split(line);
    if (f.size() != 9) return std::nullopt;
    char* end = nullptr;
    const unsigned long point = std::strtoul(f[0].c_str(), &end, 10);
    if (end == f[0].c_str() || *end != ':') return std::nullopt;
    const char* rep_text = end + 1;
    const long rep = std::strtol(rep_text, &end, 10);
    if (end == rep_text || *end != '\0' || point >= points || rep < 0 || rep >= reps) {
        return std::nullopt;
    }
    double v[9] = {};
    for (std::size_t i = 1; i < 9; ++i) {
        const char* s = f[i].c_str();
        v[i] = std::strtod(s, &end);
        if (end == s || *end != '\0' || !(v[i] >= 0)) return std::nullopt;
    }
    return csv_line{point, static_cast<int>(rep), v[1], v[4], v[8]};
}

/// Where the two processes run, and for how long the client may.
struct job_plan {
    int client_cpu, server_cpu;  // -1: not pinned
    int timeout_ms;
    std::string tls;  // UCX_TLS of both
};

/// Starts the server on a free port and waits until it listens. False (with the reason in
/// `why`) when no port worked; the server's output then goes to stderr.
bool start_server(const std::string& exe, const std::string& batch, const job_plan& plan,
                  child_process& server, log_file& log, int& port, std::string& why) {
    const std::vector<std::string> env{"UCX_TLS=" + plan.tls};
    for (int attempt = 0; attempt < port_attempts; ++attempt) {
        port = free_port();
        if (port <= 0) {
            why = "no free TCP port";
            return false;
        }
        if (!server.start({exe, "-p", std::to_string(port), "-b", batch}, log.fd(), plan.server_cpu,
                          env)) {
            why = "fork failed";
            return false;
        }
        bool exited = false;
        const auto t0 = bench_clock::now();
        while (!exited && seconds_since(t0) * 1000 < listen_timeout_ms) {
            if (port_listening(port)) return true;
            exited = server.wait_for(0);  // most likely the port was taken meanwhile: retry
            if (!exited) sleep_ms(2);
        }
        server.kill_and_reap();
        why = exited ? "the server exited (status " + std::to_string(server.status()) +
                           ") before listening on port " + std::to_string(port)
                     : "the server did not listen on port " + std::to_string(port) + " within " +
                           std::to_string(listen_timeout_ms / 1000) + " s";
        if (!exited) break;
    }
    log.dump("ucx_perftest server");
    return false;
}

/// Runs the batch: server, then client; the client's output lines in `out`. Both processes
/// are reaped on every path. False (reason in `why`) when either failed or timed out.
bool run_batch(const std::string& exe, const std::string& batch, const job_plan& plan,
               std::vector<std::string>& out, std::string& why) {
    log_file server_log, client_log;
    if (server_log.fd() < 0 || client_log.fd() < 0) {
        why = "cannot create a temporary file";
        return false;
    }
    child_process server, client;
    int port = 0;
    if (!start_server(exe, batch, plan, server, server_log, port, why)) return false;
    if (!client.start({exe, "127.0.0.1", "-p", std::to_string(port), "-b", batch, "-v", "-f"},
                      client_log.fd(), plan.client_cpu, {"UCX_TLS=" + plan.tls})) {
        why = "fork failed";
        return false;
    }
    const bool finished = client.wait_for(plan.timeout_ms);
    if (!finished) client.kill_and_reap();
    if (!server.wait_for(finished ? server_exit_timeout_ms : 0)) server.kill_and_reap();
    out = client_log.lines();
    if (finished && client.status() == 0 && server.status() == 0) return true;
    why = !finished ? "timed out after " + std::to_string(plan.timeout_ms / 1000) + " s"
                    : "client status " + std::to_string(client.status()) + ", server status " +
                          std::to_string(server.status());
    server_log.dump("ucx_perftest server");
    client_log.dump("ucx_perftest client");
    return false;
}

/// Per point index: the overall latency (µs) and message rate (1/s) of each repetition.
struct point_values {
    std::vector<double> lat, msgps;
};
using per_point = std::map<std::size_t, point_values>;

/// The client's CSV lines of the batch, by point; lines that are not results of this batch
/// (the CSV header, UCX warnings, a wrong iteration count) are ignored.
per_point collect(const std::vector<std::string>& out, const std::vector<ucx_point>& points,
                  int reps) {
    per_point got;
    for (const std::string& line : out) {
        const std::optional<csv_line> c = parse_csv(line, points.size(), reps);
        if (!c || c->iters != static_cast<double>(points[c->point].iters)) continue;
        got[c->point].lat.push_back(c->overall_lat_us);
        got[c->point].msgps.push_back(c->overall_msgps);
    }
    return got;
}

/// The result of one point from its per-repetition values.
result point_result(const std::string& tls, const std::string& bench, const ucx_point& p,
                    const point_values& pv) {
    std::vector<double> v;
    if (p.test == ucx_test::am_lat) {
        v = pv.lat;  // ucx_perftest halves the round trip of its ping-pong tests
    } else if (p.metric == "bandwidth_GBps") {
        for (double r : pv.msgps) v.push_back(r * static_cast<double>(p.bytes) / 1e9);
    } else {
        for (double r : pv.msgps) v.push_back(r / 1e6);
    }
    return make_result(bench, "ucx", ucx_transport(tls), 2, ucx_op(p.test), p.bytes, p.metric,
                       summarize(v));
}

}  // namespace

void add_ucx_points(std::vector<ucx_point>& points, const options& o, ucx_test test,
                    const std::vector<std::size_t>& sizes, const work_plan& plan,
                    const std::string& metric) {
    for (std::size_t s : sizes) {
        const std::uint64_t n = iters_for(o, plan, s);
        points.push_back({test, s, n, warmup_for(o, n), metric});
    }
}

const char* ucx_op(ucx_test t) {
    return t == ucx_test::am_lat ? "ucp_am_lat" : "ucp_am_bw";
}

ucx_baseline::ucx_baseline(const options& o, std::string bench)
    : _o(o),
      _bench(std::move(bench)),
      _exe(resolve(o.ucx_perftest.empty() ? "ucx_perftest" : o.ucx_perftest)) {}

std::string ucx_baseline::skip_reason() const {
    if (!_o.baseline) return "--no-baseline";
    if (!_o.ucx) return "--no-ucx";
    if (std::find(_o.transports.begin(), _o.transports.end(), "mpi") != _o.transports.end() &&
        std::find(_o.transports.begin(), _o.transports.end(), "ucx") == _o.transports.end()) {
        return "it runs beside --transport shm, threads or ucx only";
    }
    if (_exe.empty()) {
        return _o.ucx_perftest.empty() ? "ucx_perftest not found on PATH (Debian package ucx-utils)"
                                       : "'" + _o.ucx_perftest + "' is not an executable file";
    }
    if (usable_cores() < 2) return "it needs 2 cores (its two processes busy-poll)";
    return {};
}

void ucx_baseline::note(const std::string& why) {
    if (!_noted)
        std::fprintf(stderr, "%s: UCX baseline skipped: %s\n", _bench.c_str(), why.c_str());
    _noted = true;  // once per invocation, not once per round
}

bool ucx_baseline::run(const std::vector<ucx_point>& points, reporter& rep) {
    if (const std::string why = skip_reason(); !why.empty()) {
        note(why);
        return true;
    }
    if (points.empty()) return true;
    bool ok = run_tls(points, _o.ucx_tls, rep);
    for (const std::string& tls : _o.ucx_tls_more) ok = run_tls(points, tls, rep) && ok;
    return ok;
}

bool ucx_baseline::run_tls(const std::vector<ucx_point>& points, const std::string& tls,
                           reporter& rep) {
    const bool pin = _o.pin != 0;
    job_plan plan{pin ? usable_cpu(0) : -1, pin ? usable_cpu(1) : -1, 0, tls};
    // A bound for hangs only: generous beside the few seconds a default batch takes.
    plan.timeout_ms = 60000 + 2000 * static_cast<int>(points.size()) * _o.reps;
    const std::vector<double> hop = pin ? cores_hop(_o.reps) : std::vector<double>{};

    const batch_file batch(points, _o.reps);
    std::vector<std::string> out;
    std::string why = batch.path().empty() ? "cannot write the batch file" : "";
    const bool ok = why.empty() && run_batch(_exe, batch.path(), plan, out, why);
    const per_point got = collect(out, points, _o.reps);
    std::size_t complete = 0;
    for (const auto& [i, v] : got) complete += v.lat.size() == static_cast<std::size_t>(_o.reps);
    if (!ok || complete != points.size()) {
        if (ok) {  // it ran but printed something else: show what
            for (const std::string& s : out)
                std::fprintf(stderr, "  ucx_perftest: %s\n", s.c_str());
        }
        std::fprintf(stderr,
                     "%s: NO UCX BASELINE: '%s' with UCX_TLS=%s %s (%zu of %zu points "
                     "complete); am figures are not compared with it\n",
                     _bench.c_str(), _exe.c_str(), tls.c_str(),
                     ok ? "printed too few results" : why.c_str(), complete, points.size());
        return false;
    }
    if (!hop.empty()) {
        rep.add(make_result(_bench, "cacheline", ucx_transport(tls), 2, "hop", 8, "latency_us",
                            summarize(hop)));
    }
    for (std::size_t i = 0; i < points.size(); ++i) {
        rep.add(point_result(tls, _bench, points[i], got.at(i)));
    }
    return true;
}

}  // namespace am::bench
