// SPDX-License-Identifier: MIT
/// @file
/// tam_table's measuring instrument: a process run under valgrind's callgrind with its cache
/// simulator set to the J-Machine paper's caches (separate 8 KiB instruction and data L1
/// caches of 64-byte lines, 4-way set-associative or direct-mapped, LRU), counting only the
/// instructions executed inside one function (--collect-atstart=no --toggle-collect), and
/// the conversion of its counts into the paper's cycles.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace am::bench::tam_table {

/// The two L1 organisations of the paper's Table 2 (4-way) and its Fig. 5 (direct-mapped).
enum class cache_kind { four_way, direct };
/// "4way" or "direct" (the JSON lines' "cache" key).
[[nodiscard]] const char* to_string(cache_kind k) noexcept;

inline constexpr unsigned l1_bytes = 8192;
inline constexpr unsigned line_bytes = 64;
/// The paper's miss costs, in cycles (an instruction takes one cycle).
inline constexpr unsigned miss_costs[] = {12, 24, 48};

/// What callgrind counted between the toggles: instructions (Ir), data reads and writes
/// (Dr, Dw), and L1 misses on instruction fetch (I1mr), data read (D1mr) and data write
/// (D1mw; the simulator allocates on write).
struct counts {
    std::uint64_t ir = 0, dr = 0, dw = 0, i1mr = 0, d1mr = 0, d1mw = 0;
    /// All L1 misses, instruction and data: the only accesses that cost more than a cycle.
    [[nodiscard]] std::uint64_t l1_misses() const noexcept { return i1mr + d1mr + d1mw; }
    /// The paper's cycles: one per instruction plus `miss_cost` per L1 miss. Write-backs of
    /// dirty lines and L2 are not charged (the paper charges L1 misses only).
    [[nodiscard]] double cycles(unsigned miss_cost) const noexcept {
        return static_cast<double>(ir) + static_cast<double>(l1_misses()) * miss_cost;
    }
};

/// Reads the `events:` header and the `totals:` (or `summary:`) line of a callgrind output
/// file. Throws std::runtime_error naming the file when either is missing or a count the
/// cache simulator writes (Ir Dr Dw I1mr D1mr D1mw) is absent.
[[nodiscard]] counts parse_callgrind(const std::string& path);

/// `given` when it names an executable file; else the first `valgrind` on PATH; else "".
[[nodiscard]] std::string find_valgrind(const std::string& given);

/// The valgrind command line for one measured run (what `measure` executes; printed with
/// --verbose so the run can be repeated by hand).
[[nodiscard]] std::vector<std::string> callgrind_argv(const std::string& valgrind, cache_kind cache,
                                                      const std::string& toggle,
                                                      const std::string& out_file,
                                                      const std::vector<std::string>& program);

/// Runs `program` (argv[0] a path) under callgrind with `cache`, collecting only inside
/// functions matching `toggle`, its output in `dir`/`tag`.{out,log}, `env` ("NAME=value")
/// added to its environment; returns the counts. Throws std::runtime_error (naming the log)
/// when valgrind or the program fails.
[[nodiscard]] counts measure(const std::string& valgrind, cache_kind cache,
                             const std::string& toggle, const std::vector<std::string>& program,
                             const std::string& dir, const std::string& tag,
                             const std::vector<std::string>& env);

}  // namespace am::bench::tam_table
