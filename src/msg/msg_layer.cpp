// SPDX-License-Identifier: MIT
#include "msg_layer.hpp"

#include "../util/error.hpp"

#include <algorithm>
#include <cstring>
#include <memory>

// The handlers, named for statistics ("am::msg::eager").
namespace am::msg {
namespace {

am::detail::msg_layer& layer(token& t) {
    return core::get<am::detail::msg_layer>(t.ctx(), am::detail::msg_layer::key, "am::msg");
}

}  // namespace

void eager_short(token& t, std::uint64_t tagword, std::uint64_t w0, std::uint64_t w1,
                 std::uint64_t w2) {
    const std::uint64_t words[3] = {w0, w1, w2};
    std::byte bytes[sizeof words];
    std::memcpy(bytes, words, sizeof words);
    const std::size_t len = std::min<std::size_t>(tagword >> 32, sizeof bytes);
    layer(t).on_eager(t, static_cast<int>(tagword & 0x7fffffffu), std::span(bytes, len));
}
void eager(token& t, std::span<const std::byte> data, std::uint32_t tag) {
    layer(t).on_eager(t, static_cast<int>(tag), data);
}
void request_to_send(token& t, std::uint32_t tag, std::uint64_t bytes, std::uint64_t sender) {
    layer(t).on_rts(t, static_cast<int>(tag), bytes, sender);
}
void ready_to_receive(token& t, std::uint64_t sender, std::uint64_t receiver) {
    layer(t).on_cts(t, sender, receiver);
}
void data(token& t, std::span<const std::byte> payload, std::uint64_t receiver,
          std::uint64_t offset) {
    layer(t).on_data(t, receiver, offset, payload);
}

}  // namespace am::msg

