// SPDX-License-Identifier: MIT
// The C API of collectives and teams (am/am_coll.h) over am::coll.
#include "capi_coll.hpp"

#include <cstring>

namespace {

using am::capi::guarded;
namespace coll = am::coll;

template <class T, class Op>
std::vector<am::coll::detail::blob> reduce_typed(am_coll_team* t, am::coll::detail::kind k,
                                                 const char* call, const void* in,
                                                 std::size_t count, Op op, int root) {
    const std::span<const T> s(static_cast<const T*>(in), count);
    auto r = am::coll::detail::span_reduction(k, call, s, op, root);
    return am::coll::detail::run(t->cxx, std::move(r));
}

// An enum argument from C as the integer it holds: a C caller may pass any value, and loading
// one outside the enumerators as the C++ enum type is undefined (UBSan reports it).
template <class E>
int as_int(const E& e) noexcept {
    static_assert(sizeof(E) == sizeof(int));
    int v = 0;
    std::memcpy(&v, &e, sizeof v);
    return v;
}

template <class T>
std::vector<am::coll::detail::blob> reduce_op(am_coll_team* t, am::coll::detail::kind k,
                                              const char* call, const void* in, std::size_t count,
                                              int op, int root) {
    switch (op) {
        case AM_COLL_SUM:
            return reduce_typed<T>(t, k, call, in, count, coll::sum{}, root);
        case AM_COLL_PROD:
            return reduce_typed<T>(t, k, call, in, count, coll::prod{}, root);
        case AM_COLL_MIN:
            return reduce_typed<T>(t, k, call, in, count, coll::min{}, root);
        case AM_COLL_MAX:
            return reduce_typed<T>(t, k, call, in, count, coll::max{}, root);
        case AM_COLL_LAND:
            return reduce_typed<T>(t, k, call, in, count, coll::logical_and{}, root);
        case AM_COLL_LOR:
            return reduce_typed<T>(t, k, call, in, count, coll::logical_or{}, root);
        case AM_COLL_BAND:
        case AM_COLL_BOR:
        case AM_COLL_BXOR:
            if constexpr (std::is_integral_v<T>) {
                if (op == AM_COLL_BAND)
                    return reduce_typed<T>(t, k, call, in, count, coll::bit_and{}, root);
                if (op == AM_COLL_BOR)
                    return reduce_typed<T>(t, k, call, in, count, coll::bit_or{}, root);
                return reduce_typed<T>(t, k, call, in, count, coll::bit_xor{}, root);
            }
            break;
    }
    am::capi::fail(am::errc::invalid_argument, call, t->ctx,
                   "operator " + std::to_string(op) + " is not an am_coll_op_t for this type");
}

std::vector<am::coll::detail::blob> reduce_any(am_coll_team* t, am::coll::detail::kind k,
                                               const char* call, const void* in, std::size_t count,
                                               int type, int op, int root) {
    switch (type) {
        case AM_COLL_INT32:
            return reduce_op<std::int32_t>(t, k, call, in, count, op, root);
        case AM_COLL_INT64:
            return reduce_op<std::int64_t>(t, k, call, in, count, op, root);
        case AM_COLL_UINT32:
            return reduce_op<std::uint32_t>(t, k, call, in, count, op, root);
        case AM_COLL_UINT64:
            return reduce_op<std::uint64_t>(t, k, call, in, count, op, root);
        case AM_COLL_FLOAT:
            return reduce_op<float>(t, k, call, in, count, op, root);
        case AM_COLL_DOUBLE:
            return reduce_op<double>(t, k, call, in, count, op, root);
    }
    am::capi::fail(am::errc::invalid_argument, call, t->ctx,
                   "type " + std::to_string(type) + " is not an am_coll_type_t");
}

void check_team(const am_coll_team* t, const char* call) {
    if (t == nullptr)
        throw am::error(am::errc::invalid_argument, std::string(call) + ": null team");
}

// A call on a team: a null team has no context to keep the error message in, so it only
// returns AM_ERR_INVALID_ARGUMENT.
template <class F>
am_status_t on_team(const am_coll_team* t, const char* call, F&& f) noexcept {
    if (t == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(t->ctx, call, std::forward<F>(f));
}

void copy_to(void* out, const am::coll::detail::blob& b) {
    if (out != nullptr && !b.empty()) std::memcpy(out, b.data(), b.size());
}

void copy_all(void* out, const std::vector<am::coll::detail::blob>& v) {
    auto* p = static_cast<std::byte*>(out);
    for (const auto& b : v) {
        if (!b.empty()) std::memcpy(p, b.data(), b.size());
        p += b.size();
    }
}

am::coll::detail::request bytes_request(am::coll::detail::kind k, const char* call, const void* in,
                                        std::size_t bytes, int root) {
    am::coll::detail::request r;
    r.what = k;
    r.call = call;
    r.root = root;
    r.fixed = true;
    r.fixed_bytes = bytes;
    const auto* p = static_cast<const std::byte*>(in);
    r.in.emplace_back(p, p + (in != nullptr ? bytes : 0));
    return r;
}

}  // namespace

extern "C" {

am_status_t am_coll_team_world(am_context_t* ctx, am_coll_team_t** out) AM_NOEXCEPT {
    const char* call = "am_coll_team_world";
    return guarded(ctx, call, [&] {
        am::capi::check_pointer(call, ctx, ctx, true, "context");
        am::capi::check_pointer(call, ctx, out, true, "output pointer");
        *out = new am_coll_team{coll::world(*ctx->cxx), ctx};
    });
}

am_status_t am_coll_team_split(am_coll_team_t* parent, int color, int key,
                               am_coll_team_t** out) AM_NOEXCEPT {
    const char* call = "am_coll_team_split";
    return on_team(parent, call, [&] {
        check_team(parent, call);
        am::capi::check_pointer(call, parent->ctx, out, true, "output pointer");
        *out = nullptr;
        coll::team t = parent->cxx.split(color, key);
        if (t.valid()) *out = new am_coll_team{std::move(t), parent->ctx};
    });
}

void am_coll_team_free(am_coll_team_t* team) AM_NOEXCEPT {
    delete team;
}

int am_coll_team_rank(const am_coll_team_t* team) AM_NOEXCEPT {
    return team != nullptr ? team->cxx.rank() : -1;
}

int am_coll_team_size(const am_coll_team_t* team) AM_NOEXCEPT {
    return team != nullptr ? team->cxx.size() : 0;
}

int am_coll_team_world_rank(const am_coll_team_t* team, int team_rank) AM_NOEXCEPT {
    if (team == nullptr || team_rank < 0 || team_rank >= team->cxx.size()) return -1;
    return team->cxx.world_rank(team_rank);
}

am_status_t am_coll_barrier(am_coll_team_t* team) AM_NOEXCEPT {
    const char* call = "am_coll_barrier";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::coll::detail::request r;
        r.what = am::coll::detail::kind::barrier;
        r.call = call;
        (void)am::coll::detail::run(team->cxx, std::move(r));
    });
}

