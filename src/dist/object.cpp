// SPDX-License-Identifier: MIT
// Dist objects: their numbers, the rank's table of them, and the team barrier.
#include "dist_layer.hpp"

#include <am/dist/object.hpp>

#include <exception>
#include <string>

namespace am::dist {

void barrier(const coll::team& t) {
    am::detail::dist_of(t.ctx(), "am::dist::barrier").barrier(t);
}

namespace {
// The context of a team this rank belongs to; errc::bad_context naming `call` otherwise.
context& member_ctx(const coll::team& t, const char* call) {
    if (!t.valid()) {
        const std::string rank =
            t.home() != nullptr ? " on rank " + std::to_string(t.home()->rank()) : "";
        throw error(errc::bad_context,
                    std::string(call) + rank +
                        ": this rank is not a member of the team (a split with "
                        "am::team::undefined, or a default team); create containers on teams "
                        "this rank belongs to");
    }
    return t.ctx();
}
}  // namespace

object_base::object_base(const coll::team& t, const char* type, const char* call)
    : _team(t), _layer(&am::detail::dist_of(member_ctx(t, call), call)), _type(type) {
    core::check_wait(t.ctx(), call);
    _ref.team = t.id();
    _ref.number = _layer->next_object(_ref.team);
    _world = _ref.team == coll::world(t.ctx()).id();
}

void object_base::publish(void* self) {
    _layer->add_object(_ref.team, _ref.number, self, _type);
    // Every member has its part before any operation can reach it.
    coll::barrier(_team);
}

void object_base::retire() noexcept {
    try {
        // Not while an exception unwinds this rank (the others may never come) or the job failed.
        if (std::uncaught_exceptions() == 0 && !core::job_failed(_team.ctx())) {
            am::dist::barrier(_team);
        }
    } catch (const std::exception& e) {
        // A failed job: operations still in flight for this object cannot run anywhere now.
        (void)e;
    }
    _layer->remove_object(_ref.team, _ref.number);
}

object_base::~object_base() {
    _layer->unhold(this);
}

void object_base::hold() {
    _layer->hold(this);
}

bool object_base::in_handler() const noexcept {
    return core::in_handler(_team.ctx());
}

namespace detail {
void* lookup(context& ctx, const object_ref& r, const char* type, const char* call) {
    return am::detail::dist_running(ctx, call).object(r.team, r.number, type, call);
}
}  // namespace detail

}  // namespace am::dist
