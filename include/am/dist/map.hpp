// SPDX-License-Identifier: MIT
/// @file
/// `am::dist::map<K, V, Hash>`: a hash map spread over a team, each key kept by the member
/// `Hash` maps it to. Semantics common to the containers: <am/dist/object.hpp>.
#pragma once

#include <am/dist/object.hpp>

#include <optional>
#include <unordered_map>
#include <utility>
#include <vector>

namespace am::dist {

template <class K, class V, class Hash = std::hash<K>>
class map : public object_base {
    static_assert(detail::check_element<K>() && detail::check_element<V>());

  public:
    using key_type = K;
    using mapped_type = V;
    using local_map = std::unordered_map<K, V, Hash>;

    /// Collective over `t` (the world by default in the constructor taking a context).
    explicit map(const coll::team& t) : object_base(t, typeid(map).name(), "am::dist::map") {
        publish(this);
    }
    /// Collective: waits for the operations in flight (a barrier), then leaves the team.
    ~map() { retire(); }
    explicit map(context& ctx) : map(coll::world(ctx)) {}

    /// The team rank that keeps `k`.
    [[nodiscard]] int owner(const K& k) const { return detail::owner_of<Hash>(k, team().size()); }

    /// Sets `k` to `v` at its owner (replacing a value there).
    void insert_or_assign(const K& k, const V& v) {
        this->template send<assign>(owner(k), "am::dist::map::insert_or_assign", k, v);
    }
    /// Inserts `k` with `v` at its owner unless `k` is there already.
    void insert(const K& k, const V& v) {
        this->template send<add>(owner(k), "am::dist::map::insert", k, v);
    }
    /// Removes `k` at its owner (nothing when absent).
    void erase(const K& k) { this->template send<remove>(owner(k), "am::dist::map::erase", k); }

    /// Runs `f(key, value, args...)` — or `f(map, key, value, args...)`, where `map` is the
    /// owner's part (to send further operations) — at `k`'s owner on its value, default-
    /// constructed first when `k` is absent. `f` is a lambda without captures or an empty
    /// function object; an exception it throws fails the job naming the key, rank and visitor.
    template <class F, class... A>
    void async_visit(const K& k, F&& f, A&&... args) {
        (void)f;
        using D = std::remove_cvref_t<F>;
        constexpr std::size_t lead = detail::lead_of<D, map, 2>();
        using L = detail::extra_params<D, lead>;
        static_assert(detail::check_all(L{}));
        this->template send<visit<D, lead, L>>(owner(k), "am::dist::map::async_visit", k,
                                               std::forward<A>(args)...);
    }
    /// As async_visit, but nothing runs when `k` is absent at its owner.
    template <class F, class... A>
    void async_visit_if_exists(const K& k, F&& f, A&&... args) {
        (void)f;
        using D = std::remove_cvref_t<F>;
        constexpr std::size_t lead = detail::lead_of<D, map, 2>();
        using L = detail::extra_params<D, lead>;
        static_assert(detail::check_all(L{}));
        this->template send<visit<D, lead, L, false>>(
            owner(k), "am::dist::map::async_visit_if_exists", k, std::forward<A>(args)...);
    }

    /// Calls `f(key, value)` for every entry this rank keeps.
    template <class F>
    void for_all(F&& f) {
        for (auto& [k, v] : _local) f(k, v);
    }
    /// This rank's entries.
    [[nodiscard]] local_map& local() noexcept { return _local; }
    [[nodiscard]] std::size_t local_size() const noexcept { return _local.size(); }
    /// Collective: the number of entries on the team (after a barrier).
    [[nodiscard]] std::size_t size() {
        return team_sum([&] { return _local.size(); });
    }
    /// Collective: removes every entry (after a barrier).
    void clear() {
        team_clear([&] { _local.clear(); });
    }
    /// Collective: every entry, on team rank `root` (empty elsewhere), after a barrier. Order:
    /// by member, then as each member keeps them.
    [[nodiscard]] std::vector<std::pair<K, V>> gather(int root) {
        barrier();
        return detail::unpack_pairs<K, V>(
            coll::gather(team(), detail::pack_pairs<K, V>(_local, _local.size()), root));
    }

  private:
    static map& at(context& ctx, const object_ref& r, const char* call) {
        return detail::local_of<map>(ctx, r, call);
    }
    struct assign {
        void operator()(context& ctx, object_ref r, K k, V v) const {
            at(ctx, r, "am::dist::map::insert_or_assign")
                ._local.insert_or_assign(std::move(k), std::move(v));
        }
    };
    struct add {
        void operator()(context& ctx, object_ref r, K k, V v) const {
            at(ctx, r, "am::dist::map::insert")._local.try_emplace(std::move(k), std::move(v));
        }
    };
    struct remove {
        void operator()(context& ctx, object_ref r, K k) const {
            at(ctx, r, "am::dist::map::erase")._local.erase(k);
        }
    };
    template <class D, std::size_t lead, class L, bool create = true>
    struct visit;
    template <class D, std::size_t lead, bool create, class... P>
    struct visit<D, lead, am::detail::type_list<P...>, create> {
        void operator()(context& ctx, object_ref r, K k, P... p) const {
            const char* call =
                create ? "am::dist::map::async_visit" : "am::dist::map::async_visit_if_exists";
            map& m = at(ctx, r, call);
            V* v = nullptr;
            if constexpr (create) {
                v = &m._local[k];
            } else {
                const auto it = m._local.find(k);
                if (it == m._local.end()) return;
                v = &it->second;
            }
            detail::visit_guarded<D>(ctx, call, k, [&] {
                if constexpr (lead == 3) {
                    D{}(m, std::as_const(k), *v, std::move(p)...);
                } else {
                    D{}(std::as_const(k), *v, std::move(p)...);
                }
            });
        }
    };

    local_map _local;
};

}  // namespace am::dist
