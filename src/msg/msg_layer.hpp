// SPDX-License-Identifier: MIT
// Two-sided tagged messages on active messages (the 1992 paper's send/receive): a posted-receive
// list and an unexpected-message queue per rank, matched on (source, tag) in arrival order.
// Small messages travel eagerly (in the arguments of a short message up to 24 bytes, else in a
// medium one); large ones by the three-phase protocol: request to send, ready to receive (which
// names the posted buffer), data in medium chunks copied straight into it.
#pragma once

#include <am/context.hpp>
#include <am/core/layer.hpp>

#include <atomic>
#include <deque>
#include <list>
#include <mutex>
#include <string>
#include <vector>

namespace am::msg::detail {

/// One send or receive in progress. Owned by its `am::request` (or the blocking call's frame).
struct msg_op {
    bool is_send = false;
    std::atomic<bool> complete{false};  // release-stored once status (and data) are final
    errc failure = errc::ok;            // set before `complete`
    std::string what;
    message_status status;
    // receive
    const char* call = "am::context::irecv";  // named in a too_large failure
    int want_source = any_source;
    int want_tag = any_tag;
    std::byte* buffer = nullptr;
    std::size_t capacity = 0;
    std::size_t expected = 0;
    std::size_t received = 0;
    bool matched = false;  // a rendezvous is under way: the op can no longer be cancelled
    // send
    const std::byte* data = nullptr;
};

}  // namespace am::msg::detail

namespace am::detail {

class msg_layer final : public core::layer {
  public:
    static constexpr core::key key{"message (msg)"};

    msg_layer(context& ctx, const config& cfg);

    void send(int dest, int tag, std::span<const std::byte> data);
    message_status recv(int source, int tag, std::span<std::byte> buffer);
    request isend(int dest, int tag, std::span<const std::byte> data, const char* call);
    request irecv(int source, int tag, std::span<std::byte> buffer, const char* call);
    /// Removes a receive that no message has matched yet; false when it is already matched.
    bool cancel(msg_op* op);

    // Handler bodies.
    void on_eager(token& t, int tag, std::span<const std::byte> data);
    void on_rts(token& t, int tag, std::size_t bytes, std::uint64_t sender);
    void on_cts(token& t, std::uint64_t sender, std::uint64_t receiver);
    void on_data(token& t, std::uint64_t receiver, std::uint64_t offset,
                 std::span<const std::byte> data);

  private:
    struct unexpected_msg {
        int source;
        int tag;
        std::size_t bytes;
        std::uint64_t sender;  // rendezvous: the sender's op; 0 for an eager message
        std::vector<std::byte> data;
    };
    class guard;

    void check_send(int dest, int tag, const char* call) const;
    void check_recv(int source, int tag, std::span<std::byte> buffer, const char* call) const;
    void send_eager(int dest, int tag, std::span<const std::byte> data);
    /// Takes the first unexpected message matching `op` into it, or posts `op`. True when
    /// `op` got a message (complete, or a rendezvous under way).
    bool match_or_post(msg_op& op, const char* call);
    msg_op* take_posted(int source, int tag, std::size_t bytes);
    void start_rendezvous(msg_op& op, const unexpected_msg& m);
    void fail_too_large(msg_op& op, int source, int tag, std::size_t bytes, const char* call);
    void wait_complete(msg_op& op);
    [[nodiscard]] static bool matches(const msg_op& op, int source, int tag) noexcept {
        return (op.want_source == any_source || op.want_source == source) &&
               (op.want_tag == any_tag || op.want_tag == tag);
    }

    context& _ctx;
    int _rank;
    int _size;
    std::size_t _eager;
    std::size_t _chunk;
    std::mutex _mutex;  // taken only while a progress thread runs handlers
    std::list<msg_op*> _posted;
    std::deque<unexpected_msg> _unexpected;

    handle_t<void (*)(token&, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t)>
        _h_eager_short;
    handle_t<void (*)(token&, std::span<const std::byte>, std::uint32_t)> _h_eager;
    handle_t<void (*)(token&, std::uint32_t, std::uint64_t, std::uint64_t)> _h_rts;
    handle_t<void (*)(token&, std::uint64_t, std::uint64_t)> _h_cts;
    handle_t<void (*)(token&, std::span<const std::byte>, std::uint64_t, std::uint64_t)> _h_data;
};

}  // namespace am::detail
