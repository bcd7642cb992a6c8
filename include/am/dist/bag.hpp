// SPDX-License-Identifier: MIT
/// @file
/// `am::dist::bag<T>`: an unordered collection spread over a team, items dealt round-robin (or
/// to a chosen member). Semantics common to the containers: <am/dist/object.hpp>.
#pragma once

#include <am/dist/object.hpp>

#include <vector>

namespace am::dist {

template <class T>
class bag : public object_base {
    static_assert(detail::check_element<T>());

  public:
    using value_type = T;
    explicit bag(const coll::team& t)
        : object_base(t, typeid(bag).name(), "am::dist::bag"), _next(t.rank()) {
        publish(this);
    }
    /// Collective: waits for the operations in flight (a barrier), then leaves the team.
    ~bag() { retire(); }
    explicit bag(context& ctx) : bag(coll::world(ctx)) {}

    /// Adds `v` on the next member in round-robin order (starting after this rank).
    void insert(const T& v) {
        _next = (_next + 1) % team().size();
        insert(v, _next);
    }
    /// Adds `v` on team rank `member`.
    void insert(const T& v, int member) {
        this->template send<add>(member, "am::dist::bag::insert", v);
    }
    /// Calls `f(item)` for every item this rank keeps.
    template <class F>
    void for_all(F&& f) {
        for (T& v : _local) f(v);
    }
    [[nodiscard]] std::vector<T>& local() noexcept { return _local; }
    [[nodiscard]] std::size_t local_size() const noexcept { return _local.size(); }
    /// Collective: items on the team (after a barrier).
    [[nodiscard]] std::size_t size() {
        return team_sum([&] { return _local.size(); });
    }
    /// Collective: removes every item (after a barrier).
    void clear() {
        team_clear([&] { _local.clear(); });
    }
    /// Collective: every item on team rank `root` (empty elsewhere), after a barrier.
    [[nodiscard]] std::vector<T> gather(int root) {
        barrier();
        std::vector<T> out;
        for (auto& part : coll::gather(team(), _local, root)) {
            for (T& v : part) out.push_back(std::move(v));
        }
        return out;
    }

  private:
    struct add {
        void operator()(context& ctx, object_ref r, T v) const {
            detail::local_of<bag>(ctx, r, "am::dist::bag::insert")._local.push_back(std::move(v));
        }
    };
    std::vector<T> _local;
    int _next;
};

}  // namespace am::dist
