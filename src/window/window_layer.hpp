// SPDX-License-Identifier: MIT
// The window layer of one rank: its handlers (registered at construction, so they have the same
// index everywhere) and the table of the rank's windows by id (windows are created in the same
// order on every rank, so ids agree).
#pragma once

#include <am/config.hpp>
#include <am/context.hpp>
#include <am/core/layer.hpp>
#include <am/window.hpp>

#include "window_common.hpp"

#include <cstdint>
#include <mutex>
#include <span>
#include <string>
#include <vector>

namespace am::detail {

class window_state;

class window_layer final : public core::layer {
  public:
    static constexpr core::key key{"window AMs"};

    window_layer(context& ctx, const config& cfg);
    [[nodiscard]] std::string report() const override;

    /// Adds `w` under the next id (creation order) and returns the id.
    std::uint64_t add(window_state* w);
    void remove(std::uint64_t id);
    /// The window `id`, failing the job with a message naming `call` when there is none.
    window_state& find(std::uint64_t id, const char* call);

    // Sends (requests, so that they may be sent from any handler).
    void send_unit(int target, const unit_header& h, std::span<const std::byte> input);
    void send_output(int origin, std::uint64_t id, std::uint64_t token, std::uint64_t off,
                     std::span<const std::byte> data);
    void send_reserve(int target, std::uint64_t id, std::uint64_t token, std::uint64_t bytes);
    void send_grant(int origin, std::uint64_t id, std::uint64_t token, std::uint64_t offset,
                    std::uint64_t capacity, bool granted);
    void send_lock(int target, std::uint64_t id, bool exclusive);
    void send_lock_granted(int origin, std::uint64_t id);
    void send_unlock(int target, std::uint64_t id);
    void send_unlock_ack(int origin, std::uint64_t id);

    /// Totals of windows already freed, for the report.
    void retire(const window_stats& s);

    /// The kinds of the barriers in am::window::fence and am::window::free.
    [[nodiscard]] core::collective fence_kind() const noexcept { return _fence; }
    [[nodiscard]] core::collective free_kind() const noexcept { return _free; }

  private:
    context& _ctx;
    core::collective _fence{}, _free{};
    std::mutex _m;  // the table, when locking
    std::vector<window_state*> _windows;
    window_stats _retired;
    std::uint64_t _created = 0;
    using word = std::uint64_t;
    am::handler<category::medium, word, word, word, word, word, word, word, word, word, word, word,
                word, word>
        _h_unit;
    am::handler<category::medium, std::uint64_t, std::uint64_t, std::uint64_t> _h_output;
    am::handler<category::short_am, std::uint64_t, std::uint64_t, std::uint64_t> _h_reserve;
    am::handler<category::short_am, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                std::uint64_t>
        _h_grant;
    am::handler<category::short_am, std::uint64_t, std::uint64_t> _h_lock;
    am::handler<category::short_am, std::uint64_t> _h_lock_granted;
    am::handler<category::short_am, std::uint64_t> _h_unlock;
    am::handler<category::short_am, std::uint64_t> _h_unlock_ack;
};

}  // namespace am::detail
