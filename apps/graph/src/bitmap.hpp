// SPDX-License-Identifier: MIT
// A plain bitmap over 64-bit words (apps/graph internal).
#pragma once

#include <am/typed.hpp>

#include <atomic>
#include <cstdint>
#include <span>
#include <string_view>
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
    void reset(std::uint64_t i) noexcept { _w[i >> 6] &= ~(std::uint64_t{1} << (i & 63)); }
    /// Sets bit i; returns whether it was already set.
    bool test_and_set(std::uint64_t i) noexcept {
        const std::uint64_t m = std::uint64_t{1} << (i & 63);
        const bool was = (_w[i >> 6] & m) != 0;
        _w[i >> 6] |= m;
        return was;
    }
    /// Atomic forms, for bitmaps that several threads of a rank read and write at once (words
    /// written whole; SSSP's final vertices).
    [[nodiscard]] bool test_shared(std::uint64_t i) const noexcept {
        return (word(i).load(std::memory_order_relaxed) >> (i & 63)) & 1U;
    }
    /// Sets bit i where this thread is the only one to write its word.
    void set_shared(std::uint64_t i) noexcept {
        word(i).store(_w[i >> 6] | (std::uint64_t{1} << (i & 63)), std::memory_order_relaxed);
    }
    /// Clears bit i where this thread is the only one to write its word.
    void reset_shared(std::uint64_t i) noexcept {
        word(i).store(_w[i >> 6] & ~(std::uint64_t{1} << (i & 63)), std::memory_order_relaxed);
    }
    void store_word_shared(std::uint64_t index, std::uint64_t bits) noexcept {
        std::atomic_ref<std::uint64_t>(_w[index]).store(bits, std::memory_order_relaxed);
    }
    void clear() noexcept {
        for (auto& w : _w) w = 0;
    }
    [[nodiscard]] std::uint64_t* words() noexcept { return _w.data(); }
    [[nodiscard]] const std::uint64_t* words() const noexcept { return _w.data(); }
    [[nodiscard]] std::size_t word_count() const noexcept { return _w.size(); }

  private:
    [[nodiscard]] std::atomic_ref<std::uint64_t> word(std::uint64_t i) const noexcept {
        // atomic_ref<const T> is C++26: the const read goes through a non-const reference.
        return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(_w[i >> 6]));
    }
    std::vector<std::uint64_t> _w;
};

/// A (vertex, parent) message: BFS and exploration visits.
struct visit {
    std::uint32_t vertex;
    std::uint32_t parent;
};

/// Copies words of a global bitmap that this rank owns to every other rank (BFS frontiers,
/// SSSP final vertices). Words are owned by one rank each (the partition's chunk is a
/// multiple of 64), so a receiver simply overwrites the word (an atomic store: other handler
/// threads of the rank may be reading the bitmap). Creation is collective; `send` must be
/// called inside an epoch, and the words have arrived everywhere when it ends. The words go
/// through a coalescing layer: a BFS bottom-up level sends every non-empty word of the rank's
/// frontier (2048 at SCALE 18 on 2 ranks), which as one message each cost a core send and a
/// poll apiece (~840 instructions; now one message per 16 KiB buffer).
class word_broadcast {
  public:
    word_broadcast(context& ctx, bitmap& target, std::string_view name)
        : _ctx(&ctx),
          _target(&target),
          _msg(
              ctx,
              [this](int, std::span<const word> batch) {
                  for (const word& w : batch) _target->store_word_shared(w.index, w.bits);
              },
              name),
          _out(_msg) {}

    /// Sends this thread's buffered words now (they would otherwise go at the epoch's end).
    void flush() { _out.flush(); }

    /// Sends word `index` of the target, as it is now, to every other rank.
    void send(std::uint64_t index) {
        const word w{_target->words()[index], index};
        for (int r = 0; r < _ctx->size(); ++r) {
            if (r != _ctx->rank()) _out.send(w, r);
        }
    }

  private:
    struct word {
        std::uint64_t bits;
        std::uint64_t index;
    };
    context* _ctx;
    bitmap* _target;
    message_type<word> _msg;
    coalesced<word> _out;
};

}  // namespace am::graph
