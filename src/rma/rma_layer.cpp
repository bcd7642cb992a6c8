// SPDX-License-Identifier: MIT
// The Split-C layer: set-up, the counter table, allocation, validation, put/get with their
// direct (mapped segment) path, and the entry points of the public API. The active-message
// path is in rma_am.cpp.
#include "rma_common.hpp"

#include "../util/assert.hpp"
#include "../util/error.hpp"

#include <algorithm>
#include <cstring>
#include <string>

// The handlers, named for statistics ("am::rma::put_long"). Each forwards to the layer of the
// rank that runs it.
namespace am::rma {
namespace {

detail::rma_layer& layer(token& t) {
    return core::get<detail::rma_layer>(t.ctx(), detail::rma_layer::key, "am::rma");
}

template <class T>
T* from_wire(std::uint64_t v) noexcept {
    return reinterpret_cast<T*>(static_cast<std::uintptr_t>(v));
}

}  // namespace

void flag(token& t, std::uint32_t id) {
    layer(t).on_flag(t, id);
}
void put_long(token& t, std::span<std::byte> /*data*/, std::uint64_t flagword, std::uint64_t done) {
    layer(t).on_put_done(t, flagword, done);
}
void put_packed(token& t, std::span<const std::byte> payload, std::uint64_t flagword,
                std::uint64_t done) {
    layer(t).on_put_packed(t, payload, flagword, done);
}
void put_ack(token& /*t*/, std::uint64_t done) {
    from_wire<counter>(done)->add();
}
void get(token& t, std::uint64_t offset, std::uint64_t len, std::uint64_t dst, std::uint64_t flag) {
    layer(t).on_get(t, offset, len, dst, flag);
}
void get_data(token& /*t*/, std::span<const std::byte> data, std::uint64_t dst,
              std::uint64_t flag) {
    if (!data.empty()) std::memcpy(from_wire<std::byte>(dst), data.data(), data.size());
    from_wire<counter>(flag)->add();
}
void get_long(token& t, std::uint64_t offset, std::uint64_t len, std::uint64_t dst_offset,
              std::uint64_t flag) {
    layer(t).on_get_long(t, offset, len, dst_offset, flag);
}
void get_long_data(token& /*t*/, std::span<std::byte> /*data*/, std::uint64_t flag) {
    from_wire<counter>(flag)->add();
}
void getv(token& t, std::span<const std::byte> desc, std::uint64_t record, std::uint64_t first) {
    layer(t).on_getv(t, desc, record, first);
}
void getv_data(token& t, std::span<const std::byte> data, std::uint64_t record, std::uint64_t first,
               std::uint64_t count) {
    layer(t).on_getv_data(t, data, record, first, count);
}

void atomic(token& t, std::uint64_t offset, std::uint64_t operand, std::uint64_t compare,
            std::uint64_t code, std::uint64_t record) {
    layer(t).on_atomic(t, offset, operand, compare, code, record);
}
void atomic_reply(token& t, std::uint64_t record, std::uint64_t old) {
    layer(t).on_atomic_reply(t, record, old);
}

}  // namespace am::rma

