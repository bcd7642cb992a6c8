// SPDX-License-Identifier: MIT
// tam_table's default mode: each program under each policy, and its sequential reference, in
// a child process of this program (--worker, --reference) run under callgrind with the
// paper's caches; then Table 2 beside the paper's, the direct-mapped ratios, the counts and
// the scheduling overhead.
#include "callgrind.hpp"
#include "lib/report.hpp"
#include "paper_table2.hpp"
#include "tam_table.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace am::bench::tam_table {
namespace {

/// What callgrind counts: all of am::tam::run (the public entry point: the scheduler, the
/// threads and inlets, the layer's messages, frames and termination), nothing of the program's
/// construction before it. Matching the signature's start keeps any other am::tam::run... out
/// of the pattern: callgrind *toggles* at every entry of a matching function, so a nested
/// match would switch counting off.
constexpr const char* tam_toggle = "am::tam::run(am::context&*";
constexpr const char* reference_toggle = "tam_table_reference(*";

constexpr cache_kind caches[] = {cache_kind::four_way, cache_kind::direct};
constexpr am::tam::policy policies[] = {am::tam::policy::message_driven,
                                        am::tam::policy::active_messages};

/// What a worker wrote into its --stats-out file.
struct run_stats {
    std::map<std::string, std::uint64_t> v;
    [[nodiscard]] std::uint64_t at(const char* key) const {
        const auto it = v.find(key);
        return it == v.end() ? 0 : it->second;
    }
};

/// Reads the worker's flat JSON object of unsigned numbers ({"value":1,"threads":2,...}).
run_stats read_stats(const std::string& path) {
    std::ifstream in(path);
    std::string text;
    if (!in || !std::getline(in, text)) throw std::runtime_error("the worker wrote no " + path);
    run_stats s;
    for (std::size_t at = text.find('"'); at != std::string::npos; at = text.find('"', at)) {
        const std::size_t end = text.find('"', at + 1);
        if (end == std::string::npos || end + 1 >= text.size() || text[end + 1] != ':') {
            throw std::runtime_error(path + ": not a flat JSON object of numbers");
        }
        s.v[text.substr(at + 1, end - at - 1)] = std::strtoull(text.c_str() + end + 2, nullptr, 10);
        at = end + 1;
    }
    if (s.v.count("value") == 0) throw std::runtime_error(path + ": no value");
    return s;
}

/// One program (or reference) run, measured `reps` times with each cache. The counts of a
/// run depend a little on where its data lands (the worker's arguments, environment and pid
/// move the stack and the heap): instructions by a few, misses by up to a percent or so.
struct measured {
    run_stats st;
    std::vector<counts> c[2];  // by cache_kind, one per repetition

