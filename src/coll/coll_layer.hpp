// SPDX-License-Identifier: MIT
// The collectives layer: teams, a mailbox of collective messages keyed by (team, collective,
// step, source), and each collective as a coroutine that sends, then awaits the messages it
// needs. Every coroutine runs inside the rank's poll (the layer's deferred work), so its sends
// never block and a progress thread may drive it as well as the rank's own waits.
#pragma once

#include <am/coll.hpp>
#include <am/core/layer.hpp>

#include <algorithm>
#include <chrono>
#include <coroutine>
#include <cstdint>
#include <deque>
#include <exception>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace am::coll::detail {

/// A team as one rank sees it. The world team is the identity mapping and holds no arrays
/// (every thread rank of a process has one: P ints each would be O(P²) in one process); a team
/// from split holds its members (O(its size)). Go through member / team_rank_of / size.
struct team_state {
    context* ctx = nullptr;
    std::uint64_t id = 0;      // the same on every member; world is 1
    bool identity = false;     // the world team: team rank = job rank, `world_size` members
    int world_size = 0;        // identity only
    std::vector<int> members;  // job ranks, by team rank (not identity)
    std::vector<std::pair<int, int>> by_world;  // (job rank, team rank), sorted (not identity)
    int rank = 0;
    std::string name;
    std::uint32_t next_seq = 0;  // collectives started on it
    std::uint32_t splits = 0;    // splits of it

    /// Number of members.
    [[nodiscard]] int size() const noexcept {
        return identity ? world_size : static_cast<int>(members.size());
    }
    /// Job rank of member `team_rank` (in [0, size())).
    [[nodiscard]] int member(int team_rank) const noexcept {
        return identity ? team_rank : members[static_cast<std::size_t>(team_rank)];
    }
    /// Team rank of job rank `w`, -1 when it is not a member.
    [[nodiscard]] int team_rank_of(int w) const noexcept {
        if (identity) return w >= 0 && w < world_size ? w : -1;
        const auto it =
            std::lower_bound(by_world.begin(), by_world.end(), std::pair<int, int>{w, -1});
        return it != by_world.end() && it->first == w ? it->second : -1;
    }
};

/// A collective message's identity.
struct msg_key {
    std::uint64_t team;
    std::uint32_t seq;
    std::uint32_t step;
    int source;  // job rank
    auto operator<=>(const msg_key&) const = default;
};

/// The words that say what a collective is: equal on every member in one collective.
struct signature {
    std::uint64_t word = 0;   // kind, root, operator
    std::uint64_t fixed = 0;  // bytes per rank + 1 when they must agree, else 0
    friend bool operator==(const signature&, const signature&) = default;
};

/// A message (all its fragments) that arrived.
struct entry {
    signature sig;
    std::uint64_t total = 0;  // bytes
    std::uint64_t received = 0;
    std::uint64_t aux = 0;  // algorithm's word (a broadcast's whole size)
    blob data;
    bool complete() const noexcept { return received == total && started; }
    bool started = false;
};

struct msg_key_hash {
    std::size_t operator()(const msg_key& k) const noexcept {
        std::uint64_t h = k.team * 0x9e3779b97f4a7c15ull;
        h ^= (std::uint64_t{k.seq} << 32 | k.step) + 0x632be59bd9b4e019ull + (h << 6) + (h >> 2);
        h ^= static_cast<std::uint64_t>(static_cast<std::uint32_t>(k.source)) *
             0xff51afd7ed558ccdull;
        return static_cast<std::size_t>(h ^ (h >> 29));
    }
};

/// Messages that arrived and are not taken yet, by key: a rank running ahead (a broadcast's
/// root, a scan's rank 0) may leave thousands here.
class mailbox {
  public:
    entry* find(const msg_key& k) noexcept {
        const auto it = _items.find(k);
        return it == _items.end() ? nullptr : &it->second;
    }
    const entry* find(const msg_key& k) const noexcept {
        const auto it = _items.find(k);
        return it == _items.end() ? nullptr : &it->second;
    }
    entry& get(const msg_key& k) { return _items[k]; }
    entry take(const msg_key& k) {
        auto node = _items.extract(k);
        return node.empty() ? entry{} : std::move(node.mapped());
    }
    [[nodiscard]] const std::unordered_map<msg_key, entry, msg_key_hash>& items() const noexcept {
        return _items;
    }

  private:
    std::unordered_map<msg_key, entry, msg_key_hash> _items;
};

class coll_layer;
struct op;

/// A collective's coroutine: runs from `resume` in the layer's deferred work until it awaits a
/// message that has not arrived.
struct task {
    struct promise_type {
        std::exception_ptr error;
        task get_return_object() {
            return task{std::coroutine_handle<promise_type>::from_promise(*this)};
        }
        std::suspend_always initial_suspend() noexcept { return {}; }
        std::suspend_always final_suspend() noexcept { return {}; }
        void return_void() noexcept {}
        void unhandled_exception() noexcept { error = std::current_exception(); }
    };
    std::coroutine_handle<promise_type> h;
    explicit task(std::coroutine_handle<promise_type> handle = {}) noexcept : h(handle) {}
    task(task&& o) noexcept : h(std::exchange(o.h, {})) {}
    task& operator=(task&& o) noexcept {
        if (this != &o) {
            if (h) h.destroy();
            h = std::exchange(o.h, {});
        }
        return *this;
    }
    ~task() {
        if (h) h.destroy();
    }
};

