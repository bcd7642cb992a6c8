// SPDX-License-Identifier: MIT
/// @file
/// Two-hop routed coalescing over a message type: `am::route_options`, `am::routed` and
/// `am::coalesce_routed` (part of <am/typed.hpp>; docs/scaling.md).
#pragma once

#include <am/detail/typed.hpp>
#include <am/error.hpp>
#include <am/typed/message_type.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace am {

/// Options of a routed coalescing layer.
struct route_options {
    /// Ranks per group. Rank r is member r % group of group r / group. 0 (default): the
    /// smallest g with g·g ≥ ranks, which makes the number of buffers per rank smallest. Groups
    /// come from rank numbers only: on the mpi transport, setting it to the ranks per node
    /// makes groups nodes when the launcher places ranks by node in order (not automatic).
    int group = 0;
    /// Bytes of each buffer (a value plus 8 bytes of routing per message), as
    /// `coalesce_options::bytes`: 0 takes 16 KiB, or `max_medium()` when that is smaller.
    std::size_t bytes = 0;
};

/// Coalescing with two-hop routing (YGM-style node-local / node-remote routing on groups of
/// ranks, `route_options::group`): a message to `dest` goes first to the member of the
/// sender's group with `dest`'s member index, which forwards it to `dest` (same member
/// index, `dest`'s group). Each rank then keeps buffers for `group` first hops and for one
/// second hop per group — about 2·√P buffers instead of the P of `coalesced`, created on
/// first use — at the price of a second hop for most messages. Messages to a rank of the
/// sender's own group, and messages whose forwarder is their destination, take one hop.
///
/// The handler of `type` runs on `dest` with the original sender as `source` and one value
/// per call (forwarded values arrive as single values, not as the sender's spans). A routed
/// message takes two nesting levels: with `epoch_options::depth` d ≥ 0 a message sent through
/// this layer by code at level l needs l + 1 ≤ d (a send that would break this throws
/// `errc::bad_context` at the sender); handlers it runs send at level l + 2. Epoch
/// statistics count each hop as one message. Not for `thread_multiple` or a progress thread
/// (the constructor throws `errc::bad_context`). Collective to create (it registers an internal
/// message type, with a barrier). Destroy it only when no epoch is open: a forwarded message may
/// still be on its way to this rank's handler until the epoch ends.
template <class T>
class routed final : public detail::typed_member {
  public:
    using value_type = T;

    routed(message_type<T>& type, route_options opt = {})
        : _type(&type),
          _layer(type.layer()),
          _hot(detail::typed_hot_of(_layer)),
          _ranks(detail::typed_size(_layer)),
          _me(detail::typed_rank(_layer)),
          _group(group_size(opt.group)),
          _hops(
              type.ctx(), [this](const item& h) { on_hop(h); }, "am::routed hop") {
        if (_hot->threaded) {
            detail::typed_fail(_layer, errc::bad_context, call,
                               "a routed layer is used by the rank's thread only (not with "
                               "thread_multiple or a progress thread)");
        }
        const std::size_t room = detail::typed_max_batch_bytes(_layer);
        if (opt.bytes == 0) opt.bytes = std::min(std::size_t{16} << 10, room);
        if (opt.bytes < sizeof(item) || opt.bytes > room) {
            detail::typed_fail(
                _layer, errc::too_large, call,
                "buffer of " + std::to_string(opt.bytes) + " bytes: it must hold one routed " +
                    "message of " + std::to_string(sizeof(item)) +
                    " bytes and at most max_medium() = " + std::to_string(room) + " bytes");
        }
        _cap = opt.bytes / sizeof(item);
        // First hops, by the destination's member index: the member of this rank's group, or
        // of the group before when this (last, partial) group has no such member.
        const int g = _me / _group, groups = (_ranks + _group - 1) / _group;
        for (int m = 0; m < _group && m < _ranks; ++m) {
            const int h = g * _group + m;
            _first.push_back(slot{h < _ranks ? h : h - _group, detail::unset_tag, {}});
        }
        // Second hops, by the destination's group: the member with this rank's index there
        // (absent in a partial last group: no first hop routes through this rank to it then).
        for (int q = 0; q < groups; ++q) {
            _second.push_back(slot{q * _group + _me % _group, detail::unset_tag, {}});
        }
        order = 1;
        detail::typed_attach(_layer, this);
    }
    /// Sends what it still holds (an epoch must be open then), then leaves the epoch's list.
    ~routed() {
        detail::typed_detach(_layer, this);
        detail::flush_on_destruction(*this, _layer, "am::routed");
    }
    routed(const routed&) = delete;
    routed& operator=(const routed&) = delete;

