// SPDX-License-Identifier: MIT
#include "report.hpp"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace am::bench {
namespace {

template <std::size_t N>
void copy_field(char (&dst)[N], std::string_view s) {
    const std::size_t n = std::min(s.size(), N - 1);
    std::memcpy(dst, s.data(), n);
    dst[n] = '\0';
}

std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

// Reads `"key":` then a string or number value from `p`; advances `p`.
bool next_pair(std::string_view& p, std::string& key, std::string& value, bool& quoted) {
    auto skip = [&] {
        while (!p.empty() && (p[0] == ' ' || p[0] == ',' || p[0] == '\t')) p.remove_prefix(1);
    };
    auto read_string = [&](std::string& out) {
        if (p.empty() || p[0] != '"') return false;
        const std::size_t end = p.find('"', 1);
        if (end == std::string_view::npos) return false;
        out.assign(p.substr(1, end - 1));
        p.remove_prefix(end + 1);
        return true;
    };
    skip();
    if (!read_string(key)) return false;
    skip();
    if (p.empty() || p[0] != ':') return false;
    p.remove_prefix(1);
    skip();
    quoted = !p.empty() && p[0] == '"';
    if (quoted) return read_string(value);
    const std::size_t end = std::min(p.find(','), p.size());  // the last value ends the text
    if (end == 0) return false;
    value.assign(p.substr(0, end));
    p.remove_prefix(end);
    return true;
}

}  // namespace

summary summarize(std::vector<double> v) {
    if (v.empty()) return {0, 0, 0, 0};
    std::sort(v.begin(), v.end());
    const std::size_t n = v.size();
    const double med = n % 2 != 0 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    return {med, v.front(), v.back(), static_cast<int>(n)};
}

summary ratio_of(const summary& num, const summary& den) {
    return {num.median / den.median, num.min / den.max, num.max / den.min,
            std::min(num.reps, den.reps)};
}

result make_result(std::string_view bench, std::string_view system, std::string_view transport,
                   int ranks, std::string_view op, std::uint64_t bytes, std::string_view metric,
                   const summary& s) {
    result r;
    copy_field(r.bench, bench);
    copy_field(r.system, system);
    copy_field(r.transport, transport);
    copy_field(r.op, op);
    copy_field(r.metric, metric);
    r.ranks = ranks;
    r.bytes = bytes;
    r.median = s.median;
    r.min = s.min;
    r.max = s.max;
    r.reps = s.reps;
    return r;
}

std::string to_json(const result& r) {
    std::string s = "{\"bench\":\"";
    s += r.bench;
    s += "\",\"system\":\"";
    s += r.system;
    s += "\",\"transport\":\"";
    s += r.transport;
    s += "\",\"ranks\":" + std::to_string(r.ranks);
    s += ",\"op\":\"";
    s += r.op;
    s += "\",\"bytes\":" + std::to_string(r.bytes);
    s += ",\"metric\":\"";
    s += r.metric;
    s += "\",\"median\":" + number(r.median);
    s += ",\"min\":" + number(r.min);
    s += ",\"max\":" + number(r.max);
    s += ",\"reps\":" + std::to_string(r.reps) + "}";
    return s;
}

std::optional<result> from_json(std::string_view line) {
    while (!line.empty() && (line.back() == '\n' || line.back() == '\r' || line.back() == ' ')) {
        line.remove_suffix(1);
    }
    if (line.size() < 2 || line.front() != '{' || line.back() != '}') return std::nullopt;
    std::string_view p = line.substr(1, line.size() - 2);
    result r;
    int seen = 0;
    std::string key, value;
    bool quoted = false;
    while (next_pair(p, key, value, quoted)) {
        ++seen;
        if (key == "bench")
            copy_field(r.bench, value);
        else if (key == "system")
            copy_field(r.system, value);
        else if (key == "transport")
            copy_field(r.transport, value);
        else if (key == "op")
            copy_field(r.op, value);
        else if (key == "metric")
            copy_field(r.metric, value);
        else if (key == "ranks")
            r.ranks = std::atoi(value.c_str());
        else if (key == "reps")
            r.reps = std::atoi(value.c_str());
        else if (key == "bytes")
            r.bytes = std::strtoull(value.c_str(), nullptr, 10);
        else if (key == "median")
            r.median = std::strtod(value.c_str(), nullptr);
        else if (key == "min")
            r.min = std::strtod(value.c_str(), nullptr);
        else if (key == "max")
            r.max = std::strtod(value.c_str(), nullptr);
        else
            --seen;
    }
    if (seen != 11) return std::nullopt;
    return r;
}

