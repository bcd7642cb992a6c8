// SPDX-License-Identifier: MIT
/// @file
/// Collectives and teams (`am::coll`): broadcast, reduce, allreduce, inclusive and exclusive
/// scan, gather, allgather and all-to-all over values of user types, and barriers, on teams —
/// the job's world team or teams split from another team, as MPI_Comm_split.
///
/// Algorithms run over active messages in O(log P) rounds on every transport: a dissemination
/// barrier, binomial trees for broadcast (large broadcasts pipelined in medium-size segments)
/// and reduce, recursive doubling for allreduce (reduce-scatter + allgather for large
/// element-wise ones), a Hillis-Steele scan, Bruck's allgather, direct gather and all-to-all.
/// Non-commutative operators are applied in rank order: the result is op(... op(op(v0, v1), v2)
/// ..., v(P-1)) up to associativity.
///
/// Values: a trivially copyable `T` travels as its bytes; any other `T` that am::serializer
/// can send (serial.hpp: std::string, std::vector, user specialisations; cereal types with
/// <am/rpc_cereal.hpp>) travels serialized, so a set-union allreduce over std::vector works.
/// Operators: the built-in function objects below, or any callable `T(T, T)` — the same on
/// every rank (its type is part of the match check).
///
/// Matching and errors: every member of a team makes the same collective calls on it in the
/// same order (MPI's rule); collectives of different teams never match each other. A message
/// of a collective carries its kind, root, operator and (where ranks must agree) size: a rank
/// that receives one that differs from its own call fails the job with errc::collective_mismatch
/// naming the team, both ranks and both calls. A mismatch in which no message passes between
/// the differing ranks (e.g. every rank names another rank as a broadcast's root) waits: with
/// config::epoch_timeout (`AM_EPOCH_TIMEOUT`) set, a blocking collective waiting that long fails
/// the job (errc::timeout) naming the team, the call and the rank it waits for. A message for a
/// collective its receiver has already finished fails the job from the handler: the receiver's next
/// blocking collective throws errc::collective_mismatch, every other wait errc::aborted carrying
/// the text. Bad arguments throw am::error naming the call and the rank before anything is sent: a
/// root out of range (errc::bad_rank); an all-to-all whose input does not divide by the team size,
/// an output span shorter than the input, a team this rank is not a member of
/// (errc::invalid_argument).
///
/// Blocking calls poll the rank's context while they wait (other handlers keep running); they
/// refuse to run inside a plain handler (errc::bad_context) and block an optimistic one. The
/// `_nb` forms return an am::future at once; the collective progresses whenever the rank polls
/// (any wait, poll or blocking call) and the future is ready when it completes. Buffers passed
/// to an `_nb` form (a broadcast's or a reduction's spans) must stay valid until then.
///
/// Thread-safety: a team belongs to its rank; calls on it come from the rank's thread (or any
/// thread under config::thread_multiple, one collective call at a time per team).
#pragma once

#include <am/context.hpp>
#include <am/detail/coll.hpp>
#include <am/future.hpp>

#include <concepts>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace am::coll {

// ------------------------------------------------------------------------------------- teams

/// A set of ranks with their own numbering (0 … size()-1 in the order of their keys) on which
/// collectives run. Copies share the team (and its count of collectives). A default-constructed
/// team, or the result of `split` with `team::undefined`, has no members here: collectives on it
/// throw errc::invalid_argument.
class team {
  public:
    /// The color of a rank that joins no new team in `split`.
    static constexpr int undefined = -1;

    team() = default;
    /// Whether this rank is a member (false for a default team or an undefined color's).
    [[nodiscard]] bool valid() const noexcept { return static_cast<bool>(_st); }
    /// This rank's number in the team.
    [[nodiscard]] int rank() const;
    /// Number of members.
    [[nodiscard]] int size() const;
    /// The job (world) rank of member `team_rank`; errc::bad_rank when out of range.
    [[nodiscard]] int world_rank(int team_rank) const;
    /// The team rank of job rank `world_rank`, or -1 when it is not a member.
    [[nodiscard]] int team_rank(int world_rank) const;
    /// The rank's context.
    [[nodiscard]] context& ctx() const;
    /// A number for the team, the same on every member and different for every team of the
    /// job (world is 1). Libraries key their per-team state by it.
    [[nodiscard]] std::uint64_t id() const;
    /// A name for the errors: "world", or "split #2 of world (color 3)".
    [[nodiscard]] std::string name() const;
    /// Collective over this team: a new team of the members that pass the same `color` (≥ 0),
    /// numbered by (`key`, rank in this team); `undefined` joins none and returns an invalid
    /// team. Teams of one rank are fine. A negative color other than `undefined` throws
    /// errc::invalid_argument. Blocking, as the collectives.
    [[nodiscard]] team split(int color, int key) const;

