// SPDX-License-Identifier: MIT
/// @file
/// The base of am's distributed containers: `am::dist::barrier`, `am::dist::dist_object<T>`,
/// and the owner-hash every keyed container uses.
///
/// - **Teams.** A container lives on an `am::coll::team` (the world by default): every member
///   creates it, in the same order as the team's other dist objects, and every member destroys
///   it. Creation and destruction are collective and blocking (a team barrier; destruction first
///   waits, as `barrier`, for the operations in flight). They throw errc::bad_context from a
///   handler and on a team this rank is not a member of.
/// - **Operations** are `am::async` records to the owner of the key or index, coalesced per
///   destination, run there as handlers in the order each sender made them. They return at once;
///   their arguments are copied. Keys, values and visitor arguments are any types
///   <am/serial.hpp> (or <am/rpc_cereal.hpp>) sends; others are refused at compile time.
/// - **Completion.** `am::dist::barrier(team)` (or the container's `barrier()`) returns once every
///   operation of every container of the team sent before it on any member — and every
///   operation those made — has run. Local reads (`for_all`, `local_size`) see everything that
///   completed; collective reads (`size`, `gather`) call barrier first.
/// - **Thread-safety:** as `am::async`. The owner's copy is changed by handlers: with a progress
///   thread, do not read it locally while operations are in flight.
#pragma once

#include <am/async.hpp>
#include <am/coll.hpp>

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

namespace am::dist {

/// Collective over `t`: flushes this rank's coalesced operations and returns once every
/// `am::dist` operation and team-scoped async of the team sent before it (on any member), and
/// every one those sent, has run. Not from a handler.
void barrier(const coll::team& t);

/// As `am::async`, counted on team `t` (so that `barrier(t)` waits for it): runs `f(args...)`
/// (or `f(ctx, args...)`) on the member of team rank `team_rank`.
template <class F, class... A>
void async(const coll::team& t, int team_rank, F&& f, A&&... args) {
    (void)f;
    am::detail::async_send<std::remove_cvref_t<F>>(am::detail::dist_of(t.ctx(), "am::dist::async"),
                                                   t.id(), t.world_rank(team_rank),
                                                   "am::dist::async", std::forward<A>(args)...);
}

/// Where a dist object lives: its team and its number among the team's objects.
struct object_ref {
    std::uint64_t team;
    std::uint32_t number;
    std::uint32_t reserved;
};

/// Every container's base: registers this rank's part under a number its team agrees on.
class object_base {
  public:
    object_base(const object_base&) = delete;
    object_base& operator=(const object_base&) = delete;
    /// The team the object lives on.
    [[nodiscard]] const coll::team& team() const noexcept { return _team; }
    /// This rank's context.
    [[nodiscard]] context& ctx() const { return _team.ctx(); }
    /// What operations name the object by.
    [[nodiscard]] object_ref ref() const noexcept { return _ref; }
    /// Waits for the team's operations in flight (`am::dist::barrier(team())`).
    void barrier() const { am::dist::barrier(_team); }

