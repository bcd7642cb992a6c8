// SPDX-License-Identifier: MIT
#include "coll_layer.hpp"

#include "../util/error.hpp"

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>

// The handler, named for statistics ("am::coll::fragment").
namespace am::coll {

void fragment(token& t, std::span<const std::byte> data, std::uint64_t team, std::uint64_t seqstep,
              std::uint64_t sig, std::uint64_t fixed, std::uint64_t total, std::uint64_t offset,
              std::uint64_t aux) {
    core::get<detail::coll_layer>(t.ctx(), detail::coll_layer::key, "am::coll")
        .on_fragment(t.source(), data, team, seqstep, detail::signature{sig, fixed}, total, offset,
                     aux);
}

}  // namespace am::coll

namespace am::coll::detail {
namespace {

const char* kind_call(std::uint8_t k) {
    switch (static_cast<kind>(k)) {
        case kind::barrier:
            return "am::coll::barrier";
        case kind::broadcast:
            return "am::coll::broadcast";
        case kind::reduce:
            return "am::coll::reduce";
        case kind::allreduce:
            return "am::coll::allreduce";
        case kind::inclusive_scan:
            return "am::coll::inclusive_scan";
        case kind::exclusive_scan:
            return "am::coll::exclusive_scan";
        case kind::gather:
            return "am::coll::gather";
        case kind::allgather:
            return "am::coll::allgather";
        case kind::alltoall:
            return "am::coll::alltoall";
        case kind::split:
            return "am::coll::team::split";
    }
    return "an unknown collective";
}

std::string rank_text(const team_state& t, int team_rank) {
    std::string s = "rank " + std::to_string(team_rank);
    if (t.id != 1) s += " (job rank " + std::to_string(t.member(team_rank)) + ")";
    return s;
}

}  // namespace

signature signature_of(const request& r) {
    const auto root = static_cast<std::uint64_t>(r.root + 1) & 0xffffffu;
    // fixed: the element type (24 bits) over bytes per rank + 1 (40 bits; 0: ranks may differ).
    const std::uint64_t bytes = r.fixed ? (r.fixed_bytes + 1) & ((std::uint64_t{1} << 40) - 1) : 0;
    return {std::uint64_t{static_cast<std::uint8_t>(r.what)} << 56 | root << 32 | r.op_id,
            std::uint64_t{r.type} << 40 | bytes};
}

std::string describe(const signature& s) {
    std::string d = kind_call(static_cast<std::uint8_t>(s.word >> 56));
    const auto root = static_cast<std::int64_t>((s.word >> 32) & 0xffffffu) - 1;
    if (root >= 0) d += " with root " + std::to_string(root);
    const auto op = static_cast<std::uint32_t>(s.word);
    if (op != 0 && op < 0x80000000u) {
        static constexpr const char* names[] = {
            "",        "sum",    "prod",    "min",         "max",
            "bit_and", "bit_or", "bit_xor", "logical_and", "logical_or"};
        d += std::string(" and operator am::coll::") + (op < 10 ? names[op] : "?");
    } else if (op != 0) {
        d += " and a user operator (id " + std::to_string(op) + ")";
    }
    const std::uint64_t bytes = s.fixed & ((std::uint64_t{1} << 40) - 1);
    if (bytes != 0) d += " of " + std::to_string(bytes - 1) + " bytes per rank";
    if ((s.fixed >> 40) != 0) d += " of element type #" + std::to_string(s.fixed >> 40);
    return d;
}

/// Locks the layer's state only when a progress thread may run handlers concurrently.
class coll_layer::guard {
  public:
    explicit guard(coll_layer& l) : _m(core::locking(l._ctx) ? &l._mutex : nullptr) {
        if (_m != nullptr) _m->lock();
    }
    ~guard() {
        if (_m != nullptr) _m->unlock();
    }
    guard(const guard&) = delete;
    guard& operator=(const guard&) = delete;

