// SPDX-License-Identifier: MIT
// Window active messages (include/am/window.hpp): the paper's remote search. Every rank's window
// holds a table of 20-character keys; an AM sends 100 queries (segments of 20 characters) to the
// rank that owns them, the operation looks each one up in the target's table and returns the
// matching entry's value (20 characters out per segment), and counts the hits in the table's
// header. Checked against a sequential lookup; `--check` exits non-zero on a mismatch.
#include <am/am.hpp>
#include <am/window.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

namespace {

constexpr std::size_t width = 20;     // characters per key and per value
constexpr std::size_t entries = 256;  // table entries per rank
constexpr std::size_t queries = 100;  // segments per AM

using word = std::array<char, width>;

struct table {
    std::uint64_t hits;
    word key[entries];
    word value[entries];
};

word make_word(const char* kind, int rank, std::size_t i) {
    const std::string s = std::string(kind) + "-" + std::to_string(rank) + "-" + std::to_string(i);
    word w{};
    std::memcpy(w.data(), s.data(), std::min(s.size(), width));
    return w;
}

// The operation: per segment, one query in, one value out (zeros when absent).
void search(const am::window_args<char, table, char>& a) {
    table& t = a.persistent[0];
    for (std::size_t s = 0; s < a.num_segments; ++s) {
        const auto q = a.in(s);
        auto out = a.out(s);
        std::memset(out.data(), 0, width);
        for (std::size_t e = 0; e < entries; ++e) {
            if (std::memcmp(t.key[e].data(), q.data(), width) == 0) {
                std::memcpy(out.data(), t.value[e].data(), width);
                ++t.hits;
                break;
            }
        }
    }
}

}  // namespace

int main(int argc, char** argv) {
    const bool check = argc > 1 && std::string(argv[1]) == "--check";
    return am::run(argc, argv, [check](am::context& ctx) {
        const int me = ctx.rank(), n = ctx.size();
        am::window_info info;
        info.pipeline_unit = 25;  // four units per AM, pipelined
        auto win = am::window::allocate(ctx, sizeof(table), info);
        auto& mine = *reinterpret_cast<table*>(win.memory().data());
        for (std::size_t e = 0; e < entries; ++e) {
            mine.key[e] = make_word("key", me, e);
            mine.value[e] = make_word("val", me, e);
        }
        auto op = win.register_op<char, table, char>("search", &search);
        std::vector<std::byte> staging(4096);  // shared by all origins beyond the internal buffers
        win.attach(staging);

        // Queries for every rank: even ones hit, odd ones miss.
        std::vector<std::vector<char>> in(n), out(n);
        for (int t = 0; t < n; ++t) {
            in[t].resize(queries * width);
            out[t].resize(queries * width);
            for (std::size_t q = 0; q < queries; ++q) {
                const std::size_t e = (q * 7 + static_cast<std::size_t>(me)) % entries;
                const word w = make_word(q % 2 == 0 ? "key" : "nokey", t, e);
                std::memcpy(in[t].data() + q * width, w.data(), width);
            }
        }
        win.fence();
        for (int t = 0; t < n; ++t) {
            win.am(op, t, std::span<const char>(in[t]), width, std::span<char>(out[t]), width,
                   queries, 0, 1);
        }
        win.fence();  // every AM has run and every output is here

        int bad = 0;
        for (int t = 0; t < n; ++t) {
            for (std::size_t q = 0; q < queries; ++q) {
                const std::size_t e = (q * 7 + static_cast<std::size_t>(me)) % entries;
                const word want = q % 2 == 0 ? make_word("val", t, e) : word{};
                bad += std::memcmp(out[t].data() + q * width, want.data(), width) != 0;
            }
        }
        const std::uint64_t want_hits = static_cast<std::uint64_t>(n) * (queries / 2);
        bad += mine.hits != want_hits;
        win.detach();
        const am::window_stats s = win.stats();
        std::printf(
            "rank %d: %d AMs, %llu units sent, %llu run here, hits %llu (want %llu), "
            "%d mismatches\n",
            me, n, static_cast<unsigned long long>(s.units_sent),
            static_cast<unsigned long long>(s.units_run),
            static_cast<unsigned long long>(mine.hits), static_cast<unsigned long long>(want_hits),
            bad);
        if (check && bad != 0) ctx.abort("window_search: wrong results");
    });
}