    /// Appends `value` to the buffer of `dest`'s first hop; sends the buffer when it is full.
    /// Throws `am::error` for a bad rank (errc::bad_rank), outside an epoch or beyond its
    /// depth (errc::bad_context); nothing is appended then.
    void send(const T& value, int dest) {
        if (static_cast<unsigned>(dest) >= static_cast<unsigned>(_ranks)) [[unlikely]]
            bad_rank(dest);
        append(_first[static_cast<std::size_t>(dest % _group)], item{value, _me, dest}, _hot->tag,
               true);
    }
    /// Sends every non-empty buffer (the epoch's end sends them, and what they forward, too).
    void flush() { (void)flush_held(); }
    /// Messages per buffer.
    [[nodiscard]] std::size_t capacity() const noexcept { return _cap; }
    /// Ranks per group.
    [[nodiscard]] int group() const noexcept { return _group; }
    /// Buffers of this rank: first hops (members of its group) plus second hops (groups).
    [[nodiscard]] std::size_t buffers() const noexcept { return _first.size() + _second.size(); }
    /// Bytes of buffer storage allocated on this rank (buffers are allocated on first use).
    [[nodiscard]] std::size_t buffer_bytes() const noexcept {
        std::size_t n = (_first.capacity() + _second.capacity()) * sizeof(slot);
        for (const slot& s : _first) n += s.items.capacity() * sizeof(item);
        for (const slot& s : _second) n += s.items.capacity() * sizeof(item);
        return n;
    }
    [[nodiscard]] message_type<T>& type() const noexcept { return *_type; }

    std::size_t flush_held() override {
        std::size_t n = 0;
        for (auto* set : {&_first, &_second}) {
            for (slot& s : *set) {
                if (s.items.empty()) continue;
                n += s.items.size();
                send_slot(s);
            }
        }
        return n;
    }
    [[nodiscard]] bool holds() const override {
        const auto any = [](const std::vector<slot>& v) {
            return std::any_of(v.begin(), v.end(), [](const slot& s) { return !s.items.empty(); });
        };
        return any(_first) || any(_second);
    }

  private:
    static constexpr const char* call = "am::routed::send";
    /// What travels: the value, its original sender and its destination.
    struct item {
        T value;
        std::int32_t source;
        std::int32_t dest;
    };
    struct slot {
        int rank;  // where this buffer goes
        std::uint64_t tag = detail::unset_tag;
        std::vector<item> items;
    };

    int group_size(int g) const {
        if (g < 0) {
            detail::typed_fail(_layer, errc::invalid_argument, "am::routed",
                               "group of " + std::to_string(g) + " ranks");
        }
        if (g == 0) {
            while (g * g < _ranks) ++g;
        }
        return std::clamp(g, 1, _ranks);
    }
    [[noreturn, gnu::cold]] void bad_rank(int dest) const {
        detail::typed_fail(_layer, errc::bad_rank, call,
                           "destination " + std::to_string(dest) + " out of range [0, " +
                               std::to_string(_ranks) + ")");
    }
    // A hop arrived: the value is for this rank (its handler runs here, in this batch's
    // handler frame, so the sends it makes nest one level deeper), or it is forwarded.
    void on_hop(const item& h) {
        if (h.dest == _me) {
            detail::typed_run_inline(_layer, _type->id(), h.source,
                                     std::span<const std::byte>(
                                         reinterpret_cast<const std::byte*>(&h.value), sizeof(T)));
            return;
        }
        append(_second[static_cast<std::size_t>(h.dest / _group)], h, _hot->tag, false);
    }
    // `first`: a first hop, whose forward nests one level deeper.
    void append(slot& s, const item& v, std::uint64_t tag, bool first) {
        if (s.tag != tag || s.items.size() == _cap) [[unlikely]]
            make_room(s, tag, first);
        if (s.items.capacity() == 0) s.items.reserve(_cap);
        s.items.push_back(v);
    }
    // A send polls, and handlers may fill the buffer again meanwhile: repeat until there is
    // room for a value of this tag. A new tag is checked, for a first hop also its forward's.
    [[gnu::noinline]] void make_room(slot& s, std::uint64_t tag, bool first) {
        if (s.tag != tag) {
            detail::typed_check_tag(_layer, tag, call);
            if (first) detail::typed_check_tag(_layer, tag + 1, call);
        }
        while (!s.items.empty() && (s.tag != tag || s.items.size() == _cap)) send_slot(s);
        s.tag = tag;
    }
    // Sends the buffer. The send may poll and so run handlers that append to this very slot:
    // they fill a new vector meanwhile; the sent one is kept for reuse when they did not.
    void send_slot(slot& s) {
        std::vector<item> out = std::move(s.items);
        s.items = {};
        detail::typed_send(_layer, _hops.id(), s.rank, s.tag, out.data(), out.size(), call);
        if (s.items.empty()) {
            out.clear();
            s.items = std::move(out);
        }
    }

    message_type<T>* _type;
    detail::typed_layer* _layer;
    detail::typed_hot* _hot;
    int _ranks;
    int _me;
    int _group;
    std::size_t _cap = 0;
    std::vector<slot> _first, _second;
    message_type<item> _hops;
};

/// A routed coalescing layer over `type` (see `routed`).
template <class T>
[[nodiscard]] routed<T> coalesce_routed(message_type<T>& type, route_options opt = {}) {
    return routed<T>(type, opt);
}

}  // namespace am
