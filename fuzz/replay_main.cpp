// SPDX-License-Identifier: MIT
// Replays fuzz inputs through a target without libFuzzer: runs LLVMFuzzerTestOneInput once on
// every regular file in the directories (or files) named on the command line. A broken
// invariant aborts (FUZZ_CHECK), a sanitizer report fails the process: either way the test
// fails naming the input, which this prints before running it. Used by the ctest tests
// am.fuzz.<target>.replay (tests/fuzz/), built with the project's normal compiler.
//   <target>_replay DIR|FILE...
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <system_error>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size);

namespace {

bool replay(const std::filesystem::path& file) {
    std::ifstream in(file, std::ios::binary);
    if (!in) {
        std::fprintf(stderr, "replay: cannot read %s\n", file.c_str());
        return false;
    }
    const std::vector<char> bytes((std::istreambuf_iterator<char>(in)),
                                  std::istreambuf_iterator<char>());
    std::fprintf(stderr, "replay: %s (%zu bytes)\n", file.c_str(), bytes.size());
    std::vector<std::uint8_t> data(bytes.size());
    std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(data.data()));
    // An exact-size heap block, as libFuzzer passes it: reads past the end are caught.
    LLVMFuzzerTestOneInput(data.data(), data.size());
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s DIR|FILE...\n", argv[0]);
        return 2;
    }
    std::size_t inputs = 0;
    for (int i = 1; i < argc; ++i) {
        const std::filesystem::path arg(argv[i]);
        std::error_code ec;
        std::vector<std::filesystem::path> files;
        if (std::filesystem::is_directory(arg, ec)) {
            for (const auto& e : std::filesystem::directory_iterator(arg, ec)) {
                // Hidden files (.gitkeep) are not inputs.
                if (e.is_regular_file() && e.path().filename().string()[0] != '.') {
                    files.push_back(e.path());
                }
            }
        } else if (std::filesystem::is_regular_file(arg, ec)) {
            files.push_back(arg);
        } else {
            std::fprintf(stderr, "replay: %s is neither a directory nor a file\n", argv[i]);
            return 2;
        }
        if (ec) {
            std::fprintf(stderr, "replay: %s: %s\n", argv[i], ec.message().c_str());
            return 2;
        }
        std::sort(files.begin(), files.end());
        for (const auto& f : files) {
            if (!replay(f)) return 1;
            ++inputs;
        }
    }
    if (inputs == 0) {
        std::fprintf(stderr, "replay: no inputs found\n");
        return 1;
    }
    std::printf("replay: %zu inputs, no invariant broken\n", inputs);
    return 0;
}