    friend bool operator==(const team& a, const team& b) noexcept { return a._st == b._st; }
    /// For the library.
    [[nodiscard]] const std::shared_ptr<detail::team_state>& state() const noexcept { return _st; }
    explicit team(std::shared_ptr<detail::team_state> st) noexcept : _st(std::move(st)) {}
    /// For the library: no members here, but the rank is known (an undefined color's team),
    /// so errors can name it.
    explicit team(context* ctx) noexcept : _ctx(ctx) {}
    /// For the library: the context of a team without members here, or null.
    [[nodiscard]] context* home() const noexcept { return _ctx; }

  private:
    std::shared_ptr<detail::team_state> _st;
    context* _ctx = nullptr;
};

/// The team of every rank of the job (team rank = job rank). Every call returns the same team.
[[nodiscard]] team world(context& ctx);

// --------------------------------------------------------------------------------- operators

/// Built-in operators (function objects, usable with any type that has the operator).
struct sum {
    static constexpr std::uint32_t builtin_id = 1;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return a + b;
    }
};
struct prod {
    static constexpr std::uint32_t builtin_id = 2;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return a * b;
    }
};
struct min {
    static constexpr std::uint32_t builtin_id = 3;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return b < a ? b : a;
    }
};
struct max {
    static constexpr std::uint32_t builtin_id = 4;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return a < b ? b : a;
    }
};
struct bit_and {
    static constexpr std::uint32_t builtin_id = 5;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return a & b;
    }
};
struct bit_or {
    static constexpr std::uint32_t builtin_id = 6;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return a | b;
    }
};
struct bit_xor {
    static constexpr std::uint32_t builtin_id = 7;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return a ^ b;
    }
};
struct logical_and {
    static constexpr std::uint32_t builtin_id = 8;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return static_cast<T>(a && b);
    }
};
struct logical_or {
    static constexpr std::uint32_t builtin_id = 9;
    template <class T>
    T operator()(const T& a, const T& b) const {
        return static_cast<T>(a || b);
    }
};

/// What a collective can carry: trivially copyable types, or types am::serializer can send.
template <class T>
concept value = detail::collective_value<T>;

// ----------------------------------------------------------------------- machinery (inline)

