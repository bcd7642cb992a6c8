// SPDX-License-Identifier: MIT
// The Split-C part of the C API (include/am/am_splitc.h) over the Split-C layer's entry points
// (am::splitc::detail::rma_*): a C put or get is an rma_shape in bytes, checked by the layer, which
// names the C call in its errors; a C flag owns an am::counter, so C and C++ flags share the
// layer's table of remote-flag identities.
#include "capi_layers.hpp"

#include <am/am.h>
#include <am/am_splitc.h>
#include <am/context.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

/// A C flag: the C++ counter (its position in the layer's table is the flag's identity) and
/// the context it polls.
struct am_splitc_flag {
    explicit am_splitc_flag(am_context* c) : ctx(c->shared_from_this()), cxx(*c->cxx) {}
    std::shared_ptr<am_context> ctx;
    am::counter cxx;
};

static_assert(std::is_standard_layout_v<am_splitc_gptr_t> && sizeof(am_splitc_gptr_t) == 16);

namespace {

using namespace am::capi;
using am::errc;
using am::splitc::detail::rma_shape;

// --------------------------------------------------------------------------------- checks

/// The context a flag passed to `call` belongs to must be the caller's: a flag names a
/// position in its own rank's table.
am::counter* flag_of(const char* call, const am_context* c, am_splitc_flag_t* f, const char* what) {
    if (f == nullptr) return nullptr;
    if (f->ctx.get() != c) {
        fail(errc::invalid_argument, call, c,
             std::string(what) + " was created on rank " + std::to_string(f->ctx->cxx->rank()) +
                 "'s context, not this one");
    }
    return &f->cxx;
}

/// The bytes a local side of `rows` rows spans: `(rows - 1) * stride + width`, which must not
/// overflow (the remote side is checked by the layer against the segment).
void check_local_span(const char* call, const am_context* c, std::size_t stride, std::size_t width,
                      std::size_t rows) {
    std::size_t span = 0;
    if (rows > 1 && (__builtin_mul_overflow(rows - 1, stride, &span) ||
                     __builtin_add_overflow(span, width, &span))) {
        fail(errc::invalid_argument, call, c,
             std::to_string(rows) + " rows of stride " + std::to_string(stride) +
                 " bytes overflow the local address space");
    }
}

// ----------------------------------------------------------------------------- the shapes

rma_shape contiguous(am_splitc_gptr_t p, const void* local, std::size_t bytes) {
    return rma_shape{p.rank,
                     p.offset,
                     bytes,
                     static_cast<std::byte*>(const_cast<void*>(local)),
                     bytes,
                     bytes,
                     bytes == 0 ? 0u : 1u};
}

rma_shape strided(const char* call, const am_context* c, am_splitc_gptr_t p,
                  std::size_t remote_stride, const void* local, std::size_t local_stride,
                  std::size_t width, std::size_t rows) {
    check_local_span(call, c, local_stride, width, rows);
    return rma_shape{p.rank,
                     p.offset,
                     remote_stride,
                     static_cast<std::byte*>(const_cast<void*>(local)),
                     local_stride,
                     width,
                     width == 0 ? 0 : rows};
}

rma_shape indexed(const char* call, const am_context* c, am_splitc_gptr_t base,
                  const std::uint64_t* index, std::size_t count, const void* local,
                  std::size_t elem) {
    const std::size_t rows = elem == 0 ? 0 : count;
    check_pointer(call, c, index, rows != 0, "index array");
    check_local_span(call, c, elem, elem, rows);
    return rma_shape{
        base.rank, base.offset, elem, static_cast<std::byte*>(const_cast<void*>(local)),
        elem,      elem,        rows, rows == 0 ? nullptr : index};
}

// ---------------------------------------------------------------------------- the calls

void put_c(am_context* c, const char* call, const rma_shape& s, am_splitc_flag_t* flag,
           am_splitc_flag_t* done, bool blocking) {
    if (!blocking && flag == nullptr && done == nullptr) {
        fail(
            errc::invalid_argument, call, c,
            "a split-phase put needs a flag or a done flag (am_splitc_put and its variants block)");
    }
    am::counter* f = flag_of(call, c, flag, "the flag");
    am::counter* d = flag_of(call, c, done, "the done flag");
    am::splitc::detail::rma_put(*c->cxx, s, f, d, call);
}

void get_c(am_context* c, const char* call, const rma_shape& s, am_splitc_flag_t* flag,
           bool blocking) {
    if (!blocking)
        check_pointer(call, c, flag, true, "flag (am_splitc_get and its variants block)");
    am::splitc::detail::rma_get(*c->cxx, s, flag_of(call, c, flag, "the flag"), call);
}

/// The value a C caller passed as an op: read as an int, so that a value outside the enum (which
/// C allows) is refused by the range check rather than being a C++ enum out of range.
int op_code(const am_splitc_atomic_op_t& op) noexcept {
    static_assert(sizeof(am_splitc_atomic_op_t) == sizeof(int));
    int code = 0;
    std::memcpy(&code, &op, sizeof code);
    return code;
}

/// A C atomic: the layer's atomic of type T, blocking (old value to `old`) or split-phase
/// (old value to `old` when the flag counts).
template <class T>
void atomic_c(am_context* c, const char* call, am_splitc_gptr_t p, int code, T operand, T compare,
              T* old, am_splitc_flag_t* flag, bool blocking) {
    if (code < AM_SPLITC_ATOMIC_ADD || code > AM_SPLITC_ATOMIC_MAX) {
        fail(errc::invalid_argument, call, c,
             "atomic op " + std::to_string(code) + " is not an am_splitc_atomic_op_t");
    }
    if (!blocking) check_pointer(call, c, flag, true, "flag (the calls without _nb block)");
    namespace sd = am::splitc::detail;
    const sd::atomic_args a{p.rank,
                            p.offset,
                            static_cast<am::atomic_op>(code),
                            sd::atomic_type_of<T>(),
                            sd::to_word(operand),
                            sd::to_word(compare)};
    if (blocking) {
        const std::uint64_t w = sd::rma_atomic(*c->cxx, a, nullptr, call);
        if (old != nullptr) *old = sd::from_word<T>(w);
        return;
    }
    sd::atomic_completion done;
    done.flag = flag_of(call, c, flag, "the flag");
    done.result = old;
    (void)sd::rma_atomic(*c->cxx, a, &done, call);
}

/// Runs `f` for `call` on `ctx`. The layer's messages speak of C++ names; a C caller knows
/// them by their C names.
template <class F>
am_status_t run_c(am_context* ctx, const char* call, F&& f) noexcept {
    return guarded_c(
        ctx, call,
        {{"null global_ptr", "null global pointer"}, {"by allocate", "by am_splitc_alloc"}},
        std::forward<F>(f));
}

}  // namespace

