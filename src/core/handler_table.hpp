// SPDX-License-Identifier: MIT
// The per-rank handler table: fixed capacity so a progress thread may read entries while the
// rank registers new ones (an entry is published by the release-store of the count).
#pragma once

#include <am/context.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

namespace am::detail {

inline constexpr std::uint32_t max_handlers = 1024;

struct handler_entry {
    category kind{};
    std::uint8_t nargs = 0;
    invoke_fn fn = nullptr;
    void* obj = nullptr;
    void (*destroy)(void*) = nullptr;
    std::string name;
    std::uint64_t digest = 0;  // of name, kind and nargs: compared across ranks
    std::atomic<std::uint64_t> sent{0}, sent_bytes{0}, received{0}, received_bytes{0};
};

class handler_table {
public:
    handler_table() : _entries(new handler_entry[max_handlers]) {}
    ~handler_table();
    handler_table(const handler_table&) = delete;
    handler_table& operator=(const handler_table&) = delete;

    /// Appends an entry; throws am::error when the table is full.
    std::uint32_t add(const handler_desc& d, int rank);
    [[nodiscard]] std::uint32_t count() const noexcept {
        return _count.load(std::memory_order_acquire);
    }
    [[nodiscard]] handler_entry& operator[](std::uint32_t i) const noexcept { return _entries[i]; }
    /// Digest of the first `n` entries, order-sensitive.
    [[nodiscard]] std::uint64_t digest(std::uint32_t n) const noexcept;

private:
    std::unique_ptr<handler_entry[]> _entries;
    std::atomic<std::uint32_t> _count{0};
};

/// Strips the compiler's decoration from `type_name` / `value_name` strings.
std::string readable_name(std::string_view pretty);
const char* category_name(category c) noexcept;

}  // namespace am::detail