/// A receive posted before its message comes: the fragments go straight into `target`, copied
/// or combined, instead of through the mailbox (for large messages: no copy, no allocation).
struct sink {
    msg_key key{};
    std::span<std::byte> target;
    bool combine = false;
    bool other_first = false;
    bool posted = false;
    bool done = false;
    std::uint64_t received = 0;
};

/// One collective in progress on this rank.
struct op {
    std::shared_ptr<team_state> team;
    std::uint32_t seq = 0;
    signature sig;
    request req;
    done_fn done;
    task body;
    std::vector<blob> out;
    std::exception_ptr error;  // a mismatch found by the handler
    bool waiting = false;
    msg_key awaited{};
    sink posted;
    bool finished = false;
};

class coll_layer final : public core::layer {
  public:
    static constexpr core::key key{"collectives (coll)"};

    coll_layer(context& ctx, const config& cfg);
    ~coll_layer() override;

    [[nodiscard]] const std::shared_ptr<team_state>& world() const noexcept { return _world; }
    /// Starts `r` on `t`; `done` runs from a later poll.
    void start(const std::shared_ptr<team_state>& t, request&& r, done_fn done);
    /// Runs `r` on `t` to completion, polling.
    std::vector<blob> run(const std::shared_ptr<team_state>& t, request&& r);
    [[nodiscard]] std::string report() const override;

    // The message handler's body.
    void on_fragment(int source, std::span<const std::byte> data, std::uint64_t team,
                     std::uint64_t seqstep, signature sig, std::uint64_t total,
                     std::uint64_t offset, std::uint64_t aux);

    // For the coroutines (src/coll/algorithms.cpp).
    struct recv_awaiter;
    recv_awaiter recv(op& o, int team_rank, std::uint32_t step);
    /// Posts the receive of message `step` from `team_rank` into `target` (combined into it with
    /// `combine_range` when `combine`, else copied); then `co_await posted(o)` waits for it.
    /// One posted receive per collective at a time.
    void post(op& o, int team_rank, std::uint32_t step, std::span<std::byte> target, bool combine,
              bool other_first);
    struct posted_awaiter;
    posted_awaiter posted(op& o);
    /// Sends `data` to member `team_rank` as message `step` of `o` (fragmented into mediums).
    void send(op& o, int team_rank, std::uint32_t step, std::span<const std::byte> data,
              std::uint64_t aux = 0);
    [[nodiscard]] std::size_t segment_bytes() const noexcept { return _chunk; }
    /// Takes the complete entry `k` out of the mailbox.
    entry take(const msg_key& k);
    /// As `take`, for collective `o`: a message of another call fails the job and throws.
    entry take_checked(op& o, const msg_key& k);

  private:
    class guard;
    std::size_t run_deferred();
    void check_arrived(op& o);
    void note_early(int source, const msg_key& k, const signature& sig);
    void check_signature(op& o, const msg_key& k, const signature& theirs);
    void finish(op& o);
    void make_ready(op& o);
    void check_stall(op& o);
    /// Whether a suspended collective can go on (its message is there, or it failed).
    bool resumable(const op& o) const noexcept;
    /// Copies or combines `data` (at byte `offset` of the message) into the posted receive.
    static void apply(op& o, std::uint64_t offset, std::span<const std::byte> data);
    task body_of(op& o);

    context& _ctx;
    int _rank;
    std::size_t _chunk;
    double _timeout;
    std::shared_ptr<team_state> _world;
    std::mutex _mutex;  // taken only while a progress thread may run handlers
    /// What this rank started on each of its teams: a message for a collective it has already
    /// finished was not consumed by it, so the sender made another call (a mismatch).
    struct team_record {
        std::uint64_t team = 0;
        std::uint32_t started = 0;
        std::string name;
        static constexpr std::size_t kept = 8;
        std::uint32_t seq[kept] = {};
        signature sig[kept] = {};
    };
    std::vector<team_record> _teams;
    /// A mismatch a handler found outside any collective of this rank (late or early
    /// messages): this rank's next blocking collective that the job's failure stops raises it.
    std::exception_ptr _found;
    void record_start(std::uint64_t team, const std::string& name, std::uint32_t seq,
                      const signature& sig);
    void check_late(int source, const msg_key& k, const signature& theirs);
    mailbox _mailbox;
    /// For each collective of this rank's teams that messages came for before it began here:
    /// the first such message's signature and source, checked when it begins.
    std::map<std::pair<std::uint64_t, std::uint32_t>, std::pair<signature, int>> _early;
    std::vector<op*> _active;  // started, not finished
    [[nodiscard]] op* active(std::uint64_t team, std::uint32_t seq) const noexcept;
    std::deque<op*> _ready;
    std::uint64_t _collectives = 0;
    std::uint64_t _messages = 0;
    am::detail::handle_t<void (*)(token&, std::span<const std::byte>, std::uint64_t, std::uint64_t,
                                  std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                                  std::uint64_t)>
        _h_fragment;

  public:
    struct posted_awaiter {
        coll_layer& layer;
        op& o;
        bool await_ready();
        void await_suspend(std::coroutine_handle<>) noexcept;
        void await_resume();
    };
    struct recv_awaiter {
        coll_layer& layer;
        op& o;
        msg_key key;
        bool await_ready();
        void await_suspend(std::coroutine_handle<>) noexcept;
        entry await_resume();
    };
};

/// The layer of `t`'s rank, for a call named `call`.
coll_layer& layer_of(const team& t, const char* call);
/// The coroutine of each kind (algorithms.cpp).
task run_algorithm(coll_layer& l, op& o);
/// Text of a signature for the errors ("am::coll::allreduce (8 bytes per rank)").
std::string describe(const signature& s);
signature signature_of(const request& r);

}  // namespace am::coll::detail
