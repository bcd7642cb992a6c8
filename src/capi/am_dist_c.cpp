// SPDX-License-Identifier: MIT
// The C API of the distributed containers (am/am_dist.h) over am::dist::map<std::string,
// std::string> and am::dist::set<std::string>.
#include "capi_coll.hpp"

#include <am/am_dist.h>
#include <am/dist/map.hpp>
#include <am/dist/set.hpp>

#include <string>

struct am_dist_map {
    am_dist_map(const am::coll::team& t, am_context* c) : cxx(t), ctx(c) {}
    am::dist::map<std::string, std::string> cxx;
    am_context* ctx;
};

struct am_dist_set {
    am_dist_set(const am::coll::team& t, am_context* c) : cxx(t), ctx(c) {}
    am::dist::set<std::string> cxx;
    am_context* ctx;
};

namespace {

using am::capi::check_pointer;
using am::capi::guarded;

// A call on a container: a null one has no context to keep the error message in, so it only
// returns AM_ERR_INVALID_ARGUMENT.
template <class C, class F>
am_status_t on(C* c, const char* call, F&& f) noexcept {
    if (c == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(c->ctx, call, std::forward<F>(f));
}

// The team a container is created on: `team`, or the world when it is null.
am::coll::team team_of(am_context* ctx, const am_coll_team* team, const char* call) {
    if (team == nullptr) return am::coll::world(*ctx->cxx);
    if (team->ctx != ctx) {
        am::capi::fail(am::errc::invalid_argument, call, ctx,
                       "the team belongs to another context (rank " +
                           std::to_string(team->ctx->cxx->rank()) + ")");
    }
    return team->cxx;
}

// `len` bytes at `p` as a key or value (a null `p` with a non-zero length refused).
std::string bytes(const char* call, const am_context* ctx, const void* p, std::size_t len,
                  const char* what) {
    check_pointer(call, ctx, p, len != 0, what);
    return len == 0 ? std::string() : std::string(static_cast<const char*>(p), len);
}

// The container's collective read at `root`: refused, before anything is sent, when `root` is
// outside the team or `fn` is null at the root.
void check_root(const char* call, const am_context* ctx, const am::coll::team& t, int root,
                const void* fn) {
    if (root < 0 || root >= t.size()) {
        am::capi::fail(am::errc::bad_rank, call, ctx,
                       "root " + std::to_string(root) + " out of range [0, " +
                           std::to_string(t.size()) + ") of the container's team");
    }
    check_pointer(call, ctx, fn, t.rank() == root, "callback at the root");
}

template <class C, class Make>
am_status_t create(am_context_t* ctx, am_coll_team_t* team, C** out, const char* call,
                   Make make) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return guarded(ctx, call, [&] {
        check_pointer(call, ctx, out, true, "output pointer");
        *out = nullptr;
        *out = make(team_of(ctx, team, call));
    });
}

// Waits for the operations in flight (reporting a failure), then frees the handle: its
// destructor leaves the team (skipping its own barrier when the job failed). Refused in a
// handler, where the barrier cannot wait: the handle is kept then, for the rank to free.
template <class C>
am_status_t free_container(C* c, const char* call) noexcept {
    if (c == nullptr) return AM_OK;
    const am_status_t st = guarded(c->ctx, call, [&] { c->cxx.barrier(); });
    if (st != AM_ERR_BAD_CONTEXT) delete c;
    return st;
}

}  // namespace

