// SPDX-License-Identifier: MIT
#include "handler_table.hpp"

#include <cxxabi.h>

#include <cstdlib>
#include <string>

namespace am::detail {
namespace {

std::uint64_t fnv1a(std::string_view s, std::uint64_t h = 1469598103934665603ull) {
    for (unsigned char c : s) h = (h ^ c) * 1099511628211ull;
    return h;
}

std::string table_full(bool library, std::uint32_t builtin) {
    if (library) return "more than " + std::to_string(max_library_handlers) + " library handlers";
    return "more than " + std::to_string(max_program_handlers) +
           " handlers registered by the program (the library's own " + std::to_string(builtin) +
           " are not counted)";
}

}  // namespace

handler_table::handler_table()
    : _hot(new handler_hot[max_handlers]),
      _sig(new std::uint16_t[max_handlers]()),
      _ctr(new handler_counters[max_handlers]),
      _cold(new handler_cold[max_handlers]) {}

handler_table::~handler_table() {
    const std::uint32_t n = count();
    for (std::uint32_t i = 0; i < n; ++i) {
        if (_cold[i].destroy) _cold[i].destroy(_hot[i].obj);
    }
}

std::uint32_t handler_table::add(const handler_desc& d, int rank, bool library,
                                 std::uint32_t builtin) {
    const std::uint32_t i = _count.load(std::memory_order_relaxed);
    AM_ASSERT(builtin <= max_library_handlers && (library || builtin <= i),
              "library handlers: more than their room, or after the program's");
    const std::uint32_t limit = library ? max_library_handlers : builtin + max_program_handlers;
    if (i >= limit) {
        if (d.destroy) d.destroy(d.obj);
        throw error(errc::too_large, "am::context::handler: rank " + std::to_string(rank) + ": " +
                                         table_full(library, builtin));
    }
    AM_ASSERT(i < max_handlers, "handler table overflow");
    handler_cold& e = _cold[i];
    e.kind = d.kind;
    e.nargs = d.nargs;
    e.destroy = d.destroy;
    e.name = readable_name(d.name);
    e.id = d.id != nullptr ? d.id : "";
    e.digest = fnv1a(e.name + '|' + e.id, fnv1a(std::to_string(e.nargs) + category_name(e.kind)));
    _hot[i] = handler_hot{d.fn, d.obj};
    _sig[i] = signature_of(d.kind, d.nargs);
    _count.store(i + 1, std::memory_order_release);
    return i;
}

std::uint64_t handler_table::digest(std::uint32_t n) const noexcept {
    AM_ASSERT(n <= count(), "digest of entries not registered");
    std::uint64_t h = 1469598103934665603ull;
    for (std::uint32_t i = 0; i < n; ++i) h = (h ^ _cold[i].digest) * 1099511628211ull;
    return h;
}

std::string readable_name(std::string_view pretty) {
    // GCC: "... type_name() [with T = X; std::string_view = ...]" or "... value_name() [with
    // auto V = on_ping; ...]"; Clang: "... type_name() [T = X]". Only those are parsed: a name
    // given as it is (a message type's, a C handler's) may contain "T = " too.
    std::string_view key = "T = ";
    std::size_t at = pretty.find("am::detail::type_name() [");
    if (at == std::string_view::npos) {
        key = "V = ";
        at = pretty.find("am::detail::value_name() [");
    }
    if (at != std::string_view::npos) at = pretty.find(key, at);
    if (at == std::string_view::npos) return std::string(pretty);
    std::string_view rest = pretty.substr(at + key.size());
    int depth = 0;
    std::size_t end = 0;
    for (; end < rest.size(); ++end) {
        const char c = rest[end];
        if (c == '(' || c == '<' || c == '[') ++depth;
        if (c == ')' || c == '>' || c == ']') {
            if (depth == 0) break;
            --depth;
        }
        if (c == ';' && depth == 0) break;
    }
    return std::string(rest.substr(0, end));
}

namespace {

// `typeid(x).name()` as C++ (GCC/Clang mangle it; the demangled form of a lambda ends with its
// number in its function, "{lambda(am::token&, int)#2}").
std::string demangled(const std::string& id) {
    int status = 0;
    char* text = abi::__cxa_demangle(id.c_str(), nullptr, nullptr, &status);
    if (status != 0 || text == nullptr) return id;
    std::string out(text);
    std::free(text);
    return out;
}

}  // namespace

std::string handler_label(const handler_cold& e) {
    std::string label =
        e.name + " (" + category_name(e.kind) + ", " + std::to_string(e.nargs) + " args)";
    if (!e.id.empty()) label += " [type " + demangled(e.id) + "]";
    return label;
}

std::pair<std::string, std::string> around_difference(std::string_view a, std::string_view b,
                                                      std::size_t width) {
    if (a.size() <= width && b.size() <= width) return {std::string(a), std::string(b)};
    std::size_t diff = 0;
    while (diff < a.size() && diff < b.size() && a[diff] == b[diff]) ++diff;
    // The start (which names the entry) stays; then the window, which shows some of the common
    // part before the difference.
    const std::size_t head = width / 4, lead = width / 4;
    const std::size_t from = diff > head + lead ? diff - lead : 0;
    const auto window = [&](std::string_view s) {
        std::string out;
        if (from != 0) out = std::string(s.substr(0, head)) + "...";
        const std::size_t room = from != 0 ? width - head : width;
        if (from < s.size()) out += s.substr(from, room);
        if (from + room < s.size()) out += "...";
        return out;
    };
    return {window(a), window(b)};
}

const char* category_name(category c) noexcept {
    switch (c) {
        case category::short_am:
            return "short";
        case category::medium:
            return "medium";
        case category::long_am:
            return "long";
    }
    return "?";
}

}  // namespace am::detail
