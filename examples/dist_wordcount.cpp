// SPDX-License-Identifier: MIT
// Word count with am::dist (docs/containers.md): every rank reads its byte range of the text
// files named on the command line (am::dist::read_lines), adds each word to a counting_set at
// the word's owner, and rank 0 prints the most frequent words and the totals. Without files it
// counts a generated text, so the program runs anywhere: `--check` then compares the counts
// with a sequential count of the same text and exits non-zero on any difference.
//
//   AM_TRANSPORT=shm AM_RANKS=2 build/examples/dist_wordcount README.md docs/*.md
#include <am/am.hpp>
#include <am/dist.hpp>

#include <unistd.h>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace {

/// Calls `f(word)` for every maximal run of letters and digits in `line`, lower-cased.
template <class F>
void words_of(std::string_view line, F&& f) {
    std::string w;
    for (const char c : line) {
        if (std::isalnum(static_cast<unsigned char>(c)) != 0) {
            w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
        } else if (!w.empty()) {
            f(w);
            w.clear();
        }
    }
    if (!w.empty()) f(w);
}

/// A text of `lines` lines over a 50-word vocabulary (word i appears about 1/(i+1) as often).
std::string generated_text(int lines) {
    std::string text;
    std::uint64_t x = 12345;
    for (int l = 0; l < lines; ++l) {
        for (int k = 0; k < 8; ++k) {
            x = x * 6364136223846793005ull + 1442695040888963407ull;
            const auto u = static_cast<double>(x >> 11) / 9007199254740992.0;
            const int i = static_cast<int>(50.0 * u * u * u);
            text += 'w';
            text += std::to_string(i);
            text += k == 7 ? '\n' : ' ';
        }
    }
    return text;
}

}  // namespace

int main(int argc, char** argv) {
    bool check = false;
    std::vector<std::string> files;
    for (int i = 1; i < argc; ++i) {
        if (std::string_view(argv[i]) == "--check") {
            check = true;
        } else {
            files.emplace_back(argv[i]);
        }
    }
    // Without files: one generated file, written by this process before the ranks start.
    std::string generated;
    if (files.empty()) {
        generated = "/tmp/am_wordcount_" + std::to_string(::getpid()) + ".txt";
        std::ofstream(generated) << generated_text(5000);
        files.push_back(generated);
    }
    const int status = am::run(argc, argv, [&](am::context& ctx) {
        const am::team world = am::coll::world(ctx);
        am::dist::counting_set<std::string> counts(world);
        const auto lines = am::dist::read_lines(world, files, [&](std::string_view line) {
            words_of(line, [&](const std::string& w) { counts.add(w); });
        });
        const auto top = counts.topk(10);
        const auto distinct = counts.size();
        const auto all_lines = am::coll::allreduce(world, lines, am::coll::sum{});
        if (ctx.rank() == 0) {
            std::printf("%llu lines, %zu distinct words on %d ranks; most frequent:\n",
                        static_cast<unsigned long long>(all_lines), distinct, ctx.size());
            for (const auto& [w, c] : top) {
                std::printf("  %-20s %llu\n", w.c_str(), static_cast<unsigned long long>(c));
            }
        }
        if (!check) return;
        const auto everything = counts.gather(0);
        if (ctx.rank() != 0) return;
        std::unordered_map<std::string, std::uint64_t> want;
        for (const auto& f : files) {
            std::ifstream in(f);
            for (std::string line; std::getline(in, line);) {
                words_of(line, [&](const std::string& w) { ++want[w]; });
            }
        }
        std::size_t wrong = want.size() == everything.size() ? 0 : 1;
        for (const auto& [w, c] : everything) wrong += want[w] == c ? 0 : 1;
        std::printf("check: %zu words counted, %zu wrong\n", everything.size(), wrong);
        if (wrong != 0) throw std::runtime_error("dist_wordcount: counts differ");
    });
    if (!generated.empty()) std::remove(generated.c_str());
    return status;
}
