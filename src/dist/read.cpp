// SPDX-License-Identifier: MIT
// am::dist::read_lines: each member reads its byte range of the files' concatenation.
#include <am/dist/read.hpp>
#include <am/error.hpp>

#include <sys/stat.h>
#include <algorithm>
#include <cstdio>
#include <string>

namespace am::dist {
namespace {

[[noreturn]] void unreadable(const coll::team& t, const std::string& path, const char* what) {
    throw error(errc::invalid_argument, "am::dist::read_lines on rank " +
                                            std::to_string(t.ctx().rank()) + ": " + what + " \"" +
                                            path + "\"");
}

std::uint64_t size_of(const coll::team& t, const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0 || !S_ISREG(st.st_mode)) {
        unreadable(t, path, "cannot read the file");
    }
    return static_cast<std::uint64_t>(st.st_size);
}

/// A file opened for reading, closed on scope exit.
class file {
  public:
    file(const coll::team& t, const std::string& path) : _f(std::fopen(path.c_str(), "rb")) {
        if (_f == nullptr) unreadable(t, path, "cannot open");
    }
    ~file() { std::fclose(_f); }
    file(const file&) = delete;
    file& operator=(const file&) = delete;
    std::FILE* get() const noexcept { return _f; }

  private:
    std::FILE* _f;
};

/// Reads the lines of one file whose first byte lies in [lo, hi) (offsets in the file).
std::uint64_t read_range(const coll::team& t, const std::string& path, std::uint64_t lo,
                         std::uint64_t hi, const std::function<void(std::string_view)>& f) {
    file in(t, path);
    std::uint64_t at = lo;
    if (lo > 0) {
        // A line starts at lo only when the byte before it ends a line.
        if (::fseeko(in.get(), static_cast<off_t>(lo - 1), SEEK_SET) != 0) {
            unreadable(t, path, "cannot seek in");
        }
        at = lo - 1;
        for (int c = 0; (c = getc_unlocked(in.get())) != EOF;) {
            ++at;
            if (c == '\n') break;
        }
    }
    std::uint64_t lines = 0;
    std::string line;
    while (at < hi) {
        line.clear();
        int c = 0;
        bool any = false;
        while ((c = getc_unlocked(in.get())) != EOF) {
            any = true;
            ++at;
            if (c == '\n') break;
            line.push_back(static_cast<char>(c));
        }
        if (!any) break;
        if (!line.empty() && line.back() == '\r') line.pop_back();
        f(line);
        ++lines;
        if (c == EOF) break;
    }
    if (std::ferror(in.get()) != 0) unreadable(t, path, "error reading");
    return lines;
}

}  // namespace

std::uint64_t read_lines(const coll::team& t, const std::vector<std::string>& paths,
                         const std::function<void(std::string_view)>& f) {
    std::vector<std::uint64_t> sizes;
    std::uint64_t total = 0;
    for (const std::string& p : paths) {
        sizes.push_back(size_of(t, p));
        total += sizes.back();
    }
    const auto members = static_cast<std::uint64_t>(t.size());
    const auto r = static_cast<std::uint64_t>(t.rank());
    // [lo, hi) of the concatenation, in equal parts (the first total % members one byte longer).
    const std::uint64_t part = total / members, extra = total % members;
    const std::uint64_t lo = r * part + std::min(r, extra);
    const std::uint64_t hi = lo + part + (r < extra ? 1 : 0);
    std::uint64_t lines = 0, base = 0;
    for (std::size_t i = 0; i < paths.size(); ++i) {
        const std::uint64_t b = std::max(lo, base), e = std::min(hi, base + sizes[i]);
        if (b < e) lines += read_range(t, paths[i], b - base, e - base, f);
        base += sizes[i];
    }
    coll::barrier(t);  // every member checked its files before any returns
    return lines;
}

std::vector<std::string_view> split_fields(std::string_view line, char sep) {
    std::vector<std::string_view> out;
    std::size_t at = 0;
    for (;;) {
        const std::size_t end = line.find(sep, at);
        out.push_back(line.substr(at, end == std::string_view::npos ? end : end - at));
        if (end == std::string_view::npos) return out;
        at = end + 1;
    }
}

}  // namespace am::dist
