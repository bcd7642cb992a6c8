// SPDX-License-Identifier: MIT
// A plain bitmap over 64-bit words (apps/graph internal).
#pragma once

#include <cstdint>
#include <vector>

namespace am::graph {

class bitmap {
  public:
    bitmap() = default;
    explicit bitmap(std::uint64_t bits) : _w((bits + 63) / 64, 0) {}
    [[nodiscard]] bool test(std::uint64_t i) const noexcept {
        return (_w[i >> 6] >> (i & 63)) & 1U;
    }
    void set(std::uint64_t i) noexcept { _w[i >> 6] |= std::uint64_t{1} << (i & 63); }
    /// Sets bit i; returns whether it was already set.
    bool test_and_set(std::uint64_t i) noexcept {
        const std::uint64_t m = std::uint64_t{1} << (i & 63);
        const bool was = (_w[i >> 6] & m) != 0;
        _w[i >> 6] |= m;
        return was;
    }
    void clear() noexcept {
        for (auto& w : _w) w = 0;
    }
    [[nodiscard]] std::uint64_t* words() noexcept { return _w.data(); }
    [[nodiscard]] const std::uint64_t* words() const noexcept { return _w.data(); }
    [[nodiscard]] std::size_t word_count() const noexcept { return _w.size(); }

  private:
    std::vector<std::uint64_t> _w;
};

}  // namespace am::graph
