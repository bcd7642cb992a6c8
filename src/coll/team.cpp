// SPDX-License-Identifier: MIT
// Teams: the world team, split, rank translation; the entry points of the collectives.
#include "coll_layer.hpp"

#include "../util/error.hpp"

#include <algorithm>
#include <tuple>

namespace am::coll {
namespace {

const detail::team_state& state_of(const std::shared_ptr<detail::team_state>& st,
                                   const context* home, const char* call) {
    if (!st) {
        if (home != nullptr) {
            util::fail(errc::invalid_argument, call, home->rank(),
                       "this rank is not a member of the team (it passed "
                       "am::coll::team::undefined to split)");
        }
        throw error(errc::invalid_argument,
                    std::string(call) +
                        ": this rank is not a member of the team: a default-constructed team "
                        "has no members (use am::coll::world(ctx) or a team from split)");
    }
    return *st;
}

// A team id from its parent's, the split's number and the color: the same on every member;
// odd, so never 0 (no team) and different from world's 1 with overwhelming probability.
std::uint64_t child_id(std::uint64_t parent, std::uint32_t split, int color) {
    std::uint64_t h = parent ^ 0x9e3779b97f4a7c15ull;
    for (const std::uint64_t v :
         {std::uint64_t{split}, static_cast<std::uint64_t>(static_cast<std::uint32_t>(color))}) {
        h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
    }
    return h | 1u;
}

}  // namespace

int team::rank() const {
    return state_of(_st, _ctx, "am::coll::team::rank").rank;
}
int team::size() const {
    return state_of(_st, _ctx, "am::coll::team::size").size();
}
std::uint64_t team::id() const {
    return state_of(_st, _ctx, "am::coll::team::id").id;
}
context& team::ctx() const {
    return *state_of(_st, _ctx, "am::coll::team::ctx").ctx;
}
std::string team::name() const {
    return _st ? _st->name : std::string("(no team)");
}

int team::world_rank(int team_rank) const {
    const detail::team_state& t = state_of(_st, _ctx, "am::coll::team::world_rank");
    if (team_rank < 0 || team_rank >= t.size()) {
        util::fail(errc::bad_rank, "am::coll::team::world_rank", t.ctx->rank(),
                   "team rank " + std::to_string(team_rank) + " out of range [0, " +
                       std::to_string(t.size()) + ") of team " + t.name);
    }
    return t.member(team_rank);
}

int team::team_rank(int world_rank) const {
    const detail::team_state& t = state_of(_st, _ctx, "am::coll::team::team_rank");
    return t.team_rank_of(world_rank);
}

team team::split(int color, int key) const {
    const char* call = "am::coll::team::split";
    const detail::team_state& parent = state_of(_st, _ctx, call);
    if (color < 0 && color != undefined) {
        util::fail(
            errc::invalid_argument, call, parent.ctx->rank(),
            "color " + std::to_string(color) + " is negative and not am::coll::team::undefined");
    }
    struct choice {
        std::int32_t color, key;
    };
    detail::request r = detail::value_request(detail::kind::split, call, choice{color, key});
    const std::vector<choice> all = detail::values_of<choice>(detail::run(*this, std::move(r)));
    const std::uint32_t number = ++_st->splits;
    if (color == undefined) return team{parent.ctx};
    std::vector<std::tuple<int, int>> group;  // (key, parent rank)
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (all[i].color == color) group.emplace_back(all[i].key, static_cast<int>(i));
    }
    std::sort(group.begin(), group.end());
    auto st = std::make_shared<detail::team_state>();
    st->ctx = parent.ctx;
    st->id = child_id(parent.id, number, color);
    st->name = "split #" + std::to_string(number) + " of " + parent.name + " (color " +
               std::to_string(color) + ")";
    st->members.reserve(group.size());
    st->by_world.reserve(group.size());
    for (const auto& [k, pr] : group) {
        const int w = parent.member(pr);
        st->by_world.emplace_back(w, static_cast<int>(st->members.size()));
        st->members.push_back(w);
    }
    std::sort(st->by_world.begin(), st->by_world.end());
    st->rank = st->team_rank_of(parent.ctx->rank());
    return team{std::move(st)};
}

team world(context& ctx) {
    return team{
        core::get<detail::coll_layer>(ctx, detail::coll_layer::key, "am::coll::world").world()};
}

void barrier(const team& t) {
    detail::request r;
    r.what = detail::kind::barrier;
    r.call = "am::coll::barrier";
    (void)detail::run(t, std::move(r));
}

future<void> barrier_nb(const team& t) {
    detail::request r;
    r.what = detail::kind::barrier;
    r.call = "am::coll::barrier_nb";
    return detail::nonblocking<void>(t, std::move(r), [](std::vector<detail::blob>&&) {});
}

namespace detail {

void check_team(const team& t, const char* call) {
    (void)state_of(t.state(), t.home(), call);
}

void bad_root(const team& t, int root, const char* call) {
    util::fail(errc::bad_rank, call, t.ctx().rank(),
               "root " + std::to_string(root) + " out of range [0, " + std::to_string(t.size()) +
                   ") of team " + t.name());
}

void bad_size(const team& t, std::size_t got, std::size_t want, const char* what,
              const char* call) {
    util::fail(errc::invalid_argument, call, t.ctx().rank(),
               std::to_string(got) + " " + what + " " + std::to_string(want) +
                   " (the size of team " + t.name() + ")");
}

coll_layer& layer_of(const team& t, const char* call) {
    check_team(t, call);
    return core::get<coll_layer>(t.ctx(), coll_layer::key, call);
}

namespace {

void check_request(const team& t, const request& r) {
    if (r.root != -1 && (r.root < 0 || r.root >= t.size())) bad_root(t, r.root, r.call);
    const bool rooted =
        r.what == kind::broadcast || r.what == kind::reduce || r.what == kind::gather;
    if (rooted && r.root == -1) bad_root(t, r.root, r.call);
}

}  // namespace

void start(const team& t, request&& r, done_fn done) {
    coll_layer& l = layer_of(t, r.call);
    check_request(t, r);
    core::check_thread(t.ctx(), r.call);
    l.start(t.state(), std::move(r), std::move(done));
}

std::vector<blob> run(const team& t, request&& r) {
    coll_layer& l = layer_of(t, r.call);
    check_request(t, r);
    // Refused in a plain handler before anything is sent; an optimistic handler (a `then`
    // continuation, an RPC body) blocks as a thread in the wait.
    (void)am::detail::core_wait_check(am::detail::access::impl(t.ctx()), r.call);
    return l.run(t.state(), std::move(r));
}

}  // namespace detail
}  // namespace am::coll
