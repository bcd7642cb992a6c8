// SPDX-License-Identifier: MIT
// The Split-C layer of one rank: segment allocation, remote-flag identities, and split-phase
// put/get and remote atomics. Three implementations behind one interface: direct copies (and CPU
// atomics) on segments mapped in this process (threads, shm), the one-sided network
// (core::remote_*, ucx: rma_net.cpp), and the reference implementation on core active messages
// (a put is a long or packed medium request whose last message increments the flag; a get is a
// request answered by the data; an atomic a request run at the owner).
#pragma once

#include "segment_heap.hpp"

#include <am/context.hpp>
#include <am/core/layer.hpp>

#include <atomic>
#include <memory>
#include <mutex>
#include <utility>
#include <vector>

namespace am::detail {

// The shape of a put or get, as <am/detail/splitc.hpp> defines it for the layer's entry points.
using splitc::detail::rma_shape;

/// `op` with CPU atomics on the `t` word at `p` (aligned); returns the old word (rma_atomic.cpp).
std::uint64_t apply_atomic(std::byte* p, atomic_op op, splitc::detail::atomic_type t,
                           std::uint64_t operand, std::uint64_t compare) noexcept;

/// Counters by position, so a put can name the target's counter: the n-th live counter of
/// every rank shares one identity.
class counter_table {
  public:
    static constexpr std::uint32_t capacity = 4096;
    static constexpr std::uint32_t none = 0xffffffffu;

    counter_table();
    /// The lowest free position, or `none` when `capacity` counters are alive.
    std::uint32_t attach(counter* k) noexcept;
    void detach(std::uint32_t id) noexcept;
    [[nodiscard]] counter* find(std::uint32_t id) const noexcept {
        return id < capacity ? _slots[id].load(std::memory_order_acquire) : nullptr;
    }

  private:
    std::mutex _mutex;
    std::unique_ptr<std::atomic<counter*>[]> _slots;
};

/// One block of an operation: `len` bytes at `remote` in the target's segment and `local` here.
struct rma_piece {
    std::uint64_t remote;
    std::byte* local;
    std::size_t len;
};

class rma_layer;

/// An operation on the one-sided network (core::remote_*) waiting for its `done`: the callback
/// queues it, and the layer's deferred work (inside a poll, as a handler) calls `finish`.
struct net_record {
    rma_layer* layer = nullptr;
    virtual ~net_record() = default;
    virtual void finish(std::uint64_t value) = 0;
};

class rma_layer final : public core::layer {
  public:
    static constexpr core::key key{"Split-C (rma)"};

    rma_layer(context& ctx, const config& cfg);

    void put(const rma_shape& s, counter* flag, counter* done, const char* call);
    void get(const rma_shape& s, counter* flag, const char* call);
    std::uint64_t atomic(const splitc::detail::atomic_args& a,
                         const splitc::detail::atomic_completion* split, const char* call);

    std::uint64_t allocate(std::size_t bytes, std::size_t align);
    void deallocate(int rank, std::uint64_t offset);
    void exchange(const void* in, void* out, std::size_t bytes);
    [[nodiscard]] void* local(int rank, std::uint64_t offset, std::size_t bytes) const noexcept;
    [[nodiscard]] std::uint64_t offset_of(const void* p, std::size_t bytes) const;
    [[nodiscard]] counter_table& counters() noexcept { return _counters; }

    // Handler bodies (called by the registered trampolines in rma_layer.cpp).
    void on_flag(token& t, std::uint32_t id);
    void on_put_done(token& t, std::uint64_t flagword, std::uint64_t done);
    void on_put_packed(token& t, std::span<const std::byte> payload, std::uint64_t flagword,
                       std::uint64_t done);
    void on_get(token& t, std::uint64_t offset, std::uint64_t len, std::uint64_t dst,
                std::uint64_t flag);
    void on_get_long(token& t, std::uint64_t offset, std::uint64_t len, std::uint64_t dst_offset,
                     std::uint64_t flag);
    void on_getv(token& t, std::span<const std::byte> desc, std::uint64_t record,
                 std::uint64_t first);
    void on_getv_data(token& t, std::span<const std::byte> data, std::uint64_t record,
                      std::uint64_t first, std::uint64_t count);
    void on_atomic(token& t, std::uint64_t offset, std::uint64_t operand, std::uint64_t compare,
                   std::uint64_t code, std::uint64_t record);
    void on_atomic_reply(token& t, std::uint64_t record, std::uint64_t old);

