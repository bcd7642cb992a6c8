// SPDX-License-Identifier: MIT
/// @file
/// `am::dist::disjoint_set<T>`: union-find over a team (connected components), each item's
/// parent kept by the member `Hash` maps it to. Semantics common to the containers:
/// <am/dist/object.hpp>.
///
/// `async_union(a, b)` runs Rem's algorithm with splicing as messages: every set's
/// representative is its smallest item (`T` is ordered with `<`), each step changes one parent
/// to a smaller item of the same set at that item's owner, so unions from all members may
/// interleave freely. `all_compress()` then points every item at its representative by pointer
/// jumping (O(log n) rounds).
#pragma once

#include <am/dist/object.hpp>

#include <cstdint>
#include <unordered_map>
#include <utility>
#include <vector>

namespace am::dist {

template <class T, class Hash = std::hash<T>>
class disjoint_set : public object_base {
    static_assert(detail::check_element<T>());

  public:
    using value_type = T;
    explicit disjoint_set(const coll::team& t)
        : object_base(t, typeid(disjoint_set).name(), "am::dist::disjoint_set") {
        publish(this);
    }
    /// Collective: waits for the operations in flight (a barrier), then leaves the team.
    ~disjoint_set() { retire(); }
    explicit disjoint_set(context& ctx) : disjoint_set(coll::world(ctx)) {}

    [[nodiscard]] int owner(const T& v) const { return detail::owner_of<Hash>(v, team().size()); }
    /// Adds `v` as a set of its own unless it is already there.
    void insert(const T& v) {
        this->template send<add>(owner(v), "am::dist::disjoint_set::insert", v);
    }
    /// Joins the sets of `a` and `b` (adding them first when absent).
    void async_union(const T& a, const T& b) {
        if (b < a) {
            link(a, b);
        } else if (a < b) {
            link(b, a);
        } else {
            insert(a);  // a set of its own
        }
    }
    /// Collective: points every item at its set's representative (after a barrier).
    void all_compress() {
        barrier();
        for (;;) {
            _changed = 0;
            // Collected first: a send that waits for room runs handlers, which may add items.
            std::vector<std::pair<T, T>> asks;
            for (const auto& [item, parent] : _parent) {
                if (!(parent == item)) asks.emplace_back(parent, item);
            }
            for (const auto& [parent, item] : asks) {
                this->template send<ask>(owner(parent), "am::dist::disjoint_set::all_compress",
                                         parent, item, team().rank());
            }
            barrier();
            if (coll::allreduce(team(), _changed, coll::sum{}) == 0) return;
        }
    }
    /// Calls `f(item, parent)` for every item this rank keeps; after all_compress the parent is
    /// the representative.
    template <class F>
    void for_all(F&& f) const {
        for (const auto& [item, parent] : _parent) f(item, parent);
    }
    [[nodiscard]] std::size_t local_size() const noexcept { return _parent.size(); }
    /// Collective: items on the team (after a barrier).
    [[nodiscard]] std::size_t size() {
        return team_sum([&] { return _parent.size(); });
    }
    /// Collective: the number of sets (after a barrier).
    [[nodiscard]] std::size_t num_sets() {
        barrier();
        std::uint64_t roots = 0;
        for (const auto& [item, parent] : _parent) roots += (parent == item) ? 1 : 0;
        return static_cast<std::size_t>(coll::allreduce(team(), roots, coll::sum{}));
    }
    /// Collective: every (item, parent) on team rank `root`, after all_compress.
    [[nodiscard]] std::vector<std::pair<T, T>> gather(int root) {
        all_compress();
        return detail::unpack_pairs<T, T>(
            coll::gather(team(), detail::pack_pairs<T, T>(_parent, _parent.size()), root));
    }

  private:
    /// Links `hi` to the smaller `lo` at `hi`'s owner.
    void link(const T& hi, const T& lo) {
        this->template send<merge>(owner(hi), "am::dist::disjoint_set::async_union", hi, lo);
    }
    T& parent_of(const T& v) { return _parent.try_emplace(v, v).first->second; }
    struct add {
        void operator()(context& ctx, object_ref r, T v) const {
            (void)detail::local_of<disjoint_set>(ctx, r, "am::dist::disjoint_set::insert")
                .parent_of(v);
        }
    };
    // At hi's owner, lo < hi: hi's parent p becomes min(p, lo); the larger of p and lo, when
    // hi had another parent, is then linked to the smaller (the sets stay the same, parents only
    // decrease, so it ends).
    struct merge {
        void operator()(context& ctx, object_ref r, T hi, T lo) const {
            auto& s = detail::local_of<disjoint_set>(ctx, r, "am::dist::disjoint_set::async_union");
            if (hi == lo) return;
            T& p = s.parent_of(hi);
            if (p == hi) {
                p = lo;  // lo must exist too, at its owner
                if (s.owner(lo) == s.team().rank()) {
                    (void)s.parent_of(lo);
                } else {
                    s.insert(lo);
                }
                return;
            }
            if (p == lo) return;
            const T old = p;
            if (lo < p) p = lo;
            if (old < lo) {
                s.link(lo, old);
            } else {
                s.link(old, lo);
            }
        }
    };
    // At the owner of `parent`: tell `item`'s owner (team rank `from`) parent's parent.
    struct ask {
        void operator()(context& ctx, object_ref r, T parent, T item, int from) const {
            auto& s =
                detail::local_of<disjoint_set>(ctx, r, "am::dist::disjoint_set::all_compress");
            const T grand = s.parent_of(parent);
            if (!(grand == parent))
                s.template send<answer>(from, "am::dist::disjoint_set::all_compress", item, grand);
        }
    };
    struct answer {
        void operator()(context& ctx, object_ref r, T item, T grand) const {
            auto& s =
                detail::local_of<disjoint_set>(ctx, r, "am::dist::disjoint_set::all_compress");
            T& p = s.parent_of(item);
            if (grand < p) {
                p = grand;
                ++s._changed;
            }
        }
    };
    std::unordered_map<T, T, Hash> _parent;
    std::uint64_t _changed = 0;
};

}  // namespace am::dist