  protected:
    /// Takes the object's number on team `t` (collective: every member creates the team's
    /// objects in the same order). Not reachable until `publish`.
    object_base(const coll::team& t, const char* type, const char* call);
    virtual ~object_base();
    /// Makes `self` (the derived object, fully constructed) reachable and waits for every member
    /// to do so (a team barrier): the end of every derived constructor.
    void publish(void* self);
    /// Waits for the team's operations in flight and makes the object unreachable: the start
    /// of every derived destructor (skipped while an exception unwinds or the job failed).
    void retire() noexcept;
    /// Collective: a barrier, then the team's sum of `local_size()` (read after it).
    template <class F>
    [[nodiscard]] std::size_t team_sum(const F& local_size) const {
        barrier();
        return static_cast<std::size_t>(
            coll::allreduce(_team, std::uint64_t{local_size()}, coll::sum{}));
    }
    /// Collective: a barrier, `reset()` of this rank's part, a team barrier.
    template <class F>
    void team_clear(const F& reset) const {
        barrier();
        reset();
        coll::barrier(_team);
    }
    /// For a container that combines operations locally (counting_set): from now until its
    /// `flush_local` runs, `am::dist::barrier` of the team calls `flush_local` first.
    void hold();
    /// Sends what the container combined locally (called by the team's barrier after `hold`).
    virtual void flush_local() {}
    /// True inside a handler of this rank (local combining is for the rank's own code).
    [[nodiscard]] bool in_handler() const noexcept;
    /// Sends a record of `F` to team rank `dest`, counted on the team.
    template <class F, class... A>
    void send(int dest, const char* call, A&&... a) const {
        am::detail::async_send<F>(*_layer, _ref.team, _world ? dest : _team.world_rank(dest), call,
                                  _ref, std::forward<A>(a)...);
    }

