// SPDX-License-Identifier: MIT
// Remote atomics on global pointers: checks, the read-modify-write on a segment word with CPU
// atomics (the mapped path, and the owner's side of the message path), the network path
// (core::remote_atomic), and the request/reply of the message path.
#include "rma_common.hpp"

#include <atomic>
#include <bit>
#include <cstring>
#include <string>

namespace am::detail {

using namespace rma_internal;
using splitc::detail::atomic_args;
using splitc::detail::atomic_completion;
using splitc::detail::atomic_type;

namespace {

unsigned width_of(atomic_type t) noexcept {
    return t == atomic_type::i64 || t == atomic_type::u64 || t == atomic_type::f64 ? 8 : 4;
}
bool is_float(atomic_type t) noexcept {
    return t == atomic_type::f32 || t == atomic_type::f64;
}
const char* type_name(atomic_type t) noexcept {
    switch (t) {
        case atomic_type::i32:
            return "int32_t";
        case atomic_type::u32:
            return "uint32_t";
        case atomic_type::i64:
            return "int64_t";
        case atomic_type::u64:
            return "uint64_t";
        case atomic_type::f32:
            return "float";
        case atomic_type::f64:
            return "double";
    }
    return "?";
}
// Floats have add, swap and compare_swap (bitwise); integers every op.
bool valid_op(atomic_op op, atomic_type t) noexcept {
    if (static_cast<unsigned>(op) > static_cast<unsigned>(atomic_op::max)) return false;
    if (static_cast<unsigned>(t) > static_cast<unsigned>(atomic_type::f64)) return false;
    return !is_float(t) || op == atomic_op::add || op == atomic_op::swap ||
           op == atomic_op::compare_swap;
}

// The new value of a word `w` of `U` under `op`, for the ops a CAS loop computes.
template <class U, class S, class F>
U combine(atomic_op op, U w, U v) noexcept {
    switch (op) {
        case atomic_op::add:
            if constexpr (!std::is_same_v<F, void>) {
                return std::bit_cast<U>(static_cast<F>(std::bit_cast<F>(w) + std::bit_cast<F>(v)));
            }
            return static_cast<U>(w + v);
        case atomic_op::min:
            return static_cast<S>(v) < static_cast<S>(w) ? v : w;
        case atomic_op::max:
            return static_cast<S>(v) > static_cast<S>(w) ? v : w;
        default:
            return w;
    }
}

// `op` on the word at `p` with CPU atomics: the same instructions whichever rank or path runs
// them, so the mapped path and the owner's message path are atomic with each other.
template <class U, class S, class F>
U apply_word(std::byte* p, atomic_op op, U v, U c) noexcept {
    static_assert(std::atomic_ref<U>::is_always_lock_free, "segment words are lock-free");
    std::atomic_ref<U> w(*reinterpret_cast<U*>(p));
    switch (op) {
        case atomic_op::add:
            if constexpr (std::is_same_v<F, void>) return w.fetch_add(v, std::memory_order_acq_rel);
            break;
        case atomic_op::bit_and:
            return w.fetch_and(v, std::memory_order_acq_rel);
        case atomic_op::bit_or:
            return w.fetch_or(v, std::memory_order_acq_rel);
        case atomic_op::bit_xor:
            return w.fetch_xor(v, std::memory_order_acq_rel);
        case atomic_op::swap:
            return w.exchange(v, std::memory_order_acq_rel);
        case atomic_op::compare_swap:
            (void)w.compare_exchange_strong(c, v, std::memory_order_acq_rel);
            return c;  // the old value, whether or not it matched
        default:
            break;
    }
    U old = w.load(std::memory_order_relaxed);
    while (!w.compare_exchange_weak(old, combine<U, S, F>(op, old, v), std::memory_order_acq_rel)) {
    }
    return old;
}

}  // namespace

std::uint64_t apply_atomic(std::byte* p, atomic_op op, atomic_type t, std::uint64_t v,
                           std::uint64_t c) noexcept {
    using u32 = std::uint32_t;
    using u64 = std::uint64_t;
    switch (t) {
        case atomic_type::i32:
            return apply_word<u32, std::int32_t, void>(p, op, u32(v), u32(c));
        case atomic_type::u32:
            return apply_word<u32, u32, void>(p, op, u32(v), u32(c));
        case atomic_type::i64:
            return apply_word<u64, std::int64_t, void>(p, op, v, c);
        case atomic_type::u64:
            return apply_word<u64, u64, void>(p, op, v, c);
        case atomic_type::f32:
            return apply_word<u32, u32, float>(p, op, u32(v), u32(c));
        case atomic_type::f64:
            return apply_word<u64, u64, double>(p, op, v, c);
    }
    return 0;
}

void rma_layer::check_atomic(const atomic_args& a, const char* call) const {
    if (a.rank == -1) fail(errc::invalid_argument, call, _rank, "null global_ptr");
    if (a.rank < 0 || a.rank >= _size) {
        fail(errc::bad_rank, call, _rank,
             "target rank " + std::to_string(a.rank) + " out of range [0, " +
                 std::to_string(_size) + ")");
    }
    if (!valid_op(a.op, a.type)) {
        fail(errc::invalid_argument, call, _rank,
             std::string("atomic ") + to_string(a.op) + " is not defined on " + type_name(a.type) +
                 " (floating-point words have add, swap and compare_swap)");
    }
    const unsigned width = width_of(a.type);
    if (a.offset % width != 0) {
        fail(errc::invalid_argument, call, _rank,
             "offset " + std::to_string(a.offset) + " in rank " + std::to_string(a.rank) +
                 "'s segment is not aligned to the word's " + std::to_string(width) + " bytes");
    }
    if (a.offset > _segment_bytes || width > _segment_bytes - a.offset) {
        fail(errc::out_of_segment, call, _rank,
             "bytes [" + std::to_string(a.offset) + ", +" + std::to_string(width) +
                 ") are outside rank " + std::to_string(a.rank) + "'s segment of " +
                 std::to_string(_segment_bytes) + " bytes");
    }
}

// The end of an atomic at its origin: the old value to `result`, the callback, the flag.
void finish_atomic(const atomic_completion& c, unsigned width, std::uint64_t old) {
    if (c.result != nullptr) {
        if (width == 4) {
            const auto w = static_cast<std::uint32_t>(old);
            std::memcpy(c.result, &w, 4);
        } else {
            std::memcpy(c.result, &old, 8);
        }
    }
    if (c.done != nullptr) c.done(c.arg, old);
    if (c.flag != nullptr) c.flag->add();
}

// An atomic in flight on the network or by message: what to do with the old value.
struct rma_layer::atomic_record final : net_record {
    atomic_completion completion;
    unsigned width = 8;
    bool owned = true;  // heap-allocated by a split-phase call (a blocking one's is on its stack)