namespace detail {

template <class R, class F>
future<R> nonblocking(const team& t, request&& r, F convert) {
    check_team(t, r.call);
    auto p = std::make_shared<promise<R>>(t.ctx());
    future<R> f = p->get_future();
    start(t, std::move(r),
          [p, convert = std::move(convert)](std::vector<blob>&& out, std::exception_ptr e) {
              if (e) {
                  p->set_exception(e);
                  return;
              }
              try {
                  if constexpr (std::is_void_v<R>) {
                      convert(std::move(out));
                      p->set_value();
                  } else {
                      p->set_value(convert(std::move(out)));
                  }
              } catch (...) {
                  p->set_exception(std::current_exception());
              }
          });
    return f;
}

template <class T>
request value_request(kind k, const char* call, const T& v, int root = -1) {
    request r;
    r.what = k;
    r.call = call;
    r.root = root;
    r.fixed = bytewise<T>;
    r.fixed_bytes = bytewise<T> ? sizeof(T) : 0;
    r.type = type_id<T>();
    r.in.push_back(to_blob(v));
    return r;
}

template <class T, class Op>
request reduction(kind k, const char* call, const T& v, Op op, int root = -1) {
    request r = value_request(k, call, v, root);
    r.op_id = op_id<Op>();
    r.elem = bytewise<T> ? sizeof(T) : 0;
    if constexpr (bytewise<T>) r.combine_range = elementwise_range<T>(op);
    r.combine = whole<T>(std::move(op));
    return r;
}

template <class T, class Op>
request span_reduction(kind k, const char* call, std::span<const T> in, Op op, int root = -1) {
    request r;
    r.what = k;
    r.call = call;
    r.root = root;
    r.fixed = true;
    r.fixed_bytes = in.size_bytes();
    r.type = type_id<T>();
    r.op_id = op_id<Op>();
    r.elem = sizeof(T);
    r.in.push_back(span_blob(in));
    r.combine_range = elementwise_range<T>(op);
    r.combine = elementwise<T>(std::move(op));
    return r;
}

template <class T>
std::vector<T> values_of(std::vector<blob>&& out) {
    std::vector<T> v;
    v.reserve(out.size());
    for (const blob& b : out) v.push_back(from_blob<T>(b));
    return v;
}

template <class T>
std::vector<std::vector<T>> vectors_of(std::vector<blob>&& out) {
    std::vector<std::vector<T>> v;
    v.reserve(out.size());
    for (const blob& b : out) v.push_back(blob_vector<T>(b));
    return v;
}

template <class T>
void copy_out(std::span<T> out, const blob& b) {
    if (!out.empty()) std::memcpy(out.data(), b.data(), out.size_bytes());
}

/// The output span of a reduction must hold the input's elements (checked before anything is
/// sent; `needed` false: this rank gets no result, e.g. a reduce's non-root).
inline void check_out(const team& t, std::size_t out, std::size_t in, bool needed,
                      const char* call) {
    check_team(t, call);
    if (needed && out < in) bad_size(t, out, in, "output elements, fewer than the input's", call);
}

template <class T>
request span_broadcast(const team& t, std::span<T> data, int root, const char* call) {
    request r;
    r.what = kind::broadcast;
    r.call = call;
    r.root = root;
    r.fixed = true;
    r.fixed_bytes = data.size_bytes();
    r.type = type_id<T>();
    r.in.push_back(t.valid() && t.rank() == root ? span_blob(std::span<const T>(data)) : blob{});
    return r;
}

template <class T>
request alltoall_request(const team& t, std::span<const T> in, const char* call) {
    check_team(t, call);
    const auto n = static_cast<std::size_t>(t.size());
    if (in.size() % n != 0) bad_size(t, in.size(), n, "elements, not a multiple of", call);
    const std::size_t k = in.size() / n;
    request r;
    r.what = kind::alltoall;
    r.call = call;
    r.fixed = true;
    r.fixed_bytes = k * sizeof(T);
    r.type = type_id<T>();
    for (std::size_t j = 0; j < n; ++j) r.in.push_back(span_blob(in.subspan(j * k, k)));
    return r;
}

template <class T>
request alltoallv_request(const team& t, const std::vector<std::vector<T>>& out, const char* call) {
    check_team(t, call);
    if (out.size() != static_cast<std::size_t>(t.size()))
        bad_size(t, out.size(), static_cast<std::size_t>(t.size()), "vectors, not", call);
    request r;
    r.what = kind::alltoall;
    r.call = call;
    for (const auto& v : out) {
        if constexpr (bytewise<T>) {
            r.in.push_back(span_blob(std::span<const T>(v)));
        } else {
            r.in.push_back(to_blob(v));
        }
    }
    return r;
}

template <class T>
std::vector<std::vector<T>> alltoallv_result(std::vector<blob>&& out) {
    if constexpr (bytewise<T>) {
        return vectors_of<T>(std::move(out));
    } else {
        return values_of<std::vector<T>>(std::move(out));
    }
}

template <class T>
blob variable_blob(std::span<const T> v) {
    if constexpr (bytewise<T>) {
        return span_blob(v);
    } else {
        return to_blob(std::vector<T>(v.begin(), v.end()));
    }
}

template <class T>
request variable_request(kind k, const char* call, std::span<const T> v, int root = -1) {
    request r;
    r.what = k;
    r.call = call;
    r.root = root;
    r.in.push_back(variable_blob(v));
    return r;
}

}  // namespace detail

