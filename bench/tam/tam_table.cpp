// SPDX-License-Identifier: MIT
// tam_table: Table 2 of "TAM on the J-Machine: Active Messages vs message-driven dispatch"
// for the six TAM programs (apps/tam) on am's TAM layer, beside the paper's own figures.
//
//   tam_table [--programs mmt,qs,...] [--arg paper|large|N] [--out FILE] [--valgrind PATH]
//   tam_table --check [--enabled] [--ranks N] [--transport threads|shm|mpi] [--programs ...]
//             [--arg ...]
//
// Default: every program under both dispatch policies (message-driven "md", Active Messages
// "am") on one rank, each run under valgrind's callgrind (table.cpp) with the paper's caches
// simulated: separate 8 KiB instruction and data L1 caches, 64-byte lines, LRU, 4-way
// set-associative and then direct-mapped. Counting is on only inside am::tam::run (the
// program's construction is not counted) and, for the sequential reference, inside
// tam_table_reference. Per program and policy: threads per quantum (TPQ), instructions per
// thread (IPT) and per quantum (IPQ), the paper's cycles (an instruction is one cycle, an L1
// miss costs 12, 24 or 48 more), the MD/AM cycle ratios, and the scheduling overhead: TAM's
// instructions over the reference's. Tables on stderr, JSON lines on stdout (bench "tam").
//
// --check: every program under both policies in this process (am::run, --ranks ranks of
// --transport), each result against the reference; no valgrind, seconds. Exit 1 when one is
// wrong. With --enabled, the layer's "enabled" variant (options::enabled: messages a rank sends
// itself served inside the quantum); its lines' systems are "md_enabled" and "am_enabled".
//
// Internal, what the default mode runs under valgrind: --worker PROGRAM --policy am|md --arg N
// --stats-out FILE (one run on one rank; its value and stats into FILE as one JSON object) and
// --reference PROGRAM --arg N --stats-out FILE.
#include "tam_table.hpp"

#include "lib/options.hpp"

#include <am/am.hpp>

#include <sys/mman.h>

#include <atomic>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <new>
#include <stdexcept>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

/// The sequential reference, called through the app's pointer from a function of its own:
/// what callgrind counts for the reference (--toggle-collect=tam_table_reference(*), outside
/// any namespace so the pattern stays simple.
[[gnu::noipa]] am::tam::word tam_table_reference(const tam_apps::app& a, int n) {
    return a.reference(n);
}

namespace am::bench::tam_table {

int argument(const plan& p, const tam_apps::app& a) {
    if (p.arg == "paper") return a.paper_arg;
    if (p.arg == "large") return a.large_arg;
    return std::atoi(p.arg.c_str());  // checked by parse
}

emitter::emitter(const std::string& out_path) {
    if (out_path.empty()) return;
    _file = std::fopen(out_path.c_str(), "w");
    if (_file == nullptr) throw std::runtime_error("cannot write " + out_path);
}

emitter::~emitter() {
    if (_file != nullptr) std::fclose(_file);
}

void emitter::add(const point& p) {
    // The keys and their order as report.hpp's to_json, but values with 12 significant
    // digits: instruction and cycle counts run to hundreds of millions.
    auto number = [](double v) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.12g", v);
        return std::string(buf);
    };
    const std::string value = number(p.value);
    const std::string lo = number(std::isnan(p.lo) ? p.value : p.lo);
    const std::string hi = number(std::isnan(p.hi) ? p.value : p.hi);
    std::string line = std::string("{\"bench\":\"") + bench_name + "\",\"system\":\"" + p.system +
                       "\",\"transport\":\"" + p.transport +
                       "\",\"ranks\":" + std::to_string(p.ranks) + ",\"op\":\"" + p.op +
                       "\",\"bytes\":0,\"metric\":\"" + p.metric + "\",\"median\":" + value +
                       ",\"min\":" + lo + ",\"max\":" + hi + ",\"reps\":" + std::to_string(p.reps);
    line += ",\"arg\":" + std::to_string(p.arg) + ",\"cache\":\"" + p.cache + "\"";
    if (p.correct) line += std::string(",\"correct\":") + (*p.correct ? "true" : "false");
    line += "}\n";
    std::fputs(line.c_str(), stdout);
    std::fflush(stdout);
    if (_file != nullptr) {
        std::fputs(line.c_str(), _file);
        std::fflush(_file);
    }
}