  private:
    struct getv_record;
    struct atomic_record;
    struct net_put;
    struct net_get;

    void check(const rma_shape& s, const char* call) const;
    void check_remote(int source, std::uint64_t offset, std::uint64_t len, const char* what) const;
    void check_sends(bool sends, const char* call) const;
    void check_atomic(const splitc::detail::atomic_args& a, const char* call) const;
    [[nodiscard]] std::uint64_t check_flag(counter* flag, int target, const char* call) const;
    [[nodiscard]] bool direct(int rank) const noexcept {
        return _direct && _bases[static_cast<std::size_t>(rank)] != nullptr;
    }
    /// Not mapped here, but reachable by the one-sided network (ucx) on the automatic path.
    [[nodiscard]] bool net(int rank) const noexcept {
        return _direct && !direct(rank) && core::one_sided(_ctx, rank);
    }
    void put_direct(const rma_shape& s);
    void get_direct(const rma_shape& s);
    void put_am(const rma_shape& s, std::uint64_t flagword, counter* done);
    void get_am(const rma_shape& s, counter* flag);
    void getv_am(int rank, std::vector<rma_piece> pieces, counter* flag);
    void finish_put(token& t, std::uint64_t flagword, std::uint64_t done);
    void wait_for(counter& k, std::uint64_t n);
    void start_atomic(const splitc::detail::atomic_args& a, atomic_record* rec);
    void put_net(const rma_shape& s, std::uint64_t flagword, counter* done);
    void get_net(const rma_shape& s, counter* flag);
    void put_arrived(net_put& rec);
    // The one-sided network's `done` (core::remote_done): queues the record for run_net_done.
    static void net_done(void* arg, std::uint64_t value);
    std::size_t run_net_done();

    context& _ctx;
    int _rank;
    int _size;
    bool _direct;
    std::size_t _segment_bytes;
    std::size_t _max_medium;
    std::vector<std::byte*> _bases;  // mapped segments by rank (null: not mapped here)
    segment_heap _heap;
    counter_table _counters;
    std::vector<std::byte> _scratch;  // packs get replies (handlers run one at a time)
    std::mutex _net_mutex;            // guards _net_finished (callbacks and polls may race)
    std::vector<std::pair<net_record*, std::uint64_t>> _net_finished;

    handle_t<void (*)(token&, std::uint32_t)> _h_flag;
    handle_t<void (*)(token&, std::span<std::byte>, std::uint64_t, std::uint64_t)> _h_put_long;
    handle_t<void (*)(token&, std::span<const std::byte>, std::uint64_t, std::uint64_t)>
        _h_put_packed;
    handle_t<void (*)(token&, std::uint64_t)> _h_ack;
    handle_t<void (*)(token&, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t)> _h_get;
    handle_t<void (*)(token&, std::span<const std::byte>, std::uint64_t, std::uint64_t)>
        _h_get_data;
    handle_t<void (*)(token&, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t)>
        _h_get_long;
    handle_t<void (*)(token&, std::span<std::byte>, std::uint64_t)> _h_get_long_data;
    handle_t<void (*)(token&, std::span<const std::byte>, std::uint64_t, std::uint64_t)> _h_getv;
    handle_t<void (*)(token&, std::span<const std::byte>, std::uint64_t, std::uint64_t,
                      std::uint64_t)>
        _h_getv_data;
    handle_t<void (*)(token&, std::uint64_t, std::uint64_t, std::uint64_t, std::uint64_t,
                      std::uint64_t)>
        _h_atomic;
    handle_t<void (*)(token&, std::uint64_t, std::uint64_t)> _h_atomic_reply;
};

}  // namespace am::detail