// -------------------------------------------------------------------------------- barrier

/// Returns once every member has called it (a dissemination barrier: ⌈log2 P⌉ rounds of one
/// empty message per rank). Not a quiescence point: other messages may still be in flight.
void barrier(const team& t);
future<void> barrier_nb(const team& t);

// ------------------------------------------------------------------------------ broadcast

/// `root`'s value to every member: returns it (at the root too).
template <value T>
T broadcast(const team& t, const T& v, int root) {
    return detail::from_blob<T>(
        detail::run(t,
                    detail::value_request(detail::kind::broadcast, "am::coll::broadcast", v, root))
            .at(0));
}
template <value T>
future<T> broadcast_nb(const team& t, const T& v, int root) {
    return detail::nonblocking<T>(
        t, detail::value_request(detail::kind::broadcast, "am::coll::broadcast_nb", v, root),
        [](std::vector<detail::blob>&& out) { return detail::from_blob<T>(out.at(0)); });
}
/// `root`'s `data` into every member's `data` (the same number of elements everywhere).
template <class T>
requires std::is_trivially_copyable_v<T>
void broadcast(const team& t, std::span<T> data, int root) {
    auto out = detail::run(t, detail::span_broadcast(t, data, root, "am::coll::broadcast"));
    detail::copy_out(data, out.at(0));
}
template <class T>
requires std::is_trivially_copyable_v<T> future<void> broadcast_nb(const team& t, std::span<T> data,
                                                                   int root) {
    return detail::nonblocking<void>(
        t, detail::span_broadcast(t, data, root, "am::coll::broadcast_nb"),
        [data](std::vector<detail::blob>&& out) { detail::copy_out(data, out.at(0)); });
}

// -------------------------------------------------------------------------------- reduce

/// op over every member's value, in rank order: the result at `root`, nullopt elsewhere.
template <value T, class Op>
std::optional<T> reduce(const team& t, const T& v, Op op, int root) {
    auto out = detail::run(
        t, detail::reduction(detail::kind::reduce, "am::coll::reduce", v, std::move(op), root));
    if (out.empty()) return std::nullopt;
    return detail::from_blob<T>(out[0]);
}
template <value T, class Op>
future<std::optional<T>> reduce_nb(const team& t, const T& v, Op op, int root) {
    return detail::nonblocking<std::optional<T>>(
        t, detail::reduction(detail::kind::reduce, "am::coll::reduce_nb", v, std::move(op), root),
        [](std::vector<detail::blob>&& out) -> std::optional<T> {
            if (out.empty()) return std::nullopt;
            return detail::from_blob<T>(out[0]);
        });
}
/// Element-wise: out[i] = op over members of in[i], written at `root` only (out may be empty
/// elsewhere). Every member passes the same number of elements.
template <class T, class Op>
requires std::is_trivially_copyable_v<T>
void reduce(const team& t, std::span<const T> in, std::span<T> out, Op op, int root) {
    detail::check_out(t, out.size(), in.size(), t.valid() && t.rank() == root, "am::coll::reduce");
    auto res = detail::run(t, detail::span_reduction(detail::kind::reduce, "am::coll::reduce", in,
                                                     std::move(op), root));
    if (!res.empty()) detail::copy_out(out.first(in.size()), res[0]);
}

template <class T, class Op>
requires std::is_trivially_copyable_v<T> future<void> reduce_nb(const team& t,
                                                                std::span<const T> in,
                                                                std::span<T> out, Op op, int root) {
    const std::size_t n = in.size();
    return detail::nonblocking<void>(
        t,
        detail::span_reduction(detail::kind::reduce, "am::coll::reduce_nb", in, std::move(op),
                               root),
        [out, n](std::vector<detail::blob>&& res) {
            if (!res.empty()) detail::copy_out(out.first(n), res[0]);
        });
}

// ----------------------------------------------------------------------------- allreduce

