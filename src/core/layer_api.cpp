// SPDX-License-Identifier: MIT
// The core's interface to the layers (<am/core/layer.hpp>): each call forwards to the rank's
// context_impl.
#include "context_impl.hpp"

#include "../util/error.hpp"

#include <am/core/layer.hpp>

namespace am::core {
namespace {

detail::context_impl& core_of(const context& ctx) noexcept {
    return *detail::access::impl(ctx);
}

transport::coll_kind to_coll(collective kind) noexcept {
    return {kind.layer, kind.id};
}

}  // namespace

void attach(context& ctx, const key& k, layer& l) {
    core_of(ctx).attach_layer(k, l);
}
layer* find(const context& ctx, const key& k) noexcept {
    return core_of(ctx).find_layer(k);
}
void missing(const context& ctx, const key& k, const char* call) {
    util::fail(
        errc::bad_context, call, ctx.rank(),
        std::string("this context has no ") + k.name + " layer (create contexts with am::run)");
}

bool in_handler(const context& ctx) noexcept {
    return core_of(ctx).in_handler();
}
bool in_reply_handler(const context& ctx) noexcept {
    return core_of(ctx).in_reply_handler();
}
void check_thread_slow(const context& ctx, const char* call) {
    core_of(ctx).check_thread(call);
}
void check_wait(const context& ctx, const char* call) {
    detail::core_check_wait(&core_of(ctx), call);
}
bool locking(const context& ctx) noexcept {
    return core_of(ctx).locking();
}
bool exclusive(context& ctx, const std::function<bool()>& f) {
    return core_of(ctx).exclusive(f);
}

std::uint32_t register_handler(context& ctx, const detail::handler_desc& h) {
    return detail::core_register(&core_of(ctx), h);
}
void send(context& ctx, const detail::send_desc& d) {
    core_of(ctx).send(d, false);
}
std::uint32_t library_handlers(const context& ctx) noexcept {
    return core_of(ctx).builtin_handlers();
}
std::string unregistered(const context& ctx, std::uint32_t handler) {
    return core_of(ctx).unregistered(handler);
}

std::size_t poll(context& ctx) {
    return detail::core_poll(&core_of(ctx));
}
void set_deferred(context& ctx, std::function<std::size_t()> fn) {
    core_of(ctx).set_deferred(std::move(fn));
}
void set_pending_report(context& ctx, double seconds, std::function<std::string()> report) {
    core_of(ctx).set_pending_report(seconds, std::move(report));
}
void add_pending(context& ctx, std::int64_t n) noexcept {
    core_of(ctx).add_layer_pending(n);
}
void signal_deferred(context& ctx) noexcept {
    core_of(ctx).signal_deferred();
}
void set_parallel_work(context& ctx, std::function<std::size_t()> fn) {
    core_of(ctx).set_parallel_work(std::move(fn));
}
void work_available(context& ctx, bool yes) noexcept {
    core_of(ctx).work_available(yes);
}

collective add_collective(context& ctx, const key& k, std::uint8_t id, const char* call) {
    const transport::coll_kind kind = core_of(ctx).add_layer_collective(k, id, call);
    return {kind.layer, kind.id};
}
void barrier(context& ctx, collective kind, const char* call) {
    core_of(ctx).check_thread(call);
    core_of(ctx).barrier(to_coll(kind), call);
}
void allgather(context& ctx, collective kind, const void* in, void* out, std::size_t bytes,
               const char* call) {
    core_of(ctx).allgather(to_coll(kind), in, out, bytes, call);
}
void allreduce_sum(context& ctx, collective kind, const std::uint64_t* in, std::uint64_t* out,
                   std::size_t n, const std::function<std::size_t()>& idle, const char* call) {
    core_of(ctx).allreduce_sum(to_coll(kind), in, out, n, idle, call);
}
std::string stragglers(context& ctx) {
    return core_of(ctx).transport().collective_stragglers();
}

std::span<std::byte> segment_of(const context& ctx, int rank) noexcept {
    if (rank == ctx.rank()) return ctx.segment();
    return core_of(ctx).transport().segment(rank);
}
bool one_sided(const context& ctx, int rank) noexcept {
    transport::one_sided* os = core_of(ctx).transport().remote_memory();
    return os != nullptr && rank != ctx.rank() && os->reaches(rank);
}
void remote_put(context& ctx, int rank, std::uint64_t offset, const void* src, std::size_t len,
                remote_done done, void* arg) {
    core_of(ctx).transport().remote_memory()->put(rank, offset, src, len, done, arg);
}
void remote_get(context& ctx, int rank, std::uint64_t offset, void* dst, std::size_t len,
                remote_done done, void* arg) {
    core_of(ctx).transport().remote_memory()->get(rank, offset, dst, len, done, arg);
}
bool remote_atomic(context& ctx, int rank, std::uint64_t offset, atomic_op op, unsigned bytes,
                   std::uint64_t operand, std::uint64_t compare, remote_done done, void* arg) {
    return core_of(ctx).transport().remote_memory()->atomic(rank, offset, op, bytes, operand,
                                                            compare, done, arg);
}
bool job_failed(const context& ctx) noexcept {
    return core_of(ctx).transport().job_failed();
}
std::string failure_reason(const context& ctx) {
    return core_of(ctx).transport().failure_reason();
}
void fail_job(context& ctx, std::string_view reason) noexcept {
    core_of(ctx).transport().fail_job(reason);
}

}  // namespace am::core

static_assert(am::core::max_reduce_words == am::transport::transport::max_reduce_words);