std::vector<result> pool_rounds(const std::vector<std::vector<result>>& rounds) {
    auto same_key = [](const result& a, const result& b) {
        return std::strcmp(a.bench, b.bench) == 0 && std::strcmp(a.system, b.system) == 0 &&
               std::strcmp(a.transport, b.transport) == 0 && a.ranks == b.ranks &&
               std::strcmp(a.op, b.op) == 0 && a.bytes == b.bytes &&
               std::strcmp(a.metric, b.metric) == 0;
    };
    std::vector<result> keys;
    for (const auto& round : rounds) {
        for (const result& r : round) {
            if (std::none_of(keys.begin(), keys.end(),
                             [&](const result& k) { return same_key(k, r); })) {
                keys.push_back(r);
            }
        }
    }
    for (result& k : keys) {
        std::vector<double> medians;
        int reps = 0;
        for (const auto& round : rounds) {
            for (const result& r : round) {
                if (!same_key(k, r)) continue;
                medians.push_back(r.median);
                k.min = std::min(k.min, r.min);
                k.max = std::max(k.max, r.max);
                reps += r.reps;
            }
        }
        k.median = summarize(medians).median;
        k.reps = reps;
    }
    return keys;
}

reporter::~reporter() {
    if (_mode == output::json && !_all.empty()) print_table(stderr);
}

void reporter::add(const result& r) {
    _all.push_back(r);
    if (_mode == output::quiet) return;
    if (_mode == output::table) {
        if (_all.size() == 1) print_header(stdout);
        print_row(stdout, r);
    } else {
        std::printf("%s\n", to_json(r).c_str());
    }
    std::fflush(stdout);
}

std::optional<result> reporter::find(std::string_view system, std::string_view op,
                                     std::uint64_t bytes, std::string_view metric) const {
    for (const result& r : _all) {
        if (system == r.system && op == r.op && bytes == r.bytes && metric == r.metric) return r;
    }
    return std::nullopt;
}

void reporter::add_ratios(std::string_view num_system, std::string_view num_op,
                          std::string_view den_system, std::string_view den_op,
                          std::string_view metric, std::string_view ratio_metric) {
    const std::string sys = std::string(num_system) + "/" + std::string(den_system);
    const std::vector<result> snapshot = _all;
    for (const result& a : snapshot) {
        if (num_system != a.system || num_op != a.op || metric != a.metric) continue;
        const std::optional<result> b = find(den_system, den_op, a.bytes, metric);
        if (!b || b->median == 0 || b->min == 0 || b->max == 0) continue;
        const summary s =
            ratio_of({a.median, a.min, a.max, a.reps}, {b->median, b->min, b->max, b->reps});
        add(make_result(a.bench, sys, a.transport, a.ranks, a.op, a.bytes, ratio_metric, s));
    }
}

void reporter::add_transport_ratios(std::string_view system, std::string_view num_transport,
                                    std::string_view den_transport, std::string_view metric,
                                    std::string_view ratio_metric) {
    const std::string sys = std::string(system) + "-" + std::string(num_transport) + "/" +
                            std::string(system) + "-" + std::string(den_transport);
    const std::vector<result> snapshot = _all;
    for (const result& a : snapshot) {
        if (system != a.system || num_transport != a.transport || metric != a.metric) continue;
        for (const result& b : snapshot) {
            if (system != b.system || den_transport != b.transport || metric != b.metric ||
                std::strcmp(a.op, b.op) != 0 || a.bytes != b.bytes) {
                continue;
            }
            if (b.median == 0 || b.min == 0 || b.max == 0) break;
            const summary s =
                ratio_of({a.median, a.min, a.max, a.reps}, {b.median, b.min, b.max, b.reps});
            add(make_result(a.bench, sys, a.transport, a.ranks, a.op, a.bytes, ratio_metric, s));
            break;
        }
    }
}

void reporter::print_header(std::FILE* out) {
    std::fprintf(out, "%-12s %-10s %-9s %5s %-12s %9s %-16s %10s %10s %10s %4s\n", "bench",
                 "system", "transport", "ranks", "op", "bytes", "metric", "median", "min", "max",
                 "reps");
}

void reporter::print_row(std::FILE* out, const result& r) {
    std::fprintf(out, "%-12s %-10s %-9s %5d %-12s %9llu %-16s %10.4g %10.4g %10.4g %4d\n", r.bench,
                 r.system, r.transport, r.ranks, r.op, static_cast<unsigned long long>(r.bytes),
                 r.metric, r.median, r.min, r.max, r.reps);
}

void reporter::print_table(std::FILE* out) const {
    print_header(out);
    for (const result& r : _all) print_row(out, r);
    std::fflush(out);
}

std::vector<std::size_t> am_sizes(const reporter& rep, std::string_view metric) {
    std::vector<std::size_t> v;
    for (const result& r : rep.results()) {
        if (std::string_view(r.system) != "am") continue;
        if (!metric.empty() && std::string_view(r.metric) != metric) continue;
        if (std::find(v.begin(), v.end(), r.bytes) == v.end()) v.push_back(r.bytes);
    }
    std::sort(v.begin(), v.end());
    return v;
}

}  // namespace am::bench