extern "C" {

// --------------------------------------------------------------------------------- allocation

am_status_t am_splitc_alloc(am_context_t* ctx, size_t bytes, size_t align,
                            am_splitc_gptr_t* out) noexcept {
    if (out != nullptr) *out = am_splitc_gptr(-1, 0);
    return run_c(ctx, "am_splitc_alloc", [&] {
        const char* call = "am_splitc_alloc";
        check_pointer(call, ctx, out, true, "pointer for the result");
        const std::size_t seg = ctx->cxx->segment().size();
        if ((align & (align - 1)) != 0 || align > seg) {
            fail(errc::invalid_argument, call, ctx,
                 "alignment " + std::to_string(align) +
                     " is not 0 or a power of two no larger than the segment of " +
                     std::to_string(seg) + " bytes");
        }
        const std::uint64_t offset =
            am::splitc::detail::rma_allocate(*ctx->cxx, bytes, align < 16 ? 16 : align);
        *out = am_splitc_gptr(ctx->cxx->rank(), offset);
    });
}

am_status_t am_splitc_free(am_context_t* ctx, am_splitc_gptr_t p) noexcept {
    return run_c(ctx, "am_splitc_free",
                 [&] { am::splitc::detail::rma_deallocate(*ctx->cxx, p.rank, p.offset); });
}

am_status_t am_splitc_exchange(am_context_t* ctx, am_splitc_gptr_t mine,
                               am_splitc_gptr_t* all) noexcept {
    return run_c(ctx, "am_splitc_exchange", [&] {
        check_pointer("am_splitc_exchange", ctx, all, true, "result array");
        // Rank and offset as two fixed-size words: the same layout in every process.
        const std::uint64_t in[2] = {
            static_cast<std::uint64_t>(static_cast<std::int64_t>(mine.rank)), mine.offset};
        std::vector<std::uint64_t> words(2 * static_cast<std::size_t>(ctx->cxx->size()));
        am::splitc::detail::rma_exchange(*ctx->cxx, in, words.data(), sizeof in);
        for (std::size_t r = 0; r < words.size() / 2; ++r) {
            all[r] = am_splitc_gptr(static_cast<int>(static_cast<std::int64_t>(words[2 * r])),
                                    words[2 * r + 1]);
        }
    });
}

void* am_splitc_local(const am_context_t* ctx, am_splitc_gptr_t p, size_t bytes) noexcept {
    return ctx == nullptr ? nullptr
                          : am::splitc::detail::rma_local(*ctx->cxx, p.rank, p.offset, bytes);
}

am_status_t am_splitc_to_global(am_context_t* ctx, const void* addr, size_t bytes,
                                am_splitc_gptr_t* out) noexcept {
    if (out != nullptr) *out = am_splitc_gptr(-1, 0);
    return run_c(ctx, "am_splitc_to_global", [&] {
        check_pointer("am_splitc_to_global", ctx, out, true, "pointer for the result");
        *out = am_splitc_gptr(ctx->cxx->rank(),
                              am::splitc::detail::rma_offset_of(*ctx->cxx, addr, bytes));
    });
}

// -------------------------------------------------------------------------------------- flags

am_status_t am_splitc_flag_create(am_context_t* ctx, am_splitc_flag_t** out) noexcept {
    if (out != nullptr) *out = nullptr;
    return run_c(ctx, "am_splitc_flag_create", [&] {
        check_pointer("am_splitc_flag_create", ctx, out, true, "pointer for the flag");
        auto f = std::make_unique<am_splitc_flag>(ctx);
        if (f->cxx.id() >= AM_SPLITC_MAX_FLAGS) {
            fail(errc::too_large, "am_splitc_flag_create", ctx,
                 "AM_SPLITC_MAX_FLAGS = " + std::to_string(AM_SPLITC_MAX_FLAGS) +
                     " flags and C++ counters are alive already");
        }
        *out = f.release();
    });
}

void am_splitc_flag_free(am_splitc_flag_t* flag) noexcept {
    delete flag;
}

uint64_t am_splitc_flag_value(const am_splitc_flag_t* flag) noexcept {
    return flag == nullptr ? 0 : flag->cxx.value();
}

void am_splitc_flag_add(am_splitc_flag_t* flag, uint64_t n) noexcept {
    if (flag != nullptr) flag->cxx.add(n);
}

void am_splitc_flag_reset(am_splitc_flag_t* flag) noexcept {
    if (flag != nullptr) flag->cxx.reset();
}

am_status_t am_splitc_flag_wait(am_splitc_flag_t* flag, uint64_t n) noexcept {
    if (flag == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(flag->ctx.get(), "am_splitc_flag_wait", [&] { flag->cxx.wait(n); });
}

// ------------------------------------------------------------------------------------ put/get

am_status_t am_splitc_put(am_context_t* ctx, am_splitc_gptr_t dst, const void* src,
                          size_t bytes) noexcept {
    return run_c(ctx, "am_splitc_put", [&] {
        put_c(ctx, "am_splitc_put", contiguous(dst, src, bytes), nullptr, nullptr, true);
    });
}

am_status_t am_splitc_put_nb(am_context_t* ctx, am_splitc_gptr_t dst, const void* src, size_t bytes,
                             am_splitc_flag_t* flag, am_splitc_flag_t* done) noexcept {
    return run_c(ctx, "am_splitc_put_nb", [&] {
        put_c(ctx, "am_splitc_put_nb", contiguous(dst, src, bytes), flag, done, false);
    });
}

am_status_t am_splitc_get(am_context_t* ctx, void* dst, am_splitc_gptr_t src,
                          size_t bytes) noexcept {
    return run_c(ctx, "am_splitc_get",
                 [&] { get_c(ctx, "am_splitc_get", contiguous(src, dst, bytes), nullptr, true); });
}

am_status_t am_splitc_get_nb(am_context_t* ctx, void* dst, am_splitc_gptr_t src, size_t bytes,
                             am_splitc_flag_t* flag) noexcept {
    return run_c(ctx, "am_splitc_get_nb",
                 [&] { get_c(ctx, "am_splitc_get_nb", contiguous(src, dst, bytes), flag, false); });
}

am_status_t am_splitc_put_strided(am_context_t* ctx, am_splitc_gptr_t dst, size_t dst_stride,
                                  const void* src, size_t src_stride, size_t width,
                                  size_t rows) noexcept {
    const char* call = "am_splitc_put_strided";
    return run_c(ctx, call, [&] {
        put_c(ctx, call, strided(call, ctx, dst, dst_stride, src, src_stride, width, rows), nullptr,
              nullptr, true);
    });
}

am_status_t am_splitc_put_strided_nb(am_context_t* ctx, am_splitc_gptr_t dst, size_t dst_stride,
                                     const void* src, size_t src_stride, size_t width, size_t rows,
                                     am_splitc_flag_t* flag, am_splitc_flag_t* done) noexcept {
    const char* call = "am_splitc_put_strided_nb";
    return run_c(ctx, call, [&] {
        put_c(ctx, call, strided(call, ctx, dst, dst_stride, src, src_stride, width, rows), flag,
              done, false);
    });
}

am_status_t am_splitc_get_strided(am_context_t* ctx, void* dst, size_t dst_stride,
                                  am_splitc_gptr_t src, size_t src_stride, size_t width,
                                  size_t rows) noexcept {
    const char* call = "am_splitc_get_strided";
    return run_c(ctx, call, [&] {
        get_c(ctx, call, strided(call, ctx, src, src_stride, dst, dst_stride, width, rows), nullptr,
              true);
    });
}

am_status_t am_splitc_get_strided_nb(am_context_t* ctx, void* dst, size_t dst_stride,
                                     am_splitc_gptr_t src, size_t src_stride, size_t width,
                                     size_t rows, am_splitc_flag_t* flag) noexcept {
    const char* call = "am_splitc_get_strided_nb";
    return run_c(ctx, call, [&] {
        get_c(ctx, call, strided(call, ctx, src, src_stride, dst, dst_stride, width, rows), flag,
              false);
    });
}

am_status_t am_splitc_put_indexed(am_context_t* ctx, am_splitc_gptr_t base, const uint64_t* index,
                                  size_t count, const void* src, size_t elem_bytes) noexcept {
    const char* call = "am_splitc_put_indexed";
    return run_c(ctx, call, [&] {
        put_c(ctx, call, indexed(call, ctx, base, index, count, src, elem_bytes), nullptr, nullptr,
              true);
    });
}

am_status_t am_splitc_put_indexed_nb(am_context_t* ctx, am_splitc_gptr_t base,
                                     const uint64_t* index, size_t count, const void* src,
                                     size_t elem_bytes, am_splitc_flag_t* flag,
                                     am_splitc_flag_t* done) noexcept {
    const char* call = "am_splitc_put_indexed_nb";
    return run_c(ctx, call, [&] {
        put_c(ctx, call, indexed(call, ctx, base, index, count, src, elem_bytes), flag, done,
              false);
    });
}

am_status_t am_splitc_get_indexed(am_context_t* ctx, void* dst, am_splitc_gptr_t base,
                                  const uint64_t* index, size_t count, size_t elem_bytes) noexcept {
    const char* call = "am_splitc_get_indexed";
    return run_c(ctx, call, [&] {
        get_c(ctx, call, indexed(call, ctx, base, index, count, dst, elem_bytes), nullptr, true);
    });
}

am_status_t am_splitc_get_indexed_nb(am_context_t* ctx, void* dst, am_splitc_gptr_t base,
                                     const uint64_t* index, size_t count, size_t elem_bytes,
                                     am_splitc_flag_t* flag) noexcept {
    const char* call = "am_splitc_get_indexed_nb";
    return run_c(ctx, call, [&] {
        get_c(ctx, call, indexed(call, ctx, base, index, count, dst, elem_bytes), flag, false);
    });
}

// ----------------------------------------------------------------------------- remote atomics

am_status_t am_splitc_atomic_i32(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                 int32_t operand, int32_t compare, int32_t* old) noexcept {
    const char* call = "am_splitc_atomic_i32";
    return run_c(ctx, call, [&] {
        atomic_c(ctx, call, p, op_code(op), operand, compare, old, nullptr, true);
    });
}

am_status_t am_splitc_atomic_i32_nb(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                    int32_t operand, int32_t compare, int32_t* old,
                                    am_splitc_flag_t* flag) noexcept {
    const char* call = "am_splitc_atomic_i32_nb";
    return run_c(ctx, call,
                 [&] { atomic_c(ctx, call, p, op_code(op), operand, compare, old, flag, false); });
}

am_status_t am_splitc_atomic_u32(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                 uint32_t operand, uint32_t compare, uint32_t* old) noexcept {
    const char* call = "am_splitc_atomic_u32";
    return run_c(ctx, call, [&] {
        atomic_c(ctx, call, p, op_code(op), operand, compare, old, nullptr, true);
    });
}

am_status_t am_splitc_atomic_u32_nb(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                    uint32_t operand, uint32_t compare, uint32_t* old,
                                    am_splitc_flag_t* flag) noexcept {
    const char* call = "am_splitc_atomic_u32_nb";
    return run_c(ctx, call,
                 [&] { atomic_c(ctx, call, p, op_code(op), operand, compare, old, flag, false); });
}

am_status_t am_splitc_atomic_i64(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                 int64_t operand, int64_t compare, int64_t* old) noexcept {
    const char* call = "am_splitc_atomic_i64";
    return run_c(ctx, call, [&] {
        atomic_c(ctx, call, p, op_code(op), operand, compare, old, nullptr, true);
    });
}

am_status_t am_splitc_atomic_i64_nb(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                    int64_t operand, int64_t compare, int64_t* old,
                                    am_splitc_flag_t* flag) noexcept {
    const char* call = "am_splitc_atomic_i64_nb";
    return run_c(ctx, call,
                 [&] { atomic_c(ctx, call, p, op_code(op), operand, compare, old, flag, false); });
}

am_status_t am_splitc_atomic_u64(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                 uint64_t operand, uint64_t compare, uint64_t* old) noexcept {
    const char* call = "am_splitc_atomic_u64";
    return run_c(ctx, call, [&] {
        atomic_c(ctx, call, p, op_code(op), operand, compare, old, nullptr, true);
    });
}

am_status_t am_splitc_atomic_u64_nb(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                    uint64_t operand, uint64_t compare, uint64_t* old,
                                    am_splitc_flag_t* flag) noexcept {
    const char* call = "am_splitc_atomic_u64_nb";
    return run_c(ctx, call,
                 [&] { atomic_c(ctx, call, p, op_code(op), operand, compare, old, flag, false); });
}

am_status_t am_splitc_atomic_f64(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                 double operand, double compare, double* old) noexcept {
    const char* call = "am_splitc_atomic_f64";
    return run_c(ctx, call, [&] {
        atomic_c(ctx, call, p, op_code(op), operand, compare, old, nullptr, true);
    });
}

am_status_t am_splitc_atomic_f64_nb(am_context_t* ctx, am_splitc_gptr_t p, am_splitc_atomic_op_t op,
                                    double operand, double compare, double* old,
                                    am_splitc_flag_t* flag) noexcept {
    const char* call = "am_splitc_atomic_f64_nb";
    return run_c(ctx, call,
                 [&] { atomic_c(ctx, call, p, op_code(op), operand, compare, old, flag, false); });
}

}  // extern "C"