    void finish(std::uint64_t old) override {
        const atomic_completion c = completion;
        const unsigned w = width;
        if (owned) delete this;
        finish_atomic(c, w, old);
    }
};

std::uint64_t rma_layer::atomic(const atomic_args& a, const atomic_completion* split,
                                const char* call) {
    check_atomic(a, call);
    if (split == nullptr) core::check_wait(_ctx, call);
    const unsigned width = width_of(a.type);
    if (direct(a.rank)) {
        const std::uint64_t old = apply_atomic(_bases[static_cast<std::size_t>(a.rank)] + a.offset,
                                               a.op, a.type, a.operand, a.compare);
        if (split != nullptr) finish_atomic(*split, width, old);
        return split == nullptr ? old : 0;
    }
    check_sends(!net(a.rank), call);
    if (split != nullptr) {
        auto* rec = new atomic_record;
        rec->completion = *split;
        rec->width = width;
        start_atomic(a, rec);
        return 0;
    }
    std::uint64_t old = 0;
    counter arrived(_ctx, unregistered_t{});
    atomic_record rec;
    rec.completion.flag = &arrived;
    rec.completion.result = &old;
    rec.owned = false;
    start_atomic(a, &rec);
    const detail::trace_span waiting(core::tracer(_ctx), detail::trace_kind::wait,
                                     static_cast<std::uint32_t>(detail::trace_cause::reply),
                                     static_cast<std::uint64_t>(a.rank));
    arrived.wait(1);
    return old;
}

// The network where it does the op on unsigned words (not min, max, float add); else a request
// run at the owner.
void rma_layer::start_atomic(const atomic_args& a, atomic_record* rec) {
    const bool bits_only = a.op != atomic_op::min && a.op != atomic_op::max &&
                           !(is_float(a.type) && a.op == atomic_op::add);
    if (bits_only && net(a.rank)) {
        rec->layer = this;
        core::add_pending(_ctx, 1);
        if (core::remote_atomic(_ctx, a.rank, a.offset, a.op, width_of(a.type), a.operand,
                                a.compare, &rma_layer::net_done, rec)) {
            return;
        }
        core::add_pending(_ctx, -1);
    }
    const std::uint64_t code =
        static_cast<std::uint64_t>(a.op) | (static_cast<std::uint64_t>(a.type) << 8);
    _ctx.request(a.rank, _h_atomic, a.offset, a.operand, a.compare, code, to_wire(rec));
}

void rma_layer::on_atomic(token& t, std::uint64_t offset, std::uint64_t operand,
                          std::uint64_t compare, std::uint64_t code, std::uint64_t record) {
    const auto op = static_cast<atomic_op>(code & 0xff);
    const auto type = static_cast<atomic_type>((code >> 8) & 0xff);
    if (!valid_op(op, type)) {
        check_remote(t.source(), 0, ~std::uint64_t{0}, "an atomic with an unknown operation");
    }
    const unsigned width = width_of(type);
    check_remote(t.source(), offset, width, "an atomic");
    if (offset % width != 0) {
        check_remote(t.source(), offset, ~std::uint64_t{0}, "an unaligned atomic");
    }
    const std::uint64_t old =
        apply_atomic(_bases[static_cast<std::size_t>(_rank)] + offset, op, type, operand, compare);
    t.reply(_h_atomic_reply, record, old);
}

void rma_layer::on_atomic_reply(token& /*t*/, std::uint64_t record, std::uint64_t old) {
    reinterpret_cast<atomic_record*>(static_cast<std::uintptr_t>(record))->finish(old);
}

}  // namespace am::detail