    /// `f` of every repetition with cache `k`, summarised.
    template <class F>
    [[nodiscard]] summary over(int k, F f) const {
        std::vector<double> v;
        for (const counts& x : c[k]) v.push_back(f(x));
        return summarize(v);
    }
    [[nodiscard]] summary ir() const {
        return over(0, [](const counts& x) { return double(x.ir); });
    }
    [[nodiscard]] double threads() const { return double(st.at("threads")); }
    [[nodiscard]] double quanta() const { return double(st.at("quanta")); }
    [[nodiscard]] double tpq() const { return quanta() > 0 ? threads() / quanta() : 0; }
    [[nodiscard]] summary per(double n) const {
        return over(0, [n](const counts& x) { return n > 0 ? double(x.ir) / n : 0; });
    }
    [[nodiscard]] summary ipt() const { return per(threads()); }
    [[nodiscard]] summary ipq() const { return per(quanta()); }
};

/// `num(x) / den(y)` for the i-th repetitions x of `a` and y of `b`, summarised.
template <class F>
summary paired(const std::vector<counts>& a, const std::vector<counts>& b, F f) {
    std::vector<double> v;
    for (std::size_t i = 0; i < a.size() && i < b.size(); ++i) v.push_back(f(a[i]) / f(b[i]));
    return summarize(v);
}

struct program_result {
    const tam_apps::app* a;
    int n;
    am::tam::word want;  // the reference's value, computed in this process
    measured seq;        // the reference (4-way only)
    measured pol[2];     // by `policies`: md, am
    [[nodiscard]] bool correct(int i) const {
        return pol[i].st.at("finished") == 1 && pol[i].st.at("value") == want;
    }
    /// MD/AM cycles with cache `k` and miss cost `cost`.
    [[nodiscard]] summary ratio(int k, unsigned cost) const {
        return paired(pol[0].c[k], pol[1].c[k], [cost](const counts& x) { return x.cycles(cost); });
    }
    /// Instructions of policy `i` over the reference's.
    [[nodiscard]] summary overhead(int i) const {
        return paired(pol[i].c[0], seq.c[0], [](const counts& x) { return double(x.ir); });
    }
};

std::string self_exe() {
    std::vector<char> buf(4096);
    const ssize_t n = readlink("/proc/self/exe", buf.data(), buf.size() - 1);
    if (n <= 0) throw std::runtime_error("cannot read /proc/self/exe");
    return std::string(buf.data(), static_cast<std::size_t>(n));
}

class work_dir {
  public:
    explicit work_dir(const std::string& keep) : _keep(!keep.empty()) {
        if (_keep) {
            std::filesystem::create_directories(keep);
            _path = keep;
            return;
        }
        std::string tmpl = "/tmp/tam_table.XXXXXX";
        if (mkdtemp(tmpl.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
        _path = tmpl;
    }
    ~work_dir() {
        std::error_code ec;
        if (!_keep) std::filesystem::remove_all(_path, ec);
    }
    work_dir(const work_dir&) = delete;
    work_dir& operator=(const work_dir&) = delete;
    [[nodiscard]] const std::string& path() const { return _path; }

  private:
    bool _keep;
    std::string _path;
};

/// Repetition `rep` runs the worker with an environment 40 x `rep` bytes larger: its stack,
/// and so where its data lands in the caches, moves, as it does between machines and
/// invocations (a run's own repetitions would otherwise count exactly the same misses).
std::string pad(int rep) {
    return "TAM_TABLE_PAD=" + std::string(static_cast<std::size_t>(rep) * 40, 'x');
}

/// The binaries the repetitions run in turn: this one, then tam_table_layout1..3 beside it,
/// the same program with its code 704, 1408 and 2112 bytes further on (code_pad.cpp), as the
/// instruction cache's misses depend on where the code lies. Those not found are left out.
std::vector<std::string> layouts(const std::string& self) {
    std::vector<std::string> out{self};
    const std::string dir = self.substr(0, self.rfind('/') + 1);
    for (int k = 1; k <= 3; ++k) {
        const std::string exe = dir + "tam_table_layout" + std::to_string(k);
        if (access(exe.c_str(), X_OK) == 0) out.push_back(exe);
    }
    if (out.size() == 1) {
        std::fprintf(stderr,
                     "tam_table: warning: no tam_table_layout1..3 beside %s: every "
                     "repetition runs the same code layout\n",
                     self.c_str());
    }
    return out;
}

struct runner {
    const plan& p;
    std::string valgrind;
    std::vector<std::string> exes;  // by repetition, in turn (`layouts`)
    std::string dir;

    measured run(const std::vector<std::string>& args, const char* toggle, const std::string& tag,
                 bool both_caches) const {
        measured m;
        for (int rep = 0; rep < p.reps; ++rep) {
            for (const cache_kind k : caches) {
                if (k == cache_kind::direct && !both_caches) break;
                const std::string t = tag + "." + to_string(k) + "." + std::to_string(rep);
                std::vector<std::string> prog{exes[static_cast<std::size_t>(rep) % exes.size()]};
                prog.insert(prog.end(), args.begin(), args.end());
                prog.insert(prog.end(), {"--stats-out", dir + "/" + t + ".stats"});
                if (p.verbose) print_command(k, toggle, dir + "/" + t + ".out", prog, rep);
                m.c[k == cache_kind::four_way ? 0 : 1].push_back(
                    measure(valgrind, k, toggle, prog, dir, t, {pad(rep)}));
                run_stats s = read_stats(dir + "/" + t + ".stats");
                if (m.st.v.empty()) {
                    m.st = std::move(s);
                } else if (s.v != m.st.v) {
                    std::fprintf(stderr,
                                 "tam_table: warning: %s: the stats of run %s differ from "
                                 "the first run's\n",
                                 tag.c_str(), t.c_str());
                }
            }
        }
        return m;
    }

    void print_command(cache_kind k, const char* toggle, const std::string& out,
                       const std::vector<std::string>& prog, int rep) const {
        std::string cmd = pad(rep);
        for (const auto& w : callgrind_argv(valgrind, k, toggle, out, prog)) {
            cmd += " " + w;
        }
        std::fprintf(stderr, "tam_table: %s\n", cmd.c_str());
    }

    program_result program(const tam_apps::app& a) const {
        program_result r{&a, argument(p, a), a.reference(argument(p, a)), {}, {}};
        const std::string n = std::to_string(r.n);
        std::fprintf(stderr, "tam_table: %s %d: reference\n", a.name, r.n);
        r.seq = run({"--reference", a.name, "--arg", n}, reference_toggle,
                    std::string(a.name) + ".seq", false);
        for (int i = 0; i < 2; ++i) {
            const char* pol = am::tam::to_string(policies[i]);
            std::fprintf(stderr, "tam_table: %s %d: %s, 4-way and direct-mapped\n", a.name, r.n,
                         pol);
            r.pol[i] = run({"--worker", a.name, "--policy", pol, "--arg", n}, tam_toggle,
                           std::string(a.name) + "." + pol, true);
        }
        return r;
    }
};

// ------------------------------------------------------------------------- output

void emit_paper(emitter& out, const paper_row& row) {
    const std::string tr = "none";
    out.add({"paper_md", tr, 1, row.program, "tpq", row.tpq_md, row.arg});
    out.add({"paper_am", tr, 1, row.program, "tpq", row.tpq_am, row.arg});
    out.add({"paper_md", tr, 1, row.program, "ipt", row.ipt_md, row.arg});
    out.add({"paper_am", tr, 1, row.program, "ipt", row.ipt_am, row.arg});
    out.add({"paper_md", tr, 1, row.program, "ipq", row.ipq_md, row.arg});
    out.add({"paper_am", tr, 1, row.program, "ipq", row.ipq_am, row.arg});
    const char* metric[] = {"cycle_ratio_miss12", "cycle_ratio_miss24", "cycle_ratio_miss48"};
    for (int i = 0; i < 3; ++i) {
        out.add({"paper_md/am", tr, 1, row.program, metric[i], row.ratio[i], row.arg, "4way"});
    }
}

/// Adds one line of our measurements: `v` over the repetitions.
void add(emitter& out, const char* system, const char* op, const char* metric, const summary& v,
         int arg, const char* cache = "none") {
    point pt{system, "threads", 1, op, metric, v.median, arg, cache};
    pt.lo = v.min;
    pt.hi = v.max;
    pt.reps = v.reps;
    out.add(pt);
}

summary exact(double v) {
    return {v, v, v, 1};
}

// Metric names by cache (4-way, direct-mapped) and miss cost.
constexpr const char* cycles_metric[2][3] = {
    {"cycles_miss12", "cycles_miss24", "cycles_miss48"},
    {"cycles_miss12_dm", "cycles_miss24_dm", "cycles_miss48_dm"}};
constexpr const char* ratio_metric[2][3] = {
    {"cycle_ratio_miss12", "cycle_ratio_miss24", "cycle_ratio_miss48"},
    {"cycle_ratio_miss12_dm", "cycle_ratio_miss24_dm", "cycle_ratio_miss48_dm"}};
constexpr const char* i1_metric[2] = {"i1_misses", "i1_misses_dm"};
constexpr const char* d1_metric[2] = {"d1_misses", "d1_misses_dm"};

/// The misses and cycles of `m` with cache `k`.
void emit_cache(emitter& out, const char* sys, const char* op, int n, const measured& m, int k) {
    const char* cache = to_string(caches[k]);
    if (m.c[k].empty()) return;
    if (std::string_view(sys) != "seq") {
        add(out, sys, op, i1_metric[k], m.over(k, [](const counts& x) { return double(x.i1mr); }),
            n, cache);
        add(out, sys, op, d1_metric[k],
            m.over(k, [](const counts& x) { return double(x.d1mr + x.d1mw); }), n, cache);
    }
    for (int c = 0; c < 3; ++c) {
        const unsigned cost = miss_costs[c];
        add(out, sys, op, cycles_metric[k][c],
            m.over(k, [cost](const counts& x) { return x.cycles(cost); }), n, cache);
    }
}

/// Policy `i`'s lines: correctness, granularity, counts, overhead, misses and cycles.
void emit_policy(emitter& out, const program_result& r, int i) {
    const measured& m = r.pol[i];
    const char* sys = am::tam::to_string(policies[i]);
    const char* op = r.a->name;
    const int n = r.n;
    point ok{sys, "threads", 1, op, "correct", r.correct(i) ? 1.0 : 0.0, n, "none", r.correct(i)};
    out.add(ok);
    add(out, sys, op, "tpq", exact(m.tpq()), n);
    add(out, sys, op, "ipt", m.ipt(), n);
    add(out, sys, op, "ipq", m.ipq(), n);
    for (const char* k : {"threads", "quanta", "inlets", "messages", "frames"}) {
        add(out, sys, op, k, exact(double(m.st.at(k))), n);
    }
    add(out, sys, op, "instructions", m.ir(), n);
    add(out, sys, op, "overhead_vs_seq", r.overhead(i), n);
    for (int k = 0; k < 2; ++k) emit_cache(out, sys, op, n, m, k);
}

void emit_ours(emitter& out, const program_result& r) {
    const char* op = r.a->name;
    add(out, "seq", op, "instructions", r.seq.ir(), r.n);
    emit_cache(out, "seq", op, r.n, r.seq, 0);
    for (int i = 0; i < 2; ++i) emit_policy(out, r, i);
    add(out, "md/am", op, "instruction_ratio",
        paired(r.pol[0].c[0], r.pol[1].c[0], [](const counts& x) { return double(x.ir); }), r.n);
    for (int k = 0; k < 2; ++k) {
        for (int c = 0; c < 3; ++c) {
            add(out, "md/am", op, ratio_metric[k][c], r.ratio(k, miss_costs[c]), r.n,
                to_string(caches[k]));
        }
    }
}

/// A figure in at most 8 characters: 3 significant digits below 1000, whole numbers above.
std::string fig(double v) {
    char buf[32];
    if (v < 1000) {
        std::snprintf(buf, sizeof buf, "%.3g", v);
    } else {
        std::snprintf(buf, sizeof buf, "%.0f", v);
    }
    return buf;
}

double geomean(const std::vector<double>& v) {
    double s = 0;
    for (double x : v) s += std::log(x);
    return v.empty() ? 0 : std::exp(s / static_cast<double>(v.size()));
}

void print_table2(const std::vector<program_result>& rs) {
    std::FILE* o = stderr;
    std::fprintf(o,
                 "\nTable 2: one rank; MD/AM = cycles of the message-driven over the Active "
                 "Messages policy,\n8 KiB 4-way set-associative I and D caches, 64-byte lines, "
                 "miss cost 12/24/48 cycles\n(paper: J-Machine MDP; ours: x86-64 under "
                 "callgrind, am::tam::run only)\n\n");
    std::fprintf(o, "%-10s %4s %-6s %8s %8s %7s %7s %8s %8s  %5s %5s %5s\n", "program", "arg",
                 "source", "TPQ MD", "TPQ AM", "IPT MD", "IPT AM", "IPQ MD", "IPQ AM", "12", "24",
                 "48");
    std::vector<double> g_ours[3], g_paper[3];
    for (const program_result& r : rs) {
        if (const paper_row* pr = find_paper_row(r.a->name)) {
            std::fprintf(o, "%-10s %4d %-6s %8s %8s %7s %7s %8s %8s  %5.2f %5.2f %5.2f\n",
                         r.a->name, pr->arg, "paper", fig(pr->tpq_md).c_str(),
                         fig(pr->tpq_am).c_str(), fig(pr->ipt_md).c_str(), fig(pr->ipt_am).c_str(),
                         fig(pr->ipq_md).c_str(), fig(pr->ipq_am).c_str(), pr->ratio[0],
                         pr->ratio[1], pr->ratio[2]);
            for (int c = 0; c < 3; ++c) g_paper[c].push_back(pr->ratio[c]);
        }
        const measured& md = r.pol[0];
        const measured& am = r.pol[1];
        double q[3];
        for (int c = 0; c < 3; ++c) {
            q[c] = r.ratio(0, miss_costs[c]).median;
            g_ours[c].push_back(q[c]);
        }
        std::fprintf(o, "%-10s %4d %-6s %8s %8s %7s %7s %8s %8s  %5.2f %5.2f %5.2f\n",
                     find_paper_row(r.a->name) != nullptr ? "" : r.a->name, r.n, "ours",
                     fig(md.tpq()).c_str(), fig(am.tpq()).c_str(), fig(md.ipt().median).c_str(),
                     fig(am.ipt().median).c_str(), fig(md.ipq().median).c_str(),
                     fig(am.ipq().median).c_str(), q[0], q[1], q[2]);
    }
    std::fprintf(o, "%-10s %4s %-6s %61s %5.2f %5.2f %5.2f\n", "geomean", "", "paper", "",
                 geomean(g_paper[0]), geomean(g_paper[1]), geomean(g_paper[2]));
    std::fprintf(o, "%-10s %4s %-6s %61s %5.2f %5.2f %5.2f\n", "", "", "ours", "",
                 geomean(g_ours[0]), geomean(g_ours[1]), geomean(g_ours[2]));
}

void print_direct(const std::vector<program_result>& rs) {
    std::FILE* o = stderr;
    std::fprintf(o,
                 "\nMD/AM cycle ratios, 8 KiB direct-mapped I and D caches, 64-byte lines (the "
                 "paper's Fig. 5\ndraws these against cache size; it prints no table)\n\n");
    std::fprintf(o, "%-10s %4s  %5s %5s %5s\n", "program", "arg", "12", "24", "48");
    for (const program_result& r : rs) {
        std::fprintf(o, "%-10s %4d  %5.2f %5.2f %5.2f\n", r.a->name, r.n, r.ratio(1, 12).median,
                     r.ratio(1, 24).median, r.ratio(1, 48).median);
    }
}

void print_ranges(const std::vector<program_result>& rs, int reps) {
    std::FILE* o = stderr;
    std::fprintf(o,
                 "\nMD/AM cycle ratios, min-max over the %d run(s) (code and stack placed "
                 "elsewhere in each)\n\n",
                 reps);
    std::fprintf(o, "%-10s %4s  %-11s %-11s %-11s  %-11s %-11s %-11s\n", "program", "arg",
                 "4-way 12", "4-way 24", "4-way 48", "direct 12", "direct 24", "direct 48");
    for (const program_result& r : rs) {
        std::fprintf(o, "%-10s %4d ", r.a->name, r.n);
        for (int k = 0; k < 2; ++k) {
            std::fputs(k == 0 ? " " : "  ", o);
            for (const unsigned cost : miss_costs) {
                const summary q = r.ratio(k, cost);
                std::fprintf(o, "%4.2f-%4.2f%s", q.min, q.max, cost == 48 ? "" : "   ");
            }
        }
        std::fputs("\n", o);
    }
}

unsigned long long med(const measured& m, int k, std::uint64_t (*f)(const counts&)) {
    return static_cast<unsigned long long>(
        m.over(k, [f](const counts& x) { return double(f(x)); }).median);
}

void print_counts(const std::vector<program_result>& rs) {
    std::FILE* o = stderr;
    std::fprintf(o,
                 "\nCounts (callgrind inside am::tam::run; misses with the 4-way caches, then "
                 "direct-mapped)\n\n");
    std::fprintf(o, "%-10s %-3s %9s %9s %9s %9s %11s %9s %9s %9s %9s\n", "program", "pol",
                 "threads", "quanta", "inlets", "messages", "instr", "I1 miss", "D1 miss", "I1 dm",
                 "D1 dm");
    auto ir = [](const counts& x) { return x.ir; };
    auto i1 = [](const counts& x) { return x.i1mr; };
    auto d1 = [](const counts& x) { return x.d1mr + x.d1mw; };
    for (const program_result& r : rs) {
        for (int i = 0; i < 2; ++i) {
            const measured& m = r.pol[i];
            std::fprintf(o, "%-10s %-3s %9llu %9llu %9llu %9llu %11llu %9llu %9llu %9llu %9llu\n",
                         r.a->name, am::tam::to_string(policies[i]),
                         static_cast<unsigned long long>(m.st.at("threads")),
                         static_cast<unsigned long long>(m.st.at("quanta")),
                         static_cast<unsigned long long>(m.st.at("inlets")),
                         static_cast<unsigned long long>(m.st.at("messages")), med(m, 0, ir),
                         med(m, 0, i1), med(m, 0, d1), med(m, 1, i1), med(m, 1, d1));
        }
    }
}

void print_overhead(const std::vector<program_result>& rs, int reps) {
    std::FILE* o = stderr;
    std::fprintf(o,
                 "\nScheduling overhead on one rank: instructions of am::tam::run over those of "
                 "the sequential\nreference (goal: at most 2x on mmt, dtw, wavefront)\n\n");
    std::fprintf(o, "%-10s %4s %11s %11s %11s %7s %7s  %s\n", "program", "arg", "seq instr",
                 "MD instr", "AM instr", "MD/seq", "AM/seq", "correct (md, am)");
    double spread = 0;
    for (const program_result& r : rs) {
        std::fprintf(o, "%-10s %4d %11.0f %11.0f %11.0f %7.2f %7.2f  %s, %s\n", r.a->name, r.n,
                     r.seq.ir().median, r.pol[0].ir().median, r.pol[1].ir().median,
                     r.overhead(0).median, r.overhead(1).median, r.correct(0) ? "yes" : "NO",
                     r.correct(1) ? "yes" : "NO");
        for (int k = 0; k < 2; ++k) {
            for (const unsigned cost : miss_costs) {
                const summary q = r.ratio(k, cost);
                spread = std::max(spread, q.max - q.min);
            }
        }
    }
    std::fprintf(o,
                 "\ncycles = instructions + (I1 misses + D1 read misses + D1 write misses) x "
                 "miss cost;\nLRU, write-allocate; write-backs and the levels below L1 are not "
                 "charged.\nFigures: medians of %d callgrind run(s) each; the widest min-max "
                 "range of an MD/AM ratio: %.3f.\n",
                 reps, spread);
}

}  // namespace

int run_table(const plan& p) {
    const std::string valgrind = find_valgrind(p.valgrind);
    if (valgrind.empty()) {
        std::fprintf(stderr,
                     "tam_table: valgrind not found%s%s: the table needs callgrind's instruction "
                     "counts and cache simulation (Debian: apt-get install valgrind). "
                     "`tam_table --check` runs the programs without it.\n",
                     p.valgrind.empty() ? " on PATH" : " at ", p.valgrind.c_str());
        return 2;
    }
    const work_dir dir(p.keep);
    const runner run{p, valgrind, layouts(self_exe()), dir.path()};
    emitter out(p.out);
    std::vector<program_result> rs;
    for (const tam_apps::app* a : p.programs) {
        rs.push_back(run.program(*a));
        if (const paper_row* pr = find_paper_row(a->name)) emit_paper(out, *pr);
        emit_ours(out, rs.back());
    }
    print_table2(rs);
    print_direct(rs);
    print_ranges(rs, p.reps);
    print_counts(rs);
    print_overhead(rs, p.reps);
    int wrong = 0;
    for (const program_result& r : rs) wrong += (r.correct(0) ? 0 : 1) + (r.correct(1) ? 0 : 1);
    if (wrong != 0) {
        std::fprintf(stderr, "tam_table: %d wrong result(s)\n", wrong);
        return 1;
    }
    return 0;
}

}  // namespace am::bench::tam_table