namespace am::detail {
using namespace rma_internal;

// ----------------------------------------------------------------------------- counter table

counter_table::counter_table() : _slots(new std::atomic<counter*>[capacity]) {
    for (std::uint32_t i = 0; i < capacity; ++i)
        _slots[i].store(nullptr, std::memory_order_relaxed);
}

std::uint32_t counter_table::attach(counter* k) noexcept {
    std::scoped_lock lock(_mutex);
    for (std::uint32_t i = 0; i < capacity; ++i) {
        if (_slots[i].load(std::memory_order_relaxed) == nullptr) {
            _slots[i].store(k, std::memory_order_release);
            return i;
        }
    }
    return none;
}

void counter_table::detach(std::uint32_t id) noexcept {
    if (id >= capacity) return;
    std::scoped_lock lock(_mutex);
    _slots[id].store(nullptr, std::memory_order_release);
}

// ------------------------------------------------------------------------------------- set-up

rma_layer::rma_layer(context& ctx, const config& cfg)
    : _ctx(ctx),
      _rank(ctx.rank()),
      _size(ctx.size()),
      _direct(cfg.rma == rma_path::automatic),
      _segment_bytes(ctx.segment().size()),
      _max_medium(ctx.max_medium()),
      _bases(static_cast<std::size_t>(ctx.size()), nullptr),
      _heap(ctx.segment().size()),
      _h_flag(ctx.handler<&rma::flag>()),
      _h_put_long(ctx.handler<&rma::put_long>()),
      _h_put_packed(ctx.handler<&rma::put_packed>()),
      _h_ack(ctx.handler<&rma::put_ack>()),
      _h_get(ctx.handler<&rma::get>()),
      _h_get_data(ctx.handler<&rma::get_data>()),
      _h_get_long(ctx.handler<&rma::get_long>()),
      _h_get_long_data(ctx.handler<&rma::get_long_data>()),
      _h_getv(ctx.handler<&rma::getv>()),
      _h_getv_data(ctx.handler<&rma::getv_data>()),
      _h_atomic(ctx.handler<&rma::atomic>()),
      _h_atomic_reply(ctx.handler<&rma::atomic_reply>()) {
    core::set_deferred(ctx, [this] { return run_net_done(); });
    for (int r = 0; r < _size; ++r) {
        const std::span<std::byte> seg = core::segment_of(ctx, r);
        _bases[static_cast<std::size_t>(r)] = seg.empty() ? nullptr : seg.data();
    }
    _bases[static_cast<std::size_t>(_rank)] = ctx.segment().data();
}

// --------------------------------------------------------------------------------- allocation

std::uint64_t rma_layer::allocate(std::size_t bytes, std::size_t align) {
    const auto offset = _heap.allocate(bytes, align);
    if (!offset) {
        fail(errc::no_memory, "am::context::allocate", _rank,
             "no free block of " + std::to_string(bytes) + " bytes in the segment of " +
                 std::to_string(_segment_bytes) + " bytes (" + std::to_string(_heap.free_bytes()) +
                 " bytes free; AM_SEGMENT_BYTES sets the segment size)");
    }
    return *offset;
}

void rma_layer::deallocate(int rank, std::uint64_t offset) {
    const char* call = "am::context::deallocate";
    if (rank != _rank) {
        fail(errc::invalid_argument, call, _rank,
             "the pointer belongs to rank " + std::to_string(rank) +
                 "; only blocks of this rank's segment can be released here");
    }
    if (!_heap.release(offset)) {
        fail(errc::invalid_argument, call, _rank,
             "offset " + std::to_string(offset) + " is not a block returned by allocate");
    }
}

void rma_layer::exchange(const void* in, void* out, std::size_t bytes) {
    core::allgather(_ctx, core::context_exchange, in, out, bytes, "am::context::exchange");
}

void* rma_layer::local(int rank, std::uint64_t offset, std::size_t bytes) const noexcept {
    if (rank < 0 || rank >= _size) return nullptr;
    if (rank != _rank && !_direct) return nullptr;
    std::byte* base = _bases[static_cast<std::size_t>(rank)];
    if (base == nullptr || offset > _segment_bytes || bytes > _segment_bytes - offset) {
        return nullptr;
    }
    return base + offset;
}

std::uint64_t rma_layer::offset_of(const void* p, std::size_t bytes) const {
    const auto base = reinterpret_cast<std::uintptr_t>(_bases[static_cast<std::size_t>(_rank)]);
    const auto addr = reinterpret_cast<std::uintptr_t>(p);
    if (addr < base || addr - base > _segment_bytes || bytes > _segment_bytes - (addr - base)) {
        fail(errc::out_of_segment, "am::context::to_global", _rank,
             "the address is not inside this rank's segment of " + std::to_string(_segment_bytes) +
                 " bytes");
    }
    return addr - base;
}

// --------------------------------------------------------------------------------- validation

void rma_layer::check(const rma_shape& s, const char* call) const {
    if (s.rank == -1) fail(errc::invalid_argument, call, _rank, "null global_ptr");
    if (s.rank < 0 || s.rank >= _size) {
        fail(errc::bad_rank, call, _rank,
             "target rank " + std::to_string(s.rank) + " out of range [0, " +
                 std::to_string(_size) + ")");
    }
    if (s.rows == 0) {
        if (s.offset > _segment_bytes) {
            fail(errc::out_of_segment, call, _rank,
                 "offset " + std::to_string(s.offset) + " is outside rank " +
                     std::to_string(s.rank) + "'s segment of " + std::to_string(_segment_bytes) +
                     " bytes");
        }
        return;
    }
    if (s.local == nullptr) fail(errc::invalid_argument, call, _rank, "null local buffer");
    std::uint64_t last = 0;  // offset of the last block from s.offset
    if (s.index != nullptr) {
        const std::uint64_t top = *std::max_element(s.index, s.index + s.rows);
        if (__builtin_mul_overflow(top, s.width, &last)) last = ~std::uint64_t{0};
    } else {
        if (s.rows > 1 && (s.remote_stride < s.width || s.local_stride < s.width)) {
            fail(errc::invalid_argument, call, _rank,
                 "stride of " + std::to_string(std::min(s.remote_stride, s.local_stride)) +
                     " bytes is smaller than the row of " + std::to_string(s.width) + " bytes");
        }
        if (__builtin_mul_overflow(std::uint64_t{s.rows - 1}, s.remote_stride, &last)) {
            last = ~std::uint64_t{0};
        }
    }
    std::uint64_t end = 0;
    if (__builtin_add_overflow(s.offset, last, &end) ||
        __builtin_add_overflow(end, s.width, &end) || end > _segment_bytes) {
        fail(errc::out_of_segment, call, _rank,
             "bytes [" + std::to_string(s.offset) + ", " +
                 (end > s.offset ? std::to_string(end) : std::string("overflow")) +
                 ") are outside rank " + std::to_string(s.rank) + "'s segment of " +
                 std::to_string(_segment_bytes) + " bytes");
    }
}

void rma_layer::check_remote(int source, std::uint64_t offset, std::uint64_t len,
                             const char* what) const {
    if (offset > _segment_bytes || len > _segment_bytes - offset) {
        fail(errc::out_of_segment, "am::rma", _rank,
             std::string(what) + " from rank " + std::to_string(source) + " names bytes [" +
                 std::to_string(offset) + ", +" + std::to_string(len) +
                 ") outside this rank's segment of " + std::to_string(_segment_bytes) + " bytes");
    }
}

// A reply handler may not send requests (the core's deadlock-freedom rule). Refused before
// anything is copied, so a put that would need a message writes nothing.
void rma_layer::check_sends(bool sends, const char* call) const {
    if (sends && core::in_reply_handler(_ctx)) {
        fail(errc::bad_context, call, _rank,
             "called from a reply handler and it needs a request message (AM path, or a flag on "
             "another rank); reply handlers may not send requests");
    }
}

std::uint64_t rma_layer::check_flag(counter* flag, int target, const char* call) const {
    if (flag == nullptr) return 0;
    if (flag->id() >= counter_table::capacity) {
        fail(errc::invalid_argument, call, _rank,
             "the flag counter has no remote identity (internal counter, or more than " +
                 std::to_string(counter_table::capacity) + " counters alive); rank " +
                 std::to_string(target) + " could not find it");
    }
    return std::uint64_t{flag->id()} + 1;
}

// ------------------------------------------------------------------------------------- put/get

void rma_layer::put(const rma_shape& s, counter* flag, counter* done, const char* call) {
    check(s, call);
    const detail::trace_span span(core::tracer(_ctx), detail::trace_kind::put, 0,
                                  static_cast<std::uint64_t>(s.rank), s.width * s.rows);
    const bool blocking = flag == nullptr && done == nullptr;
    if (blocking) core::check_wait(_ctx, call);
    const std::uint64_t flagword = check_flag(flag, s.rank, call);
    check_sends(!direct(s.rank) || (flag != nullptr && s.rank != _rank), call);
    if (direct(s.rank)) {
        put_direct(s);
        if (flag != nullptr) {
            if (s.rank == _rank) {
                flag->add();
            } else {
                _ctx.request(s.rank, _h_flag, static_cast<std::uint32_t>(flagword - 1));
            }
        }
        if (done != nullptr) done->add();
        return;
    }
    if (s.rows != 0 && net(s.rank)) {
        put_net(s, flagword, done);
        return;
    }
    if (!blocking) {
        put_am(s, flagword, done);
        return;
    }
    counter arrived(_ctx, unregistered_t{});
    put_am(s, 0, &arrived);
    const detail::trace_span waiting(core::tracer(_ctx), detail::trace_kind::wait,
                                     static_cast<std::uint32_t>(detail::trace_cause::reply),
                                     static_cast<std::uint64_t>(s.rank));
    arrived.wait(1);
}

void rma_layer::get(const rma_shape& s, counter* flag, const char* call) {
    check(s, call);
    const detail::trace_span span(core::tracer(_ctx), detail::trace_kind::get, 0,
                                  static_cast<std::uint64_t>(s.rank), s.width * s.rows);
    if (flag == nullptr) core::check_wait(_ctx, call);
    check_sends(!direct(s.rank), call);
    if (direct(s.rank)) {
        get_direct(s);
        if (flag != nullptr) flag->add();
        return;
    }
    if (s.rows != 0 && net(s.rank)) {
        get_net(s, flag);
        return;
    }
    if (flag != nullptr) {
        get_am(s, flag);
        return;
    }
    counter arrived(_ctx, unregistered_t{});
    get_am(s, &arrived);
    const detail::trace_span waiting(core::tracer(_ctx), detail::trace_kind::wait,
                                     static_cast<std::uint32_t>(detail::trace_cause::reply),
                                     static_cast<std::uint64_t>(s.rank));
    arrived.wait(1);
}

void rma_layer::put_direct(const rma_shape& s) {
    std::byte* base = _bases[static_cast<std::size_t>(s.rank)];
    for (std::size_t i = 0; i < s.rows; ++i) {
        AM_ASSERT(remote_offset(s, i) <= _segment_bytes &&
                      s.width <= _segment_bytes - remote_offset(s, i),
                  "check() kept every row inside the target's segment");
        std::memcpy(base + remote_offset(s, i), local_block(s, i), s.width);
    }
}

void rma_layer::get_direct(const rma_shape& s) {
    const std::byte* base = _bases[static_cast<std::size_t>(s.rank)];
    for (std::size_t i = 0; i < s.rows; ++i) {
        AM_ASSERT(remote_offset(s, i) <= _segment_bytes &&
                      s.width <= _segment_bytes - remote_offset(s, i),
                  "check() kept every row inside the source's segment");
        std::memcpy(local_block(s, i), base + remote_offset(s, i), s.width);
    }
}

// ------------------------------------------------------------- entry points of the public API

namespace {

rma_layer& rma_of(const context& c, const char* call) {
    return core::get<rma_layer>(c, rma_layer::key, call);
}

rma_layer* rma_if(const context& c) noexcept {
    return static_cast<rma_layer*>(core::find(c, rma_layer::key));
}

}  // namespace

std::uint32_t counter_attach(context& c, counter* k) noexcept {
    rma_layer* m = rma_if(c);
    return m == nullptr ? counter_table::none : m->counters().attach(k);
}
void counter_detach(context& c, std::uint32_t id) noexcept {
    rma_layer* m = rma_if(c);
    if (m != nullptr) m->counters().detach(id);
}

}  // namespace am::detail