namespace am::detail {
namespace {

constexpr std::size_t short_eager_bytes = 24;  // three argument words

using util::fail;

std::uint64_t to_wire(const void* p) noexcept {
    return static_cast<std::uint64_t>(reinterpret_cast<std::uintptr_t>(p));
}

msg_op* op_from_wire(std::uint64_t v) noexcept {
    return reinterpret_cast<msg_op*>(static_cast<std::uintptr_t>(v));
}

void finish(msg_op& op, int source, int tag, std::size_t bytes) noexcept {
    op.status = message_status{source, tag, bytes};
    op.complete.store(true, std::memory_order_release);
}

}  // namespace

/// Locks the matching state only when a progress thread may run handlers concurrently.
class msg_layer::guard {
  public:
    explicit guard(msg_layer& l) : _m(core::locking(l._ctx) ? &l._mutex : nullptr) {
        if (_m != nullptr) _m->lock();
    }
    ~guard() {
        if (_m != nullptr) _m->unlock();
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;
    void unlock() {
        if (_m != nullptr) _m->unlock();
        _m = nullptr;
    }

  private:
    std::mutex* _m;
};

msg_layer::msg_layer(context& ctx, const config& cfg)
    : _ctx(ctx),
      _rank(ctx.rank()),
      _size(ctx.size()),
      _eager(std::min(cfg.eager_bytes, ctx.max_medium())),
      _chunk(ctx.max_medium()),
      _h_eager_short(ctx.handler<&msg::eager_short>()),
      _h_eager(ctx.handler<&msg::eager>()),
      _h_rts(ctx.handler<&msg::request_to_send>()),
      _h_cts(ctx.handler<&msg::ready_to_receive>()),
      _h_data(ctx.handler<&msg::data>()) {}

// ----------------------------------------------------------------------------------- checks

void msg_layer::check_send(int dest, int tag, const char* call) const {
    if (dest < 0 || dest >= _size) {
        fail(errc::bad_rank, call, _rank,
             "destination " + std::to_string(dest) + " out of range [0, " + std::to_string(_size) +
                 ")");
    }
    if (tag < 0) {
        fail(errc::invalid_argument, call, _rank,
             "tag " + std::to_string(tag) + " is negative (tags are >= 0)");
    }
}

void msg_layer::check_recv(int source, int tag, std::span<std::byte> buffer,
                           const char* call) const {
    if (source != any_source && (source < 0 || source >= _size)) {
        fail(errc::bad_rank, call, _rank,
             "source " + std::to_string(source) + " out of range [0, " + std::to_string(_size) +
                 ") and not am::any_source");
    }
    if (tag < 0 && tag != any_tag) {
        fail(errc::invalid_argument, call, _rank,
             "tag " + std::to_string(tag) + " is negative and not am::any_tag");
    }
    if (buffer.data() == nullptr && !buffer.empty()) {
        fail(errc::invalid_argument, call, _rank, "null receive buffer");
    }
}

void msg_layer::fail_too_large(msg_op& op, int source, int tag, std::size_t bytes,
                               const char* call) {
    op.failure = errc::too_large;
    op.what = util::where(call, _rank) + "the message from rank " + std::to_string(source) +
              " with tag " + std::to_string(tag) + " has " + std::to_string(bytes) +
              " bytes, more than the receive buffer of " + std::to_string(op.capacity) +
              " bytes; it stays queued for a larger receive";
    op.complete.store(true, std::memory_order_release);
}

// ----------------------------------------------------------------------------------- sending

void msg_layer::send_eager(int dest, int tag, std::span<const std::byte> data) {
    if (data.size() <= short_eager_bytes) {
        std::uint64_t words[3] = {0, 0, 0};
        if (!data.empty()) std::memcpy(words, data.data(), data.size());
        const std::uint64_t tagword = static_cast<std::uint64_t>(tag) | (data.size() << 32);
        _ctx.request(dest, _h_eager_short, tagword, words[0], words[1], words[2]);
    } else {
        _ctx.request(dest, _h_eager, data, static_cast<std::uint32_t>(tag));
    }
}

void msg_layer::send(int dest, int tag, std::span<const std::byte> data) {
    const char* call = "am::context::send";
    check_send(dest, tag, call);
    core::check_wait(_ctx, call);
    if (data.size() <= _eager) {
        send_eager(dest, tag, data);
        return;
    }
    msg_op op;
    {
        guard g(*this);  // the handlers that read the op take the same lock (progress thread)
        op.is_send = true;
        op.data = data.data();
        op.status = message_status{dest, tag, data.size()};
    }
    _ctx.request(dest, _h_rts, static_cast<std::uint32_t>(tag), std::uint64_t{data.size()},
                 to_wire(&op));
    wait_complete(op);
}

request msg_layer::isend(int dest, int tag, std::span<const std::byte> data, const char* call) {
    check_send(dest, tag, call);
    if (data.size() <= _eager) {
        send_eager(dest, tag, data);
        return request(_ctx, message_status{dest, tag, data.size()});
    }
    auto* op = new msg_op;
    {
        guard g(*this);  // the handlers that read the op take the same lock (progress thread)
        op->is_send = true;
        op->data = data.data();
        op->status = message_status{dest, tag, data.size()};
    }
    request r(_ctx, op);
    _ctx.request(dest, _h_rts, static_cast<std::uint32_t>(tag), std::uint64_t{data.size()},
                 to_wire(op));
    return r;
}

// --------------------------------------------------------------------------------- receiving

bool msg_layer::match_or_post(msg_op& op, const char* call) {
    guard g(*this);
    const auto it = std::find_if(_unexpected.begin(), _unexpected.end(),
                                 [&](const auto& m) { return matches(op, m.source, m.tag); });
    if (it == _unexpected.end()) {
        _posted.push_back(&op);
        return false;
    }
    if (it->bytes > op.capacity) {
        fail_too_large(op, it->source, it->tag, it->bytes, call);
        return true;
    }
    unexpected_msg m = std::move(*it);
    _unexpected.erase(it);
    g.unlock();
    if (m.sender == 0) {
        if (m.bytes != 0) std::memcpy(op.buffer, m.data.data(), m.bytes);
        finish(op, m.source, m.tag, m.bytes);
    } else {
        start_rendezvous(op, m);
    }
    return true;
}

// The receive is ready: tell the sender where the data goes. The op is fully set up before
// the message leaves, as the data may arrive during the send (which polls).
void msg_layer::start_rendezvous(msg_op& op, const unexpected_msg& m) {
    {
        guard g(*this);
        op.matched = true;
        op.expected = m.bytes;
        op.status = message_status{m.source, m.tag, m.bytes};
    }
    _ctx.request(m.source, _h_cts, m.sender, to_wire(&op));
}

void msg_layer::wait_complete(msg_op& op) {
    _ctx.wait([&] { return op.complete.load(std::memory_order_acquire); });
}

message_status msg_layer::recv(int source, int tag, std::span<std::byte> buffer) {
    const char* call = "am::context::recv";
    check_recv(source, tag, buffer, call);
    core::check_wait(_ctx, call);
    msg_op op;
    op.call = call;
    op.want_source = source;
    op.want_tag = tag;
    op.buffer = buffer.data();
    op.capacity = buffer.size();
    match_or_post(op, call);
    try {
        wait_complete(op);
    } catch (...) {
        cancel(&op);  // the job is going down: no handler may find this frame's op
        throw;
    }
    if (op.failure != errc::ok) throw error(op.failure, op.what);
    return op.status;
}

request msg_layer::irecv(int source, int tag, std::span<std::byte> buffer, const char* call) {
    check_recv(source, tag, buffer, call);
    auto* op = new msg_op;
    op->call = call;
    op->want_source = source;
    op->want_tag = tag;
    op->buffer = buffer.data();
    op->capacity = buffer.size();
    request r(_ctx, op);
    match_or_post(*op, call);
    return r;
}

bool msg_layer::cancel(msg_op* op) {
    guard g(*this);
    const auto it = std::find(_posted.begin(), _posted.end(), op);
    if (it == _posted.end()) return false;
    _posted.erase(it);
    return true;
}

// ----------------------------------------------------------------------------------- handlers

// The first posted receive that matches and has room takes the message. Matching receives
// before it that are too small fail (too_large) and leave the list; the message then goes to a
// later one, or waits in the unexpected queue for a larger receive.
msg_op* msg_layer::take_posted(int source, int tag, std::size_t bytes) {
    for (auto it = _posted.begin(); it != _posted.end();) {
        msg_op* op = *it;
        if (!matches(*op, source, tag)) {
            ++it;
            continue;
        }
        it = _posted.erase(it);
        if (op->capacity >= bytes) return op;
        fail_too_large(*op, source, tag, bytes, op->call);
    }
    return nullptr;
}

void msg_layer::on_eager(token& t, int tag, std::span<const std::byte> data) {
    const int source = t.source();
    guard g(*this);
    msg_op* op = take_posted(source, tag, data.size());
    if (op == nullptr) {
        _unexpected.push_back(unexpected_msg{source, tag, data.size(), 0,
                                             std::vector<std::byte>(data.begin(), data.end())});
        return;
    }
    if (!data.empty()) std::memcpy(op->buffer, data.data(), data.size());
    finish(*op, source, tag, data.size());
}

void msg_layer::on_rts(token& t, int tag, std::size_t bytes, std::uint64_t sender) {
    const int source = t.source();
    guard g(*this);
    const unexpected_msg m{source, tag, bytes, sender, {}};
    msg_op* op = take_posted(source, tag, bytes);
    if (op == nullptr) {
        _unexpected.push_back(m);
        return;
    }
    g.unlock();
    start_rendezvous(*op, m);
}

// The receiver is ready: stream the data in medium chunks. Sent from a handler, so chunks that
// find no room are queued (copied) and leave with later progress; the send is then complete.
void msg_layer::on_cts(token& t, std::uint64_t sender, std::uint64_t receiver) {
    msg_op* op = op_from_wire(sender);
    std::size_t bytes = 0;
    {
        // With a progress thread this may run on another thread than the one that started
        // the send; the lock it set the op (and wrote the data) under orders those writes
        // before these reads. (The peer's answer orders them too, but through another process.)
        guard g(*this);
        bytes = op->status.bytes;
    }
    for (std::size_t off = 0; off < bytes; off += _chunk) {
        const std::size_t len = std::min(_chunk, bytes - off);
        _ctx.request(t.source(), _h_data, std::span(op->data + off, len), receiver,
                     std::uint64_t{off});
    }
    op->complete.store(true, std::memory_order_release);
}

void msg_layer::on_data(token& t, std::uint64_t receiver, std::uint64_t offset,
                        std::span<const std::byte> data) {
    msg_op* op = op_from_wire(receiver);
    guard g(*this);
    if (offset > op->expected || data.size() > op->expected - offset) {
        fail(errc::invalid_argument, "am::msg", _rank,
             "data from rank " + std::to_string(t.source()) + " overruns the receive of " +
                 std::to_string(op->expected) + " bytes");
    }
    if (!data.empty()) std::memcpy(op->buffer + offset, data.data(), data.size());
    op->received += data.size();
    if (op->received == op->expected) op->complete.store(true, std::memory_order_release);
}

// ------------------------------------------------------------- entry points of the public API

namespace {

msg_layer& msg_of(const context& c, const char* call) {
    return core::get<msg_layer>(c, msg_layer::key, call);
}

}  // namespace

}  // namespace am::detail

// The layer's entry points, declared in <am/detail/msg.hpp>.
namespace am::msg::detail {

void msg_send(context& c, int dest, int tag, std::span<const std::byte> data) {
    am::detail::msg_of(c, "am::context::send").send(dest, tag, data);
}
message_status msg_recv(context& c, int source, int tag, std::span<std::byte> buffer) {
    return am::detail::msg_of(c, "am::context::recv").recv(source, tag, buffer);
}
request msg_isend(context& c, int dest, int tag, std::span<const std::byte> data,
                  const char* call) {
    return am::detail::msg_of(c, call).isend(dest, tag, data, call);
}
request msg_irecv(context& c, int source, int tag, std::span<std::byte> buffer, const char* call) {
    return am::detail::msg_of(c, call).irecv(source, tag, buffer, call);
}

}  // namespace am::msg::detail

// ------------------------------------------------------------------------------- am::request

namespace am {

request& request::operator=(request&& o) noexcept {
    if (this != &o) {
        release();
        _ctx = o._ctx;
        _op = o._op;
        _status = o._status;
        o._op = nullptr;
    }
    return *this;
}

request::~request() {
    release();
}

// An abandoned operation: a receive nobody matched yet is withdrawn; anything else is waited
// for, so no buffer is written after its handle is gone.
void request::release() noexcept {
    if (_op == nullptr) return;
    detail::msg_op* op = std::exchange(_op, nullptr);
    auto* layer = static_cast<detail::msg_layer*>(core::find(*_ctx, detail::msg_layer::key));
    if (!op->is_send && !op->complete.load(std::memory_order_acquire) && layer != nullptr &&
        layer->cancel(op)) {
        delete op;
        return;
    }
    try {
        _ctx->wait([&] { return op->complete.load(std::memory_order_acquire); });
    } catch (...) {
        return;  // the job is going down; handlers may still hold the op: leave it
    }
    delete op;
}

bool request::test() {
    if (_op == nullptr) return true;
    _ctx->poll();
    if (!_op->complete.load(std::memory_order_acquire)) return false;
    detail::msg_op* op = std::exchange(_op, nullptr);
    const std::unique_ptr<detail::msg_op> owned(op);
    if (op->failure != errc::ok) throw error(op->failure, op->what);
    _status = op->status;
    return true;
}

message_status request::wait() {
    if (_op == nullptr) return _status;
    core::check_wait(*_ctx, "am::request::wait");
    _ctx->wait([&] { return _op->complete.load(std::memory_order_acquire); });
    test();
    return _status;
}

}  // namespace am
