// SPDX-License-Identifier: MIT
/// @file
/// Parallel readers for line-oriented files (text, CSV, ndjson) that feed the containers: every
/// member of a team reads its own byte range of the files, so a file is read once in total.
#pragma once

#include <am/coll.hpp>

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace am::dist {

/// Collective over `t`: calls `f(line)` on exactly one member for every line of `paths` (the
/// files taken as one sequence of bytes, split into equal byte ranges by team rank; a line
/// belongs to the member whose range holds its first byte). Lines are given without their
/// `\n` (and a `\r` before it); a file's last line need not end in `\n`; a line never spans
/// two files. Every member must pass the same paths, readable by all of them (a shared file
/// system). A path that cannot be opened or read throws am::error (errc::invalid_argument)
/// naming it and the rank. Returns the number of lines this member read. `f` may send
/// (containers' operations); the line's text is valid during the call.
std::uint64_t read_lines(const coll::team& t, const std::vector<std::string>& paths,
                         const std::function<void(std::string_view)>& f);

/// Splits a CSV line at `sep` (no quoting: fields may not contain `sep`); views into `line`.
[[nodiscard]] std::vector<std::string_view> split_fields(std::string_view line, char sep = ',');

}  // namespace am::dist
