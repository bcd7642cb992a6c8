// SPDX-License-Identifier: MIT
// The program's table of async functions. It is filled during static initialisation by every
// callable type the program passes to am::async (include/am/detail/async.hpp), the same in
// every process of one program and in every rank thread of one process. It is the one table
// shared by ranks that are threads: it describes the program (like its code), never a rank.
#include "dist_layer.hpp"

#include <mutex>
#include <unordered_map>

namespace am::detail {
namespace {

struct fn_table {
    std::mutex mutex;
    std::unordered_map<std::uint64_t, async_fn_info> by_key;
    std::unordered_map<std::uint64_t, std::string> names;  // the mangled name of each key
};

fn_table& table() {
    static fn_table t;  // constructed on first use, also during static initialisation
    return t;
}

// 64-bit FNV-1a.
std::uint64_t hash_name(const char* s) noexcept {
    std::uint64_t h = 0xcbf29ce484222325ull;
    for (; *s != '\0'; ++s) {
        h ^= static_cast<unsigned char>(*s);
        h *= 0x100000001b3ull;
    }
    return h;
}

}  // namespace

std::uint64_t async_add(const char* mangled, std::string_view shown, async_runner run) noexcept {
    const std::uint64_t key = hash_name(mangled);
    fn_table& t = table();
    const std::lock_guard<std::mutex> lock(t.mutex);
    try {
        auto [it, fresh] = t.by_key.try_emplace(key);
        if (fresh) {
            it->second.run = run;
            it->second.shown = std::string(shown);
            t.names.emplace(key, mangled);
        } else if (t.names[key] != mangled) {
            it->second.ambiguous = true;  // two names behind one hash
        }
    } catch (...) {
        // Out of memory during static initialisation: the key stays unknown, and a call of it
        // fails the job naming it.
    }
    return key;
}

const async_fn_info* async_find(std::uint64_t key) noexcept {
    fn_table& t = table();
    const std::lock_guard<std::mutex> lock(t.mutex);
    const auto it = t.by_key.find(key);
    return it == t.by_key.end() ? nullptr : &it->second;
}

}  // namespace am::detail
