// SPDX-License-Identifier: MIT
/// @file
/// `am::dist::array<T>`: a fixed-size array spread over a team in blocks or cyclically.
/// Semantics common to the containers: <am/dist/object.hpp>.
#pragma once

#include <am/dist/object.hpp>

#include <algorithm>
#include <cstdint>
#include <vector>

namespace am::dist {

/// How an array's indices are dealt to the members.
enum class layout {
    block,  ///< member r keeps a contiguous block of ceil(n / members) indices
    cyclic  ///< index i is kept by member i mod members
};

template <class T>
class array : public object_base {
    static_assert(detail::check_element<T>());

  public:
    using value_type = T;
    /// Collective over `t`: `n` elements, each `init`, the same `n` and layout on every member.
    array(const coll::team& t, std::uint64_t n, layout l = layout::block, const T& init = T{})
        : object_base(t, typeid(array).name(), "am::dist::array"), _n(n), _layout(l) {
        const auto members = static_cast<std::uint64_t>(t.size());
        _block = std::max<std::uint64_t>(1, (n + members - 1) / members);
        _local.assign(static_cast<std::size_t>(count_on(t.rank())), init);
        publish(this);
    }
    /// Collective: waits for the operations in flight (a barrier), then leaves the team.
    ~array() { retire(); }
    array(context& ctx, std::uint64_t n, layout l = layout::block, const T& init = T{})
        : array(coll::world(ctx), n, l, init) {}

    [[nodiscard]] std::uint64_t size() const noexcept { return _n; }
    /// The team rank keeping index `i`.
    [[nodiscard]] int owner(std::uint64_t i) const {
        return static_cast<int>(
            _layout == layout::block ? i / _block : i % static_cast<std::uint64_t>(team().size()));
    }
    /// Sets element `i` at its owner. errc::bad_rank (nothing sent) for `i` ≥ size().
    void set(std::uint64_t i, const T& v) {
        check(i, "am::dist::array::set");
        this->template send<assign>(owner(i), "am::dist::array::set", i, v);
    }
    /// Runs `f(i, element, args...)` — or `f(array, i, element, args...)` — at `i`'s owner.
    template <class F, class... A>
    void async_visit(std::uint64_t i, F&& f, A&&... args) {
        (void)f;
        check(i, "am::dist::array::async_visit");
        using D = std::remove_cvref_t<F>;
        constexpr std::size_t lead = detail::lead_of<D, array, 2>();
        using L = detail::extra_params<D, lead>;
        static_assert(detail::check_all(L{}));
        this->template send<visit<D, lead, L>>(owner(i), "am::dist::array::async_visit", i,
                                               std::forward<A>(args)...);
    }
    /// Calls `f(index, element)` for every element this rank keeps.
    template <class F>
    void for_all(F&& f) {
        for (std::size_t j = 0; j < _local.size(); ++j) f(global(j), _local[j]);
    }
    [[nodiscard]] std::vector<T>& local() noexcept { return _local; }
    [[nodiscard]] std::size_t local_size() const noexcept { return _local.size(); }
    /// Collective: the whole array on team rank `root` (empty elsewhere), after a barrier.
    [[nodiscard]] std::vector<T> gather(int root) {
        barrier();
        auto parts = coll::gather(team(), _local, root);
        std::vector<T> out;
        if (parts.empty()) return out;
        out.resize(static_cast<std::size_t>(_n));
        for (std::size_t r = 0; r < parts.size(); ++r) {
            for (std::size_t j = 0; j < parts[r].size(); ++j) {
                out[static_cast<std::size_t>(global_of(static_cast<int>(r), j))] =
                    std::move(parts[r][j]);
            }
        }
        return out;
    }

  private:
    [[nodiscard]] std::uint64_t count_on(int r) const {
        const auto members = static_cast<std::uint64_t>(team().size());
        const auto ur = static_cast<std::uint64_t>(r);
        if (_layout == layout::cyclic) return _n / members + (ur < _n % members ? 1 : 0);
        const std::uint64_t lo = std::min(_n, ur * _block);
        return std::min(_n, lo + _block) - lo;
    }
    [[nodiscard]] std::uint64_t global_of(int r, std::size_t j) const {
        const auto ur = static_cast<std::uint64_t>(r);
        return _layout == layout::block ? ur * _block + j
                                        : j * static_cast<std::uint64_t>(team().size()) + ur;
    }
    [[nodiscard]] std::uint64_t global(std::size_t j) const { return global_of(team().rank(), j); }
    [[nodiscard]] std::size_t local_index(std::uint64_t i) const {
        return static_cast<std::size_t>(
            _layout == layout::block ? i % _block : i / static_cast<std::uint64_t>(team().size()));
    }
    void check(std::uint64_t i, const char* call) const {
        if (i >= _n) {
            throw error(errc::bad_rank, std::string(call) + " on rank " +
                                            std::to_string(ctx().rank()) + ": index " +
                                            std::to_string(i) + " is outside the array of " +
                                            std::to_string(_n) + " elements");
        }
    }
    struct assign {
        void operator()(context& ctx, object_ref r, std::uint64_t i, T v) const {
            auto& a = detail::local_of<array>(ctx, r, "am::dist::array::set");
            a._local[a.local_index(i)] = std::move(v);
        }
    };
    template <class D, std::size_t lead, class L>
    struct visit;
    template <class D, std::size_t lead, class... P>
    struct visit<D, lead, am::detail::type_list<P...>> {
        void operator()(context& ctx, object_ref r, std::uint64_t i, P... p) const {
            const char* call = "am::dist::array::async_visit";
            auto& a = detail::local_of<array>(ctx, r, call);
            T& v = a._local[a.local_index(i)];
            detail::visit_guarded<D>(ctx, call, i, [&] {
                if constexpr (lead == 3) {
                    D{}(a, i, v, std::move(p)...);
                } else {
                    D{}(i, v, std::move(p)...);
                }
            });
        }
    };
    std::uint64_t _n;
    layout _layout;
    std::uint64_t _block = 1;
    std::vector<T> _local;
};

}  // namespace am::dist