am_status_t am_coll_broadcast(am_coll_team_t* team, void* buf, size_t bytes, int root) AM_NOEXCEPT {
    const char* call = "am_coll_broadcast";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, buf, bytes != 0, "buffer");
        const bool mine = team->cxx.rank() == root;
        auto out =
            am::coll::detail::run(team->cxx, bytes_request(am::coll::detail::kind::broadcast, call,
                                                           mine ? buf : nullptr, bytes, root));
        copy_to(buf, out.at(0));
    });
}

am_status_t am_coll_reduce(am_coll_team_t* team, const void* in, void* out, size_t count,
                           am_coll_type_t type, am_coll_op_t op, int root) AM_NOEXCEPT {
    const char* call = "am_coll_reduce";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, in, count != 0, "input");
        am::capi::check_pointer(call, team->ctx, out, count != 0 && team->cxx.rank() == root,
                                "output at the root");
        auto res = reduce_any(team, am::coll::detail::kind::reduce, call, in, count, as_int(type),
                              as_int(op), root);
        if (!res.empty()) copy_to(out, res[0]);
    });
}

am_status_t am_coll_allreduce(am_coll_team_t* team, const void* in, void* out, size_t count,
                              am_coll_type_t type, am_coll_op_t op) AM_NOEXCEPT {
    const char* call = "am_coll_allreduce";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, in, count != 0, "input");
        am::capi::check_pointer(call, team->ctx, out, count != 0, "output");
        auto res = reduce_any(team, am::coll::detail::kind::allreduce, call, in, count,
                              as_int(type), as_int(op), -1);
        copy_to(out, res.at(0));
    });
}