  private:
    std::mutex* _m;
};

coll_layer::coll_layer(context& ctx, const config& cfg)
    : _ctx(ctx),
      _rank(ctx.rank()),
      _chunk(ctx.max_medium()),
      _timeout(cfg.epoch_timeout),
      _h_fragment(ctx.handler<&coll::fragment>()) {
    auto w = std::make_shared<team_state>();
    w->ctx = &ctx;
    w->id = 1;
    w->rank = ctx.rank();
    w->name = "world";
    w->identity = true;  // no per-rank arrays: O(1) per rank, not O(P)
    w->world_size = ctx.size();
    _world = std::move(w);
    core::set_deferred(ctx, [this] { return run_deferred(); });
}

coll_layer::~coll_layer() {
    // Collectives a failed job left unfinished: their coroutines and states go with the layer.
    for (op* o : _active) delete o;
}

op* coll_layer::active(std::uint64_t team, std::uint32_t seq) const noexcept {
    for (op* o : _active) {
        if (o->team->id == team && o->seq == seq) return o;
    }
    return nullptr;
}

std::string coll_layer::report() const {
    if (_collectives == 0) return {};
    return "coll: " + std::to_string(_collectives) + " collectives, " + std::to_string(_messages) +
           " messages sent\n";
}

// ------------------------------------------------------------------------------- starting

void coll_layer::start(const std::shared_ptr<team_state>& t, request&& r, done_fn done) {
    auto o = std::make_unique<op>();
    o->team = t;
    o->seq = ++t->next_seq;
    o->sig = signature_of(r);
    o->req = std::move(r);
    o->done = std::move(done);
    o->body = run_algorithm(*this, *o);
    {
        guard g(*this);
        ++_collectives;
        _active.push_back(o.get());
        record_start(t->id, t->name, o->seq, o->sig);
        check_arrived(*o);
        _ready.push_back(o.release());
    }
    core::signal_deferred(_ctx);
}

std::vector<blob> coll_layer::run(const std::shared_ptr<team_state>& t, request&& r) {
    struct result {
        std::vector<blob> out;
        std::exception_ptr error;
        std::atomic<bool> done{false};  // set by whichever thread polls (a progress thread)
    };
    auto res = std::make_shared<result>();
    const auto began = std::chrono::steady_clock::now();
    const std::uint32_t seq = t->next_seq + 1;
    start(t, std::move(r), [res](std::vector<blob>&& out, std::exception_ptr e) {
        res->out = std::move(out);
        res->error = std::move(e);
        res->done.store(true, std::memory_order_release);
    });
    try {
        _ctx.wait([&] {
            const bool done = res->done.load(std::memory_order_acquire);
            if (!done && _timeout > 0 &&
                std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count() >
                    _timeout) {
                guard g(*this);
                if (op* o = active(t->id, seq)) check_stall(*o);
            }
            return done;
        });
    } catch (const error& e) {
        // The mismatch this rank found failed the job, so the wait stops with errc::aborted
        // before the collective resumes to raise it: raise it here, on the rank that found it.
        if (e.code() != errc::aborted) throw;
        std::exception_ptr found =
            res->done.load(std::memory_order_acquire) ? res->error : std::exception_ptr();
        if (!found) {
            guard g(*this);
            if (op* o = active(t->id, seq)) found = o->error;
            if (!found) found = _found;  // a mismatch its handler found between collectives
        }
        if (found) std::rethrow_exception(found);
        throw;
    }
    if (res->error) std::rethrow_exception(res->error);
    return std::move(res->out);
}

// ------------------------------------------------------------------------ receiving, mailbox

void coll_layer::on_fragment(int source, std::span<const std::byte> data, std::uint64_t team,
                             std::uint64_t seqstep, signature sig, std::uint64_t total,
                             std::uint64_t offset, std::uint64_t aux) {
    const msg_key k{team, static_cast<std::uint32_t>(seqstep >> 32),
                    static_cast<std::uint32_t>(seqstep), source};
    guard g(*this);
    if (op* o = active(team, k.seq);
        o != nullptr && o->posted.posted && o->posted.key == k && _mailbox.find(k) == nullptr) {
        // Posted: straight into place (when no earlier fragment went to the mailbox).
        check_signature(*o, k, sig);
        sink& s = o->posted;
        if (!o->error && total != s.target.size()) {
            const std::string what =
                std::string(o->req.call) + ": rank " + std::to_string(_rank) + ": a message of " +
                std::to_string(total) + " bytes arrived for a receive of " +
                std::to_string(s.target.size()) + " bytes (ranks disagree on a size)";
            core::fail_job(_ctx, "rank " + std::to_string(_rank) + " failed: " + what);
            o->error = std::make_exception_ptr(error(errc::collective_mismatch, what));
        }
        if (!o->error) {
            try {
                apply(*o, offset, data);
            } catch (const std::exception& x) {  // the program's operator threw
                const std::string what = std::string(o->req.call) + ": rank " +
                                         std::to_string(_rank) + ": the operator threw on team " +
                                         o->team->name + ": " + x.what();
                core::fail_job(_ctx, "rank " + std::to_string(_rank) + " failed: " + what);
                o->error = std::current_exception();
            }
            s.received += data.size();
            s.done = s.received == total;
        }
        if (o->waiting && (o->error || s.done)) make_ready(*o);
        return;
    }
    if (active(team, k.seq) == nullptr) check_late(source, k, sig);
    entry& e = _mailbox.get(k);
    if (!e.started) {
        e.started = true;
        e.sig = sig;
        e.total = total;
        e.aux = aux;
        e.data.resize(total);
    }
    if (!data.empty()) std::memcpy(e.data.data() + offset, data.data(), data.size());
    e.received += data.size();
    op* started = active(k.team, k.seq);
    if (started == nullptr) {  // this rank has not started that collective yet
        note_early(source, k, sig);
        return;
    }
    op& o = *started;
    check_signature(o, k, sig);
    if (o.waiting && (o.error || (o.awaited == k && e.complete()))) make_ready(o);
}

void coll_layer::check_signature(op& o, const msg_key& k, const signature& theirs) {
    if (theirs == o.sig || o.error) return;
    const team_state& t = *o.team;
    const int from = t.team_rank_of(k.source);
    const std::string what =
        std::string(o.req.call) + ": rank " + std::to_string(_rank) + ": collectives on team " +
        t.name + " do not match at its collective #" + std::to_string(o.seq) + ": " +
        rank_text(t, t.rank) + " called " + describe(o.sig) + " while " + rank_text(t, from) +
        " called " + describe(theirs) +
        " (every member of a team must make the same collective calls in the same order)";
    core::fail_job(_ctx, "rank " + std::to_string(_rank) + " failed: " + what);
    o.error = std::make_exception_ptr(error(errc::collective_mismatch, what));
}

void coll_layer::record_start(std::uint64_t team, const std::string& name, std::uint32_t seq,
                              const signature& sig) {
    auto it = std::find_if(_teams.begin(), _teams.end(),
                           [&](const team_record& r) { return r.team == team; });
    if (it == _teams.end()) {
        _teams.emplace_back();
        it = std::prev(_teams.end());
        it->team = team;
        it->name = name;
    }
    it->started = seq;
    it->seq[seq % team_record::kept] = seq;
    it->sig[seq % team_record::kept] = sig;
}

void coll_layer::check_late(int source, const msg_key& k, const signature& theirs) {
    const auto it = std::find_if(_teams.begin(), _teams.end(),
                                 [&](const team_record& r) { return r.team == k.team; });
    if (it == _teams.end() || k.seq > it->started) return;  // a collective still to come here
    const std::size_t slot = k.seq % team_record::kept;
    const std::string mine =
        it->seq[slot] == k.seq ? describe(it->sig[slot]) : std::string("a collective");
    const std::string what =
        "am::coll: rank " + std::to_string(_rank) + ": collectives on team " + it->name +
        " do not match at its collective #" + std::to_string(k.seq) + ": job rank " +
        std::to_string(_rank) + " called " + mine + " while job rank " + std::to_string(source) +
        " called " + describe(theirs) +
        " and sent it a message the first call never takes (every member of a team must make "
        "the same collective calls in the same order)";
    core::fail_job(_ctx, "rank " + std::to_string(_rank) + " failed: " + what);
    if (!_found) _found = std::make_exception_ptr(error(errc::collective_mismatch, what));
}

void coll_layer::note_early(int source, const msg_key& k, const signature& sig) {
    // The first early message's signature is checked when the collective begins here; any
    // other early message is checked when the collective takes it (take_checked), where the
    // team is known and the error names it.
    (void)_early.try_emplace({k.team, k.seq}, sig, source);
}

entry coll_layer::take_checked(op& o, const msg_key& k) {
    entry e = take(k);
    check_signature(o, k, e.sig);
    if (o.error) std::rethrow_exception(o.error);
    return e;
}

void coll_layer::check_arrived(op& o) {
    const auto it = _early.find({o.team->id, o.seq});
    if (it == _early.end()) return;
    const auto [sig, source] = it->second;
    _early.erase(it);
    check_signature(o, {o.team->id, o.seq, 0, source}, sig);
}

entry coll_layer::take(const msg_key& k) {
    return _mailbox.take(k);
}

bool coll_layer::recv_awaiter::await_ready() {
    if (o.error) return true;
    const entry* e = layer._mailbox.find(key);
    return e != nullptr && e->complete();
}

void coll_layer::recv_awaiter::await_suspend(std::coroutine_handle<>) noexcept {
    o.waiting = true;
    o.awaited = key;
}

entry coll_layer::recv_awaiter::await_resume() {
    if (o.error) std::rethrow_exception(o.error);
    return layer.take_checked(o, key);
}

void coll_layer::apply(op& o, std::uint64_t offset, std::span<const std::byte> data) {
    const std::span<std::byte> to = o.posted.target.subspan(offset, data.size());
    if (o.posted.combine) {
        o.req.combine_range(to, data, o.posted.other_first);
    } else if (!data.empty()) {
        std::memcpy(to.data(), data.data(), data.size());
    }
}

void coll_layer::post(op& o, int team_rank, std::uint32_t step, std::span<std::byte> target,
                      bool combine, bool other_first) {
    o.posted = sink{{o.team->id, o.seq, step, o.team->member(team_rank)},
                    target,
                    combine,
                    other_first,
                    true,
                    false,
                    0};
}

coll_layer::posted_awaiter coll_layer::posted(op& o) {
    return {*this, o};
}

bool coll_layer::posted_awaiter::await_ready() {
    if (o.error || o.posted.done) return true;
    const entry* e = layer._mailbox.find(o.posted.key);
    return e != nullptr && e->complete();
}

void coll_layer::posted_awaiter::await_suspend(std::coroutine_handle<>) noexcept {
    o.waiting = true;
    o.awaited = o.posted.key;
}

void coll_layer::posted_awaiter::await_resume() {
    o.posted.posted = false;
    if (o.error) std::rethrow_exception(o.error);
    if (o.posted.done) return;
    // It came (or began to come) before it was posted: from the mailbox.
    const entry e = layer.take_checked(o, o.posted.key);
    if (e.total != o.posted.target.size()) {
        throw error(errc::collective_mismatch, std::string(o.req.call) + ": a message of " +
                                                   std::to_string(e.total) +
                                                   " bytes arrived for a receive of " +
                                                   std::to_string(o.posted.target.size()) +
                                                   " bytes (ranks disagree on a size)");
    }
    apply(o, 0, e.data);
}

bool coll_layer::resumable(const op& o) const noexcept {
    if (o.error) return true;
    if (o.posted.posted && o.posted.key == o.awaited && o.posted.done) return true;
    const entry* e = _mailbox.find(o.awaited);
    return e != nullptr && e->complete();
}

coll_layer::recv_awaiter coll_layer::recv(op& o, int team_rank, std::uint32_t step) {
    return {*this, o, {o.team->id, o.seq, step, o.team->member(team_rank)}};
}

void coll_layer::send(op& o, int team_rank, std::uint32_t step, std::span<const std::byte> data,
                      std::uint64_t aux) {
    const int dest = o.team->member(team_rank);
    const std::uint64_t seqstep = std::uint64_t{o.seq} << 32 | step;
    // Whole elements per fragment, so a posted receive can combine each fragment as it comes.
    const std::size_t chunk =
        o.req.elem > 1 && o.req.elem <= _chunk ? _chunk - _chunk % o.req.elem : _chunk;
    std::size_t at = 0;
    do {
        const std::size_t n = std::min(chunk, data.size() - at);
        _ctx.request(dest, _h_fragment, data.subspan(at, n), o.team->id, seqstep, o.sig.word,
                     o.sig.fixed, std::uint64_t{data.size()}, std::uint64_t{at}, aux);
        ++_messages;
        at += n;
    } while (at < data.size());
}

// -------------------------------------------------------------------------------- running

void coll_layer::make_ready(op& o) {
    o.waiting = false;
    _ready.push_back(&o);
    core::signal_deferred(_ctx);
}

std::size_t coll_layer::run_deferred() {
    std::size_t ran = 0;
    guard g(*this);
    while (!_ready.empty()) {
        op* o = _ready.front();
        _ready.pop_front();
        ++ran;
        o->body.h.resume();
        if (o->body.h.done()) {
            finish(*o);
        } else if (!o->waiting) {
            _ready.push_back(o);  // suspended without a key: cannot happen, keep it moving
        } else {
            if (resumable(*o)) make_ready(*o);
        }
    }
    return ran;
}

void coll_layer::finish(op& o) {
    std::unique_ptr<op> own(&o);
    std::erase(_active, &o);
    std::exception_ptr e = o.body.h.promise().error;
    if (!e) e = o.error;
    if (e && !o.error) {
        // An operator (or a type) threw on this rank: the others cannot complete without it.
        try {
            std::rethrow_exception(e);
        } catch (const std::exception& x) {
            core::fail_job(_ctx, "rank " + std::to_string(_rank) + " failed in " + o.req.call +
                                     " on team " + o.team->name + ": " + x.what());
        } catch (...) {
            core::fail_job(_ctx, "rank " + std::to_string(_rank) + " failed in " + o.req.call +
                                     " on team " + o.team->name);
        }
    }
    o.done(std::move(o.out), e);
}

void coll_layer::check_stall(op& o) {
    const team_state& t = *o.team;
    std::string what = std::string(o.req.call) + ": rank " + std::to_string(_rank) +
                       ": collective #" + std::to_string(o.seq) + " on team " + t.name + " (" +
                       describe(o.sig) + ") has waited more than " + std::to_string(_timeout) +
                       " s (config::epoch_timeout)";
    if (o.waiting) {
        const int from = t.team_rank_of(o.awaited.source);
        what += " for a message from " + rank_text(t, from) + " at step " +
                std::to_string(o.awaited.step);
        std::string elsewhere;
        for (const auto& [k, e] : _mailbox.items()) {
            if (k.source != o.awaited.source || (k.team == t.id && k.seq == o.seq)) continue;
            elsewhere += elsewhere.empty() ? "" : ", ";
            elsewhere += describe(e.sig) + " (team id " + std::to_string(k.team) +
                         ", collective #" + std::to_string(k.seq) + ")";
            if (elsewhere.size() > 400) break;
        }
        if (!elsewhere.empty()) {
            what += "; that rank has sent messages of other collectives here: " + elsewhere +
                    " (different calls or teams on different ranks?)";
        }
    }
    core::fail_job(_ctx, "rank " + std::to_string(_rank) + " failed: " + what);
    throw error(errc::timeout, what);
}

}  // namespace am::coll::detail