namespace {

// ------------------------------------------------------------------------------ --check

/// Wrong results seen by rank 0, in memory that survives the fork of shm ranks.
class shared_count {
  public:
    shared_count() {
        void* p = mmap(nullptr, sizeof(std::atomic<int>), PROT_READ | PROT_WRITE,
                       MAP_SHARED | MAP_ANONYMOUS, -1, 0);
        if (p == MAP_FAILED) throw std::runtime_error("mmap of a shared counter");
        _n = new (p) std::atomic<int>(0);
    }
    ~shared_count() { munmap(_n, sizeof(std::atomic<int>)); }
    shared_count(const shared_count&) = delete;
    shared_count& operator=(const shared_count&) = delete;
    std::atomic<int>& operator*() const noexcept { return *_n; }

  private:
    std::atomic<int>* _n;
};

struct check_row {
    const char* program;
    const char* policy;
    int arg;
    bool ok;
    am::tam::stats st;
};

void print_check_table(const std::vector<check_row>& rows, int ranks, const std::string& tr) {
    std::fprintf(stderr, "tam_table --check: %d rank(s), %s\n", ranks, tr.c_str());
    std::fprintf(stderr, "%-10s %5s %-6s %-7s %10s %10s %10s %10s %9s\n", "program", "arg",
                 "policy", "correct", "threads", "quanta", "inlets", "messages", "TPQ");
    for (const check_row& r : rows) {
        std::fprintf(stderr, "%-10s %5d %-6s %-7s %10llu %10llu %10llu %10llu %9.2f\n", r.program,
                     r.arg, r.policy, r.ok ? "yes" : "NO",
                     static_cast<unsigned long long>(r.st.threads),
                     static_cast<unsigned long long>(r.st.quanta),
                     static_cast<unsigned long long>(r.st.inlets),
                     static_cast<unsigned long long>(r.st.messages), r.st.tpq());
    }
}

int run_check(const plan& p) {
    std::vector<am::tam::word> want;
    for (const tam_apps::app* a : p.programs) want.push_back(a->reference(argument(p, *a)));
    am::config cfg = am::config::from_env();
    cfg.ranks = p.ranks;
    cfg.transport = p.transport == "shm"   ? am::transport_kind::shm
                    : p.transport == "mpi" ? am::transport_kind::mpi
                                           : am::transport_kind::threads;
    shared_count wrong;
    emitter out(p.out);
    std::fflush(nullptr);  // forked ranks must not print what this process buffered
    const int status = am::run(cfg, [&](am::context& ctx) {
        std::vector<check_row> rows;
        for (std::size_t i = 0; i < p.programs.size(); ++i) {
            const tam_apps::app& a = *p.programs[i];
            const int n = argument(p, a);
            for (const am::tam::policy pol :
                 {am::tam::policy::message_driven, am::tam::policy::active_messages}) {
                am::tam::options opt;
                opt.dispatch = pol;
                opt.enabled = p.enabled;
                const am::tam::result r = a.run(ctx, n, opt);
                if (ctx.rank() != 0) continue;
                const bool ok = r.finished && r.value == want[i];
                const bool md = pol == am::tam::policy::message_driven;
                const char* sys = !p.enabled ? am::tam::to_string(pol)
                                  : md       ? "md_enabled"
                                             : "am_enabled";
                if (!ok) {
                    ++*wrong;
                    std::fprintf(stderr,
                                 "tam_table: WRONG: %s %d under %s: %s %llu, the reference %llu\n",
                                 a.name, n, sys, r.finished ? "value" : "never finished, value",
                                 static_cast<unsigned long long>(r.value),
                                 static_cast<unsigned long long>(want[i]));
                }
                const std::string tr = am::to_string(cfg.transport);
                const int ranks = ctx.size();
                out.add({sys, tr, ranks, a.name, "correct", ok ? 1.0 : 0.0, n, "none", ok});
                const am::tam::stats& s = r.total;
                out.add({sys, tr, ranks, a.name, "tpq", s.tpq(), n});
                out.add({sys, tr, ranks, a.name, "threads", double(s.threads), n});
                out.add({sys, tr, ranks, a.name, "quanta", double(s.quanta), n});
                out.add({sys, tr, ranks, a.name, "inlets", double(s.inlets), n});
                out.add({sys, tr, ranks, a.name, "messages", double(s.messages), n});
                rows.push_back({a.name, sys, n, ok, s});
            }
        }
        if (ctx.rank() == 0) print_check_table(rows, ctx.size(), am::to_string(cfg.transport));
    });
    if (status != 0) {
        std::fprintf(stderr, "tam_table: the job failed (status %d)\n", status);
        return 1;
    }
    if (*wrong != 0) {
        std::fprintf(stderr, "tam_table: %d wrong result(s)\n", (*wrong).load());
        return 1;
    }
    return 0;
}

// ------------------------------------------------------------------ the worker modes

/// The run's value and stats as one flat JSON object (table.cpp's read_stats reads it).
void write_stats(const plan& p, const am::tam::result& r) {
    std::FILE* f = std::fopen(p.stats_out.c_str(), "w");
    if (f == nullptr) throw std::runtime_error("cannot write " + p.stats_out);
    const am::tam::stats& s = r.total;
    const std::pair<const char*, std::uint64_t> fields[] = {
        {"value", r.value},     {"finished", r.finished ? 1 : 0},
        {"threads", s.threads}, {"quanta", s.quanta},
        {"inlets", s.inlets},   {"messages", s.messages},
        {"frames", s.frames},   {"released", s.released},
        {"fetches", s.fetches}, {"deferred", s.deferred},
        {"stores", s.stores}};
    const char* sep = "{";
    for (const auto& [key, value] : fields) {
        std::fprintf(f, "%s\"%s\":%llu", sep, key, static_cast<unsigned long long>(value));
        sep = ",";
    }
    std::fputs("}\n", f);
    if (std::fclose(f) != 0) throw std::runtime_error("cannot write " + p.stats_out);
}

/// One program under one policy on one rank of the threads transport (what callgrind counts).
int run_worker(const plan& p) {
    am::config cfg = am::config::from_env();
    cfg.ranks = 1;
    cfg.transport = am::transport_kind::threads;
    const tam_apps::app& a = *p.programs.front();
    return am::run(cfg, [&](am::context& ctx) {
        am::tam::options opt;
        opt.dispatch = p.dispatch;
        write_stats(p, a.run(ctx, argument(p, a), opt));
    });
}

int run_reference(const plan& p) {
    const tam_apps::app& a = *p.programs.front();
    am::tam::result r;
    r.value = tam_table_reference(a, argument(p, a));
    r.finished = true;
    write_stats(p, r);
    return 0;
}

// ------------------------------------------------------------------------- options

const char* const usage =
    "tam_table: Table 2 of \"TAM on the J-Machine\" (TPQ, IPT, IPQ, MD/AM cycle ratios) for the\n"
    "six TAM programs, measured under valgrind's callgrind with the paper's caches, beside the\n"
    "paper's figures. Tables on stderr, JSON lines (bench \"tam\") on stdout.";

int positive(const char* flag, const std::string& v) {
    const std::uint64_t x = to_count(flag, v, 1);
    if (x > 1000000) throw std::invalid_argument(std::string(flag) + ": at most 1000000");
    return static_cast<int>(x);
}

// The options, bound to `p`. tam_apps::find throws std::invalid_argument for an unknown name.
std::vector<option_spec> option_table(plan& p) {
    auto worker = [&p](plan::mode m) {
        return [&p, m](const std::string& v) {
            p.what = m;
            p.programs = {&tam_apps::find(v)};
        };
    };
    return {
        {"--programs", "a,b,...", "mmt,qs,dtw,paraffins,wavefront,ss (default all)",
         [&p](const std::string& v) {
             p.programs.clear();
             for (const std::string& name : split(v)) p.programs.push_back(&tam_apps::find(name));
             if (p.programs.empty()) throw std::invalid_argument("--programs needs a list");
         }},
        {"--arg", "A", "paper (default), large, or a number for every program",
         [&p](const std::string& v) {
             if (v != "paper" && v != "large") (void)positive("--arg", v);
             p.arg = v;
         }},
        {"--out", "FILE", "the JSON lines also into FILE", store_text(p.out)},
        {"--valgrind", "PATH", "the valgrind to use (default: valgrind on PATH)",
         store_text(p.valgrind)},
        {"--reps", "N",
         "callgrind runs of each measurement (default 4), each with the code\n"
         "(tam_table_layout1..3) and the stack placed elsewhere: the misses depend on it;\n"
         "median, min and max over the runs",
         [&p](const std::string& v) { p.reps = positive("--reps", v); }},
        {"--keep", "DIR", "keep the callgrind outputs and logs in DIR (default: removed)",
         store_text(p.keep)},
        {"--verbose", nullptr, "print each valgrind command", store_flag(p.verbose)},
        {"--check", nullptr,
         "no valgrind: run every program under both policies, compare with the\n"
         "sequential reference; exit 1 on a wrong result",
         [&p](const std::string&) { p.what = plan::mode::check; }},
        {"--enabled", nullptr,
         "--check: the layer's enabled variant (options::enabled: local messages\n"
         "served inside the quantum); systems md_enabled, am_enabled",
         store_flag(p.enabled)},
        {"--ranks", "N", "--check: ranks (default 1)",
         [&p](const std::string& v) { p.ranks = positive("--ranks", v); }},
        {"--transport", "T", "--check: threads (default), shm or mpi",
         [&p](const std::string& v) {
             p.transport = to_choice("--transport", v, {"threads", "shm", "mpi"});
         }},
        {"--worker", "PROGRAM", "internal: one program under --policy, into --stats-out",
         worker(plan::mode::worker)},
        {"--reference", "PROGRAM", "internal: one program's reference, into --stats-out",
         worker(plan::mode::reference)},
        {"--policy", "P", "internal: am or md",
         [&p](const std::string& v) {
             try {
                 p.dispatch = am::tam::parse_policy(v);
             } catch (const std::exception&) {
                 throw std::invalid_argument("--policy: am or md");
             }
         }},
        {"--stats-out", "FILE", "internal: where --worker and --reference write",
         store_text(p.stats_out)},
    };
}

[[noreturn]] void bad(const std::string& what) {
    std::fprintf(stderr, "tam_table: %s (try --help)\n", what.c_str());
    std::exit(2);
}

plan parse(int argc, char** argv) {
    plan p;
    for (const tam_apps::app& a : tam_apps::all()) p.programs.push_back(&a);
    (void)parse_args(argc, argv, usage, option_table(p));
    const bool worker = p.what == plan::mode::worker || p.what == plan::mode::reference;
    if (worker && p.stats_out.empty()) bad("--worker and --reference need --stats-out FILE");
    if (p.what != plan::mode::check && p.ranks != 1) bad("--ranks is for --check");
    if (p.what != plan::mode::check && p.enabled) bad("--enabled is for --check");
    return p;
}

}  // namespace
}  // namespace am::bench::tam_table

int main(int argc, char** argv) {
    using namespace am::bench::tam_table;
    const plan p = parse(argc, argv);
    try {
        switch (p.what) {
            case plan::mode::check:
                return run_check(p);
            case plan::mode::worker:
                return run_worker(p);
            case plan::mode::reference:
                return run_reference(p);
            case plan::mode::table:
                break;
        }
        return run_table(p);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "tam_table: %s\n", e.what());
        return 1;
    }
}