am_status_t am_coll_allreduce_fn(am_coll_team_t* team, const void* in, void* out, size_t count,
                                 size_t elem_bytes, am_coll_op_fn_t fn, void* user) AM_NOEXCEPT {
    const char* call = "am_coll_allreduce_fn";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, in, count != 0, "input");
        am::capi::check_pointer(call, team->ctx, out, count != 0, "output");
        am::capi::check_pointer(call, team->ctx, reinterpret_cast<const void*>(fn), true,
                                "operator");
        if (elem_bytes != 0 && count > SIZE_MAX / elem_bytes) {
            am::capi::fail(am::errc::too_large, call, team->ctx,
                           std::to_string(count) + " elements of " + std::to_string(elem_bytes) +
                               " bytes overflow size_t");
        }
        am::coll::detail::request r =
            bytes_request(am::coll::detail::kind::allreduce, call, in, count * elem_bytes, -1);
        r.combine = [fn, user, count, elem_bytes](am::coll::detail::blob& acc,
                                                  std::span<const std::byte> other,
                                                  bool other_first) {
            if (other_first) {
                fn(other.data(), acc.data(), count, elem_bytes, user);
            } else {
                am::coll::detail::blob hi(other.begin(), other.end());
                fn(acc.data(), hi.data(), count, elem_bytes, user);
                acc.swap(hi);
            }
        };
        auto res = am::coll::detail::run(team->cxx, std::move(r));
        copy_to(out, res.at(0));
    });
}

am_status_t am_coll_inclusive_scan(am_coll_team_t* team, const void* in, void* out, size_t count,
                                   am_coll_type_t type, am_coll_op_t op) AM_NOEXCEPT {
    const char* call = "am_coll_inclusive_scan";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, in, count != 0, "input");
        am::capi::check_pointer(call, team->ctx, out, count != 0, "output");
        auto res = reduce_any(team, am::coll::detail::kind::inclusive_scan, call, in, count,
                              as_int(type), as_int(op), -1);
        copy_to(out, res.at(0));
    });
}

am_status_t am_coll_exclusive_scan(am_coll_team_t* team, const void* in, void* out, size_t count,
                                   am_coll_type_t type, am_coll_op_t op) AM_NOEXCEPT {
    const char* call = "am_coll_exclusive_scan";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, in, count != 0, "input");
        am::capi::check_pointer(call, team->ctx, out, count != 0, "output");
        auto res = reduce_any(team, am::coll::detail::kind::exclusive_scan, call, in, count,
                              as_int(type), as_int(op), -1);
        if (!res.empty()) copy_to(out, res[0]);
    });
}

am_status_t am_coll_gather(am_coll_team_t* team, const void* in, size_t bytes, void* out,
                           int root) AM_NOEXCEPT {
    const char* call = "am_coll_gather";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, in, bytes != 0, "input");
        am::capi::check_pointer(call, team->ctx, out, bytes != 0 && team->cxx.rank() == root,
                                "output at the root");
        auto res = am::coll::detail::run(
            team->cxx, bytes_request(am::coll::detail::kind::gather, call, in, bytes, root));
        if (!res.empty()) copy_all(out, res);
    });
}

am_status_t am_coll_allgather(am_coll_team_t* team, const void* in, size_t bytes,
                              void* out) AM_NOEXCEPT {
    const char* call = "am_coll_allgather";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, in, bytes != 0, "input");
        am::capi::check_pointer(call, team->ctx, out, bytes != 0, "output");
        copy_all(out,
                 am::coll::detail::run(team->cxx, bytes_request(am::coll::detail::kind::allgather,
                                                                call, in, bytes, -1)));
    });
}

am_status_t am_coll_alltoall(am_coll_team_t* team, const void* in, size_t bytes,
                             void* out) AM_NOEXCEPT {
    const char* call = "am_coll_alltoall";
    return on_team(team, call, [&] {
        check_team(team, call);
        am::capi::check_pointer(call, team->ctx, in, bytes != 0, "input");
        am::capi::check_pointer(call, team->ctx, out, bytes != 0, "output");
        const auto n = static_cast<std::size_t>(team->cxx.size());
        am::coll::detail::request r;
        r.what = am::coll::detail::kind::alltoall;
        r.call = call;
        r.fixed = true;
        r.fixed_bytes = bytes;
        const auto* p = static_cast<const std::byte*>(in);
        for (std::size_t j = 0; j < n; ++j) {
            r.in.emplace_back(p + j * bytes, p + (j + 1) * bytes);
        }
        copy_all(out, am::coll::detail::run(team->cxx, std::move(r)));
    });
}

}  // extern "C"