/// op over every member's value, in rank order, returned on every member.
template <value T, class Op>
T allreduce(const team& t, const T& v, Op op) {
    return detail::from_blob<T>(
        detail::run(
            t, detail::reduction(detail::kind::allreduce, "am::coll::allreduce", v, std::move(op)))
            .at(0));
}
template <value T, class Op>
future<T> allreduce_nb(const team& t, const T& v, Op op) {
    return detail::nonblocking<T>(
        t, detail::reduction(detail::kind::allreduce, "am::coll::allreduce_nb", v, std::move(op)),
        [](std::vector<detail::blob>&& out) { return detail::from_blob<T>(out.at(0)); });
}
/// Element-wise over spans of the same length on every member; `out` may alias `in`.
template <class T, class Op>
requires std::is_trivially_copyable_v<T>
void allreduce(const team& t, std::span<const T> in, std::span<T> out, Op op) {
    detail::check_out(t, out.size(), in.size(), true, "am::coll::allreduce");
    auto res = detail::run(t, detail::span_reduction(detail::kind::allreduce, "am::coll::allreduce",
                                                     in, std::move(op)));
    detail::copy_out(out.first(in.size()), res.at(0));
}
template <class T, class Op>
requires std::is_trivially_copyable_v<T> future<void> allreduce_nb(const team& t,
                                                                   std::span<const T> in,
                                                                   std::span<T> out, Op op) {
    const std::size_t n = in.size();
    return detail::nonblocking<void>(
        t,
        detail::span_reduction(detail::kind::allreduce, "am::coll::allreduce_nb", in,
                               std::move(op)),
        [out, n](std::vector<detail::blob>&& res) { detail::copy_out(out.first(n), res.at(0)); });
}

// --------------------------------------------------------------------------------- scans

/// op over the values of members 0 … rank() (inclusive).
template <value T, class Op>
T inclusive_scan(const team& t, const T& v, Op op) {
    return detail::from_blob<T>(
        detail::run(t, detail::reduction(detail::kind::inclusive_scan, "am::coll::inclusive_scan",
                                         v, std::move(op)))
            .at(0));
}
template <value T, class Op>
future<T> inclusive_scan_nb(const team& t, const T& v, Op op) {
    return detail::nonblocking<T>(
        t,
        detail::reduction(detail::kind::inclusive_scan, "am::coll::inclusive_scan_nb", v,
                          std::move(op)),
        [](std::vector<detail::blob>&& out) { return detail::from_blob<T>(out.at(0)); });
}
/// op over the values of members 0 … rank()-1; nullopt on member 0.
template <value T, class Op>
std::optional<T> exclusive_scan(const team& t, const T& v, Op op) {
    auto out = detail::run(t, detail::reduction(detail::kind::exclusive_scan,
                                                "am::coll::exclusive_scan", v, std::move(op)));
    if (out.empty()) return std::nullopt;
    return detail::from_blob<T>(out[0]);
}
/// As above with `init` on member 0 (and op(init, …) nowhere else: MPI_Exscan's shape).
template <value T, class Op>
T exclusive_scan(const team& t, const T& v, Op op, T init) {
    std::optional<T> r = exclusive_scan(t, v, std::move(op));
    return r ? std::move(*r) : std::move(init);
}
template <value T, class Op>
future<std::optional<T>> exclusive_scan_nb(const team& t, const T& v, Op op) {
    return detail::nonblocking<std::optional<T>>(
        t,
        detail::reduction(detail::kind::exclusive_scan, "am::coll::exclusive_scan_nb", v,
                          std::move(op)),
        [](std::vector<detail::blob>&& out) -> std::optional<T> {
            if (out.empty()) return std::nullopt;
            return detail::from_blob<T>(out[0]);
        });
}

// ------------------------------------------------------------------------ gather, allgather