  private:
    friend class am::detail::dist_layer;  // calls flush_local
    coll::team _team;
    am::detail::dist_layer* _layer;
    object_ref _ref{};
    const char* _type;
    bool _world = false;  // team rank = job rank
};

namespace detail {
/// The object registered as `r` on `ctx`'s rank, as a `C` (errc::bad_context naming `call` when
/// there is none, or one of another type).
void* lookup(context& ctx, const object_ref& r, const char* type, const char* call);
template <class C>
C& local_of(context& ctx, const object_ref& r, const char* call) {
    return *static_cast<C*>(lookup(ctx, r, typeid(C).name(), call));
}

/// The member that owns a key: its hash, mixed (std::hash of an integer is the integer), modulo
/// the team's size.
template <class Hash, class K>
int owner_of(const K& k, int members) {
    std::uint64_t h = static_cast<std::uint64_t>(Hash{}(k));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return static_cast<int>(h % static_cast<std::uint64_t>(members));
}

/// Text for a key in an error: numbers and strings as themselves, others by their size.
template <class K>
std::string describe(const K& k) {
    if constexpr (std::is_arithmetic_v<K>) {
        return std::to_string(k);
    } else if constexpr (std::is_convertible_v<const K&, std::string_view>) {
        return "\"" + std::string(std::string_view(k)) + "\"";
    } else {
        return "a " + std::to_string(sizeof(K)) + "-byte " +
               std::string(am::detail::type_name<K>());
    }
}

/// Serialises (a, b) pairs — a range of pairs, or a map — for a gather.
template <class A, class B, class Range>
std::vector<std::byte> pack_pairs(const Range& r, std::size_t n) {
    std::vector<std::byte> out;
    serial_writer w(out);
    am::detail::write_length(w, n);
    for (const auto& [a, b] : r) {
        serializer<A>::write(w, a);
        serializer<B>::write(w, b);
    }
    return out;
}
/// The pairs of every packed part, in part order.
template <class A, class B>
std::vector<std::pair<A, B>> unpack_pairs(const std::vector<std::vector<std::byte>>& parts) {
    std::vector<std::pair<A, B>> out;
    for (const auto& part : parts) {
        serial_reader r(part);
        const std::size_t n = am::detail::read_length(r);
        for (std::size_t i = 0; i < n; ++i) {
            A a = serializer<A>::read(r);
            out.emplace_back(std::move(a), serializer<B>::read(r));
        }
    }
    return out;
}

/// Checks, at compile time, that a container's element type can travel.
template <class T>
constexpr bool check_element() {
    static_assert(sendable<T>,
                  "am::dist: this key, value or argument type cannot be sent. Use a trivially "
                  "copyable type, std::string, std::vector<T>, specialise am::serializer<T>, or "
                  "include <am/rpc_cereal.hpp> and give the type a cereal serialize() function");
    return true;
}

/// Runs a visitor, naming the key, the rank and the visitor when it throws.
template <class F, class K, class Call>
void visit_guarded(context& ctx, const char* call, const K& k, Call&& c) {
    try {
        c();
    } catch (const std::exception& e) {
        throw error(errc::remote, std::string(call) + ": visitor " +
                                      std::string(am::detail::type_name<F>()) + " threw for key " +
                                      describe(k) + " on rank " + std::to_string(ctx.rank()) +
                                      ": " + e.what());
    }
}

/// Drops the first `N` types of a list.
template <std::size_t N, class L>
struct drop;
template <class L>
struct drop<0, L> {
    using type = L;
};
template <std::size_t N, class H, class... T>
requires(N > 0) struct drop<N, am::detail::type_list<H, T...>>
    : drop<N - 1, am::detail::type_list<T...>> {
};
template <class L>
struct decay_list;
template <class... P>
struct decay_list<am::detail::type_list<P...>> {
    using type = am::detail::type_list<std::remove_cvref_t<P>...>;
};
/// A visitor's extra parameters: those after the `lead` it is given, decayed.
template <class F, std::size_t lead>
using extra_params =
    typename decay_list<typename drop<lead, typename am::detail::params_of<F>::type>::type>::type;
template <class C, class L>
constexpr bool first_is() {
    if constexpr (std::is_same_v<L, am::detail::type_list<>>) {
        return false;
    } else {
        return []<class H, class... T>(am::detail::type_list<H, T...>) {
            return std::is_same_v<std::remove_cvref_t<H>, C>;
        }(L{});
    }
}
/// The number of leading parameters of `F`: `with` when it takes the container first.
template <class F, class C, std::size_t without>
constexpr std::size_t lead_of() {
    using L = typename am::detail::params_of<F>::type;
    if constexpr (std::is_same_v<L, am::detail::type_list<>>) {
        return without;
    } else {
        return first_is<C, L>() ? without + 1 : without;
    }
}
template <class... P>
constexpr bool check_all(am::detail::type_list<P...>) {
    return (check_element<P>() && ...);
}
}  // namespace detail

/// One `T` per member of a team, reachable from the others (UPC++'s dist_object).
template <class T>
class dist_object : public object_base {
  public:
    /// Collective over `t`: this member's value is `value`.
    explicit dist_object(const coll::team& t, T value = T{})
        : object_base(t, typeid(dist_object).name(), "am::dist::dist_object"),
          _value(std::move(value)) {
        publish(this);
    }
    /// Collective: waits for the operations in flight (a barrier), then leaves the team.
    ~dist_object() { retire(); }
    /// The value on this rank.
    T& local() noexcept { return _value; }
    const T& local() const noexcept { return _value; }
    T& operator*() noexcept { return _value; }
    T* operator->() noexcept { return &_value; }

    /// Runs `f(value, args...)` — or `f(object, value, args...)` when `f` takes the
    /// `dist_object&` first — on the member of team rank `team_rank`, on its value.
    template <class F, class... A>
    void async(int team_rank, F&& f, A&&... args) {
        (void)f;
        using D = std::remove_cvref_t<F>;
        constexpr std::size_t lead = detail::lead_of<D, dist_object, 1>();
        using L = detail::extra_params<D, lead>;
        (void)detail::check_all(L{});
        this->template send<call<D, lead, L>>(team_rank, "am::dist::dist_object::async",
                                              std::forward<A>(args)...);
    }

  private:
    template <class D, std::size_t lead, class L>
    struct call;
    template <class D, std::size_t lead, class... P>
    struct call<D, lead, am::detail::type_list<P...>> {
        void operator()(context& ctx, object_ref r, P... p) const {
            auto& o = detail::local_of<dist_object>(ctx, r, "am::dist::dist_object::async");
            if constexpr (lead == 2) {
                D{}(o, o._value, std::move(p)...);
            } else {
                D{}(o._value, std::move(p)...);
            }
        }
    };
    T _value;
};

}  // namespace am::dist
