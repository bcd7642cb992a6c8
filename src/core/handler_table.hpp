// SPDX-License-Identifier: MIT
// The per-rank handler table: fixed capacity so a progress thread may read entries while the
// rank registers new ones (an entry is published by the release-store of the count). What
// dispatch and send touch per message (function, object, signature, counters) is kept apart
// from what only registration, the handshake and statistics read.
#pragma once

#include "../util/assert.hpp"

#include <am/context.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>

namespace am::detail {

/// Handlers a program may register on one rank (docs/semantics.md "Limits").
inline constexpr std::uint32_t max_program_handlers = 1024;
/// Room for the library's own handlers (the layers register theirs before the program's).
inline constexpr std::uint32_t max_library_handlers = 64;
inline constexpr std::uint32_t max_handlers = max_program_handlers + max_library_handlers;
static_assert(max_handlers <= 0xffff, "the wire header carries a 16-bit handler index");

/// Wire signature of a handler: the header's {u8 kind, u8 nargs} read as one u16.
constexpr std::uint16_t signature_of(category kind, unsigned nargs) noexcept {
    return static_cast<std::uint16_t>(static_cast<unsigned>(kind) | (nargs << 8));
}

struct handler_hot {
    invoke_fn fn = nullptr;
    void* obj = nullptr;
};

struct handler_counters {
    std::atomic<std::uint64_t> sent{0}, sent_bytes{0}, received{0}, received_bytes{0};
};

struct handler_cold {
    category kind{};
    std::uint8_t nargs = 0;
    void (*destroy)(void*) = nullptr;
    std::string name;
    std::string id;            // mangled type of a callable (tells same-named lambdas apart)
    std::uint64_t digest = 0;  // of name, id, kind and nargs: compared across ranks
};

class handler_table {
  public:
    handler_table();
    ~handler_table();
    handler_table(const handler_table&) = delete;
    handler_table& operator=(const handler_table&) = delete;

    /// Appends an entry: one of the library's own while `library`, else one of the program's,
    /// which come after the library's `builtin` entries. Throws am::error when the program's
    /// entries would exceed `max_program_handlers` (the library's, `max_library_handlers`).
    std::uint32_t add(const handler_desc& d, int rank, bool library, std::uint32_t builtin);
    [[nodiscard]] std::uint32_t count() const noexcept {
        return _count.load(std::memory_order_acquire);
    }
    // Entries [0, count()) are readable: callers check an index against the count (or the
    // sealed count below it) before they look an entry up.
    [[nodiscard]] const handler_hot& hot(std::uint32_t i) const noexcept {
        AM_ASSERT(i < count(), "handler index out of range");
        return _hot[i];
    }
    [[nodiscard]] std::uint16_t signature(std::uint32_t i) const noexcept {
        AM_ASSERT(i < count(), "handler index out of range");
        return _sig[i];
    }
    /// Every entry's signature, indexed by handler (valid for [0, count())).
    [[nodiscard]] const std::uint16_t* signatures() const noexcept { return _sig.get(); }
    [[nodiscard]] handler_counters& counters(std::uint32_t i) const noexcept {
        AM_ASSERT(i < count(), "handler index out of range");
        return _ctr[i];
    }
    [[nodiscard]] const handler_cold& cold(std::uint32_t i) const noexcept {
        AM_ASSERT(i < count(), "handler index out of range");
        return _cold[i];
    }
    /// Digest of the first `n` entries, order-sensitive.
    [[nodiscard]] std::uint64_t digest(std::uint32_t n) const noexcept;

  private:
    std::unique_ptr<handler_hot[]> _hot;
    std::unique_ptr<std::uint16_t[]> _sig;
    std::unique_ptr<handler_counters[]> _ctr;
    std::unique_ptr<handler_cold[]> _cold;
    std::atomic<std::uint32_t> _count{0};
};

/// Strips the compiler's decoration from `type_name` / `value_name` strings; any other name
/// (a message type's, a C handler's) is kept as it is.
std::string readable_name(std::string_view pretty);
const char* category_name(category c) noexcept;
/// What a handshake report prints for an entry: name, category, arguments and, for a callable,
/// its demangled type (which tells apart callables whose names coincide).
std::string handler_label(const handler_cold& e);
/// `a` and `b` for printing side by side: whole when both fit in `width` characters, else each
/// cut to a window of `width` characters starting shortly before their first difference
/// ("..." marks a cut), so that the difference shows however long the common prefix is.
std::pair<std::string, std::string> around_difference(std::string_view a, std::string_view b,
                                                      std::size_t width);

}  // namespace am::detail