// The layer's entry points, declared in <am/detail/splitc.hpp>.
namespace am::splitc::detail {

void rma_put(context& c, const rma_shape& s, counter* flag, counter* done, const char* call) {
    am::detail::rma_of(c, call).put(s, flag, done, call);
}
void rma_get(context& c, const rma_shape& s, counter* flag, const char* call) {
    am::detail::rma_of(c, call).get(s, flag, call);
}
std::uint64_t rma_allocate(context& c, std::size_t bytes, std::size_t align) {
    return am::detail::rma_of(c, "am::context::allocate").allocate(bytes, align);
}
void rma_deallocate(context& c, int rank, std::uint64_t offset) {
    am::detail::rma_of(c, "am::context::deallocate").deallocate(rank, offset);
}
void rma_exchange(context& c, const void* in, void* out, std::size_t bytes) {
    am::detail::rma_of(c, "am::context::exchange").exchange(in, out, bytes);
}
void* rma_local(const context& c, int rank, std::uint64_t offset, std::size_t bytes) noexcept {
    am::detail::rma_layer* m = am::detail::rma_if(c);
    return m == nullptr ? nullptr : m->local(rank, offset, bytes);
}
std::uint64_t rma_atomic(context& c, const atomic_args& a, const atomic_completion* split,
                         const char* call) {
    return am::detail::rma_of(c, call).atomic(a, split, call);
}
std::uint64_t rma_offset_of(const context& c, const void* p, std::size_t bytes) {
    return am::detail::rma_of(c, "am::context::to_global").offset_of(p, bytes);
}

}  // namespace am::splitc::detail
