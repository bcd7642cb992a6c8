// SPDX-License-Identifier: MIT
// The dist layer of one rank: am::async's records packed per (team, destination) into batches
// of up to max_medium() bytes, the batches' handler that runs them, fragments for a record
// larger than a batch, counts per team for am::dist::barrier's termination detection, and the
// rank's table of dist objects (containers) by (team, number).
#pragma once

#include <am/coll.hpp>
#include <am/core/layer.hpp>
#include <am/detail/async.hpp>

#include <am/dist/object.hpp>
#include "../util/maybe_lock.hpp"

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

namespace am::detail {

/// What the program's table holds for one key (src/dist/registry.cpp).
struct async_fn_info {
    async_runner run = nullptr;
    std::string shown;  // a readable name for errors
    bool ambiguous = false;
};
/// The dist layer of `ctx`: the one running records on this thread when it is `ctx`'s (no
/// search of the context's layers), else as dist_of.
dist_layer& dist_running(context& ctx, const char* call);
/// The table's entry for `key`, or null.
const async_fn_info* async_find(std::uint64_t key) noexcept;

/// Batch header: the team its records are counted on and how many records follow.
struct batch_header {
    std::uint64_t team;
    std::uint32_t records;
    std::uint32_t reserved;
};
/// Record header; the arguments follow, then padding to 16 bytes.
struct record_header {
    std::uint64_t fn;
    std::uint64_t bytes;  // of arguments
};
inline constexpr std::size_t record_align = 16;
static_assert(sizeof(batch_header) == record_align && sizeof(record_header) == record_align);

class dist_layer final : public core::layer {
  public:
    static constexpr core::key key{"dist (async, containers)"};

    dist_layer(context& ctx, const config& cfg);
    ~dist_layer() override;

    record_out open(std::uint64_t team, int dest, std::uint64_t fn, const char* call);
    void close(const record_out& o, const char* call);
    void abort(const record_out& o) noexcept;

    /// Sends every batch of `team` (every team when 0); returns how many were sent.
    std::size_t flush(std::uint64_t team);
    /// am::dist::barrier: flushes and waits until every record of the team has run.
    void barrier(const coll::team& t);

    /// Dist objects: a number for the next object of team `team` (the same on every member when
    /// they create them in the same order), and the table of this rank's live objects.
    std::uint32_t next_object(std::uint64_t team);
    void add_object(std::uint64_t team, std::uint32_t number, void* obj, const char* type);
    void remove_object(std::uint64_t team, std::uint32_t number) noexcept;
    /// The object, or throws errc::bad_context naming `call` when this rank has none.
    void* object(std::uint64_t team, std::uint32_t number, const char* type, const char* call);
    /// An object that combines operations locally holds some: the team's barrier flushes it.
    void hold(dist::object_base* o);
    void unhold(dist::object_base* o) noexcept;

    void on_batch(int source, std::span<const std::byte> data);
    void on_fragment(int source, std::span<const std::byte> data, std::uint64_t id,
                     std::uint64_t total, std::uint64_t offset);

    [[nodiscard]] context& ctx() const noexcept { return _ctx; }
    [[nodiscard]] std::string report() const override;

  private:
    /// Whether another thread may run this rank's handlers now (a progress thread starts after
    /// the layers are made, so this is asked each time).
    [[nodiscard]] bool locking() const noexcept { return core::locking(_ctx); }
    /// The layer's lock, taken only when locking().
    [[nodiscard]] util::maybe_lock<std::recursive_mutex> lock() const {
        return {_mutex, locking()};
    }
    struct team_counts;
    struct out_buffer {
        std::vector<std::byte> bytes;  // batch_header, then records
        std::uint64_t team = 0;
        team_counts* counts = nullptr;
        int dest = 0;
        std::uint32_t records = 0;
        bool listed = false;  // in _filled, counted as pending work
    };
    struct team_counts {
        std::atomic<std::uint64_t> sent{0}, handled{0};
        std::uint32_t objects = 0;
        // This rank's batches on the team, by destination job rank (made on first use).
        std::vector<std::unique_ptr<out_buffer>> out;
    };
    struct assembly {
        std::vector<std::byte> bytes;
        std::uint64_t received = 0;
    };
    using object_key = std::pair<std::uint64_t, std::uint32_t>;
    struct object_entry {
        void* obj;
        const char* type;
    };

    struct outgoing {
        int dest = 0;
        std::vector<std::byte> bytes;
        bool large = false;
    };
    out_buffer& buffer(std::uint64_t team, int dest);
    team_counts& counts(std::uint64_t team);
    void truncate(const record_out& o) noexcept;
    std::vector<std::byte> detach(out_buffer& b);
    void list(out_buffer& b);
    void unlist(out_buffer& b) noexcept;
    void enqueue(outgoing&& m);
    std::size_t drain();
    void transmit(const outgoing& m);
    void send_large(int dest, const std::vector<std::byte>& bytes);
    void run_batch(int source, std::span<const std::byte> data);
    void run_record(int source, std::uint64_t fn, std::span<const std::byte> args);
    [[noreturn]] void fail(std::string what) const;
    std::size_t run_deferred();
    void flush_holding(std::uint64_t team);

    context& _ctx;
    int _rank;
    std::size_t _batch;        // bytes per batch (max_medium)
    std::uint64_t _max_bytes;  // AM_MAX_PAYLOAD
    handler<category::medium> _h_batch;
    handler<category::medium, std::uint64_t, std::uint64_t, std::uint64_t> _h_fragment;

    mutable std::recursive_mutex _mutex;  // taken only when core::locking
    // Batches being filled, by (team, dest); the list of those holding records.
    std::vector<out_buffer*> _filled;
    std::vector<std::vector<std::byte>> _spare;
    std::deque<outgoing> _outq;  // detached, to send in this order
    bool _sending = false;       // a drain() is sending _outq
    std::unordered_map<std::uint64_t, std::unique_ptr<team_counts>> _teams;
    std::map<std::pair<int, std::uint64_t>, assembly> _assembling;  // by (source, id)
    std::map<object_key, object_entry> _objects;
    std::vector<dist::object_base*> _holding;  // objects with operations combined locally
    // The object the last record named (records of one batch mostly name one).
    object_key _last_key{0, 0};
    object_entry _last{nullptr, nullptr};
    team_counts* _last_team = nullptr;  // the team of _last_team_id
    std::uint64_t _last_team_id = 0;
    std::unordered_map<std::uint64_t, const async_fn_info*> _fns;  // the rank's cache
    std::uint64_t _last_fn = 0;
    const async_fn_info* _last_info = nullptr;
    std::uint64_t _next_large = 0;
    // Statistics.
    std::uint64_t _records = 0, _batches = 0, _large = 0;
};

}  // namespace am::detail