extern "C" {

// ------------------------------------------------------------------------------------- map

am_status_t am_dist_map_create(am_context_t* ctx, am_coll_team_t* team,
                               am_dist_map_t** out) AM_NOEXCEPT {
    return create(ctx, team, out, "am_dist_map_create",
                  [ctx](const am::coll::team& t) { return new am_dist_map(t, ctx); });
}

am_status_t am_dist_map_free(am_dist_map_t* map) AM_NOEXCEPT {
    return free_container(map, "am_dist_map_free");
}

am_status_t am_dist_map_insert(am_dist_map_t* map, const void* key, size_t key_len,
                               const void* value, size_t value_len) AM_NOEXCEPT {
    const char* call = "am_dist_map_insert";
    return on(map, call, [&] {
        std::string k = bytes(call, map->ctx, key, key_len, "key");
        std::string v = bytes(call, map->ctx, value, value_len, "value");
        map->cxx.insert(k, v);
    });
}

am_status_t am_dist_map_insert_or_assign(am_dist_map_t* map, const void* key, size_t key_len,
                                         const void* value, size_t value_len) AM_NOEXCEPT {
    const char* call = "am_dist_map_insert_or_assign";
    return on(map, call, [&] {
        std::string k = bytes(call, map->ctx, key, key_len, "key");
        std::string v = bytes(call, map->ctx, value, value_len, "value");
        map->cxx.insert_or_assign(k, v);
    });
}

am_status_t am_dist_map_erase(am_dist_map_t* map, const void* key, size_t key_len) AM_NOEXCEPT {
    const char* call = "am_dist_map_erase";
    return on(map, call, [&] { map->cxx.erase(bytes(call, map->ctx, key, key_len, "key")); });
}

am_status_t am_dist_map_barrier(am_dist_map_t* map) AM_NOEXCEPT {
    return on(map, "am_dist_map_barrier", [&] { map->cxx.barrier(); });
}

am_status_t am_dist_map_size(am_dist_map_t* map, size_t* out) AM_NOEXCEPT {
    const char* call = "am_dist_map_size";
    return on(map, call, [&] {
        check_pointer(call, map->ctx, out, true, "output pointer");
        *out = map->cxx.size();
    });
}

size_t am_dist_map_local_size(const am_dist_map_t* map) AM_NOEXCEPT {
    return map != nullptr ? map->cxx.local_size() : 0;
}

am_status_t am_dist_map_for_all(am_dist_map_t* map, am_dist_map_entry_fn_t fn,
                                void* user) AM_NOEXCEPT {
    const char* call = "am_dist_map_for_all";
    return on(map, call, [&] {
        check_pointer(call, map->ctx, reinterpret_cast<const void*>(fn), true, "callback");
        map->cxx.for_all([&](const std::string& k, const std::string& v) {
            fn(k.data(), k.size(), v.data(), v.size(), user);
        });
    });
}

am_status_t am_dist_map_gather(am_dist_map_t* map, int root, am_dist_map_entry_fn_t fn,
                               void* user) AM_NOEXCEPT {
    const char* call = "am_dist_map_gather";
    return on(map, call, [&] {
        check_root(call, map->ctx, map->cxx.team(), root, reinterpret_cast<const void*>(fn));
        const auto all = map->cxx.gather(root);
        for (const auto& [k, v] : all) fn(k.data(), k.size(), v.data(), v.size(), user);
    });
}

// ------------------------------------------------------------------------------------- set

am_status_t am_dist_set_create(am_context_t* ctx, am_coll_team_t* team,
                               am_dist_set_t** out) AM_NOEXCEPT {
    return create(ctx, team, out, "am_dist_set_create",
                  [ctx](const am::coll::team& t) { return new am_dist_set(t, ctx); });
}

am_status_t am_dist_set_free(am_dist_set_t* set) AM_NOEXCEPT {
    return free_container(set, "am_dist_set_free");
}

am_status_t am_dist_set_insert(am_dist_set_t* set, const void* key, size_t key_len) AM_NOEXCEPT {
    const char* call = "am_dist_set_insert";
    return on(set, call, [&] { set->cxx.insert(bytes(call, set->ctx, key, key_len, "key")); });
}

am_status_t am_dist_set_erase(am_dist_set_t* set, const void* key, size_t key_len) AM_NOEXCEPT {
    const char* call = "am_dist_set_erase";
    return on(set, call, [&] { set->cxx.erase(bytes(call, set->ctx, key, key_len, "key")); });
}

am_status_t am_dist_set_barrier(am_dist_set_t* set) AM_NOEXCEPT {
    return on(set, "am_dist_set_barrier", [&] { set->cxx.barrier(); });
}

am_status_t am_dist_set_size(am_dist_set_t* set, size_t* out) AM_NOEXCEPT {
    const char* call = "am_dist_set_size";
    return on(set, call, [&] {
        check_pointer(call, set->ctx, out, true, "output pointer");
        *out = set->cxx.size();
    });
}

size_t am_dist_set_local_size(const am_dist_set_t* set) AM_NOEXCEPT {
    return set != nullptr ? set->cxx.local_size() : 0;
}

am_status_t am_dist_set_for_all(am_dist_set_t* set, am_dist_set_key_fn_t fn,
                                void* user) AM_NOEXCEPT {
    const char* call = "am_dist_set_for_all";
    return on(set, call, [&] {
        check_pointer(call, set->ctx, reinterpret_cast<const void*>(fn), true, "callback");
        set->cxx.for_all([&](const std::string& k) { fn(k.data(), k.size(), user); });
    });
}

am_status_t am_dist_set_gather(am_dist_set_t* set, int root, am_dist_set_key_fn_t fn,
                               void* user) AM_NOEXCEPT {
    const char* call = "am_dist_set_gather";
    return on(set, call, [&] {
        check_root(call, set->ctx, set->cxx.team(), root, reinterpret_cast<const void*>(fn));
        const auto all = set->cxx.gather(root);
        for (const auto& k : all) fn(k.data(), k.size(), user);
    });
}

}  // extern "C"
