// SPDX-License-Identifier: MIT
// Test support for the trace tests: the JSON reader (json_reader.hpp) and the path of the
// trace file of the running test case.
#pragma once

#include "support/spmd.hpp"
#include "trace/json_reader.hpp"

#include <algorithm>
#include <filesystem>
#include <string>

namespace am_trace_test {

namespace json = am_test::json;

/// <temporary directory>/<prefix><test name>.json, the test's parameter in the name ('/' made
/// '_'): the same on every rank of the job (all its processes run this test case).
inline std::string test_trace_path(const std::string& prefix) {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    std::string name = prefix + info->name() + ".json";
    std::replace(name.begin(), name.end(), '/', '_');
    return (std::filesystem::temp_directory_path() / name).string();
}

}  // namespace am_trace_test