/// Every member's value, in rank order, at `root`; empty elsewhere.
template <value T>
std::vector<T> gather(const team& t, const T& v, int root) {
    return detail::values_of<T>(
        detail::run(t, detail::value_request(detail::kind::gather, "am::coll::gather", v, root)));
}
template <value T>
future<std::vector<T>> gather_nb(const team& t, const T& v, int root) {
    return detail::nonblocking<std::vector<T>>(
        t, detail::value_request(detail::kind::gather, "am::coll::gather_nb", v, root),
        [](std::vector<detail::blob>&& out) { return detail::values_of<T>(std::move(out)); });
}
/// Every member's elements (any number per member), in rank order, at `root`; empty elsewhere.
template <value T>
std::vector<std::vector<T>> gatherv(const team& t, std::span<const T> v, int root) {
    return detail::alltoallv_result<T>(detail::run(
        t, detail::variable_request(detail::kind::gather, "am::coll::gatherv", v, root)));
}
template <value T>
future<std::vector<std::vector<T>>> gatherv_nb(const team& t, std::span<const T> v, int root) {
    return detail::nonblocking<std::vector<std::vector<T>>>(
        t, detail::variable_request(detail::kind::gather, "am::coll::gatherv_nb", v, root),
        [](std::vector<detail::blob>&& out) {
            return detail::alltoallv_result<T>(std::move(out));
        });
}
/// Every member's value, in rank order, on every member.
template <value T>
std::vector<T> allgather(const team& t, const T& v) {
    return detail::values_of<T>(
        detail::run(t, detail::value_request(detail::kind::allgather, "am::coll::allgather", v)));
}
template <value T>
future<std::vector<T>> allgather_nb(const team& t, const T& v) {
    return detail::nonblocking<std::vector<T>>(
        t, detail::value_request(detail::kind::allgather, "am::coll::allgather_nb", v),
        [](std::vector<detail::blob>&& out) { return detail::values_of<T>(std::move(out)); });
}
/// Every member's elements (any number per member), in rank order, on every member.
template <value T>
std::vector<std::vector<T>> allgatherv(const team& t, std::span<const T> v) {
    return detail::alltoallv_result<T>(detail::run(
        t, detail::variable_request(detail::kind::allgather, "am::coll::allgatherv", v)));
}
template <value T>
future<std::vector<std::vector<T>>> allgatherv_nb(const team& t, std::span<const T> v) {
    return detail::nonblocking<std::vector<std::vector<T>>>(
        t, detail::variable_request(detail::kind::allgather, "am::coll::allgatherv_nb", v),
        [](std::vector<detail::blob>&& out) {
            return detail::alltoallv_result<T>(std::move(out));
        });
}

// ----------------------------------------------------------------------------- all-to-all

/// `in` holds size() blocks of k elements each (the same k on every member): block j goes to
/// member j; returns the blocks received, block i from member i.
template <class T>
requires std::is_trivially_copyable_v<T> std::vector<T> alltoall(const team& t,
                                                                 std::span<const T> in) {
    auto out = detail::run(t, detail::alltoall_request(t, in, "am::coll::alltoall"));
    std::vector<T> v;
    v.reserve(in.size());
    for (const auto& b : out) {
        auto part = detail::blob_vector<T>(b);
        v.insert(v.end(), part.begin(), part.end());
    }
    return v;
}
template <class T>
requires std::is_trivially_copyable_v<T> future<std::vector<T>> alltoall_nb(const team& t,
                                                                            std::span<const T> in) {
    return detail::nonblocking<std::vector<T>>(
        t, detail::alltoall_request(t, in, "am::coll::alltoall_nb"),
        [](std::vector<detail::blob>&& out) {
            std::vector<T> v;
            for (const auto& b : out) {
                auto part = detail::blob_vector<T>(b);
                v.insert(v.end(), part.begin(), part.end());
            }
            return v;
        });
}
/// out[j] goes to member j (any number of elements); returns what member i sent here at [i].
template <value T>
std::vector<std::vector<T>> alltoallv(const team& t, const std::vector<std::vector<T>>& out) {
    return detail::alltoallv_result<T>(
        detail::run(t, detail::alltoallv_request(t, out, "am::coll::alltoallv")));
}
template <value T>
future<std::vector<std::vector<T>>> alltoallv_nb(const team& t,
                                                 const std::vector<std::vector<T>>& out) {
    return detail::nonblocking<std::vector<std::vector<T>>>(
        t, detail::alltoallv_request(t, out, "am::coll::alltoallv_nb"),
        [](std::vector<detail::blob>&& res) {
            return detail::alltoallv_result<T>(std::move(res));
        });
}

}  // namespace am::coll

namespace am {
/// The team type of <am/coll.hpp>, as UPC++ and the issue name it.
using coll::team;
}  // namespace am
