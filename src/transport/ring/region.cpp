// SPDX-License-Identifier: MIT
#include "region.hpp"

#include "../../util/backoff.hpp"

#include <am/error.hpp>

#include <algorithm>
#include <chrono>
#include <cstring>

namespace am::transport::ring {
namespace {

constexpr std::size_t align_up(std::size_t v, std::size_t a) {
    return (v + a - 1) / a * a;
}
constexpr std::size_t page = 4096;
constexpr std::size_t ring_stride(std::size_t ring_bytes) {
    return sizeof(ring_ctl) + align_up(data_bytes(ring_bytes), 64);
}
// The count on a line of its own (read by every poll of its rank), then the entries.
constexpr std::size_t announce_stride(std::size_t ranks) {
    return 64 + align_up(ranks * num_lanes * sizeof(std::uint32_t), 64);
}
[[maybe_unused]] bool rank_in_range(int rank, std::uint32_t ranks) {
    return rank >= 0 && static_cast<std::uint32_t>(rank) < ranks;
}

}  // namespace

region_layout layout(const region_params& p) {
    AM_ASSERT(p.ranks >= 1, "region of no ranks");
    AM_ASSERT(valid_capacity(p.ring_bytes), "region ring size is not a power of two");
    AM_ASSERT(p.segment_bytes % page == 0, "region segment size is not a multiple of a page");
    region_layout h{};
    const auto n = static_cast<std::size_t>(p.ranks);
    h.ranks = static_cast<std::uint32_t>(p.ranks);
    h.ring_bytes = p.ring_bytes;
    h.segment_bytes = p.segment_bytes;
    h.ranks_off = align_up(sizeof(region_header), 64);
    h.gather_off = align_up(h.ranks_off + n * sizeof(rank_info), 64);
    h.announce_off = align_up(h.gather_off + n * gather_slot_bytes, 64);
    h.rings_off = align_up(h.announce_off + n * announce_stride(n), page);
    h.segments_off = align_up(h.rings_off + n * n * num_lanes * ring_stride(p.ring_bytes), page);
    h.total = h.segments_off + n * p.segment_bytes;
    return h;
}

void initialize(std::byte* base, const region_params& p) {
    auto* hdr = reinterpret_cast<region_header*>(base);
    hdr->l = layout(p);
    // Ranks see this through thread creation, fork or the launcher's later exec: no fence.
    hdr->magic = region_magic;
}

region::region(std::byte* base) : _base(base), _hdr(reinterpret_cast<region_header*>(base)) {
    if (_hdr->magic != region_magic) {
        throw error(errc::system, "am: shared job region is not initialised (bad magic)");
    }
    // Every process maps the region built by one binary: the layout is the one its sizes give.
    const region_layout& l = _hdr->l;
    AM_ASSERT(l == layout({static_cast<int>(l.ranks), l.ring_bytes, l.segment_bytes}),
              "region header: offsets differ from the layout of its sizes");
}

std::byte* region::at(std::uint64_t off, std::uint64_t bytes) const noexcept {
    AM_ASSERT(off <= _hdr->l.total && bytes <= _hdr->l.total - off,
              "part of the job region outside it");
    return _base + off;
}

rank_info& region::info(int rank) const noexcept {
    AM_ASSERT(rank_in_range(rank, _hdr->l.ranks), "rank out of range");
    return *reinterpret_cast<rank_info*>(at(
        _hdr->l.ranks_off + static_cast<std::size_t>(rank) * sizeof(rank_info), sizeof(rank_info)));
}

std::byte* region::gather_slot(int rank) const noexcept {
    AM_ASSERT(rank_in_range(rank, _hdr->l.ranks), "rank out of range");
    return at(_hdr->l.gather_off + static_cast<std::size_t>(rank) * gather_slot_bytes,
              gather_slot_bytes);
}

announce_area region::announcements(int rank) const noexcept {
    AM_ASSERT(rank_in_range(rank, _hdr->l.ranks), "rank out of range");
    const std::size_t stride = announce_stride(_hdr->l.ranks);
    std::byte* a = at(_hdr->l.announce_off + static_cast<std::size_t>(rank) * stride, stride);
    return {reinterpret_cast<std::atomic<std::uint32_t>*>(a),
            reinterpret_cast<std::atomic<std::uint32_t>*>(a + 64)};
}

ring_ctl* region::ring(int src, int dst, unsigned lane) const noexcept {
    AM_ASSERT(rank_in_range(src, _hdr->l.ranks) && rank_in_range(dst, _hdr->l.ranks),
              "ring between ranks out of range");
    AM_ASSERT(lane < num_lanes, "ring lane out of range");
    const auto n = static_cast<std::size_t>(_hdr->l.ranks);
    const std::size_t idx = (static_cast<std::size_t>(src) * n + dst) * num_lanes + lane;
    const std::size_t stride = ring_stride(_hdr->l.ring_bytes);
    return reinterpret_cast<ring_ctl*>(at(_hdr->l.rings_off + idx * stride, stride));
}

std::byte* region::ring_data(int src, int dst, unsigned lane) const noexcept {
    return reinterpret_cast<std::byte*>(ring(src, dst, lane)) + sizeof(ring_ctl);
}

std::byte* region::segment(int rank) const noexcept {
    AM_ASSERT(rank_in_range(rank, _hdr->l.ranks), "rank out of range");
    return at(_hdr->l.segments_off + static_cast<std::size_t>(rank) * _hdr->l.segment_bytes,
              _hdr->l.segment_bytes);
}

// reason_claimed: 0 free, 1 being written by the first failing caller, 2 written. A caller
// that loses the claim raises `failed` at once, so a reader may see the flag before the reason
// is complete (two threads, or two ranks of a node, failing together): `reason` waits for 2.
void region::fail(std::string_view reason) const noexcept {
    std::uint32_t expected = 0;
    if (_hdr->reason_claimed.compare_exchange_strong(expected, 1)) {
        const std::size_t n = std::min(reason.size(), reason_bytes - 1);
        std::memcpy(_hdr->reason, reason.data(), n);
        _hdr->reason[n] = '\0';
        _hdr->reason_claimed.store(2, std::memory_order_release);
    }
    _hdr->failed.store(1, std::memory_order_release);
}

std::string region::reason() const {
    if (!failed()) return {};
    // Bounded: a writer killed in the middle of its copy must not hang the readers (≈ 50 ms).
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(50);
    unsigned backoff = 0;
    while (_hdr->reason_claimed.load(std::memory_order_acquire) != 2 &&
           std::chrono::steady_clock::now() < until) {
        util::backoff(backoff, 64);
    }
    return std::string(_hdr->reason, strnlen(_hdr->reason, reason_bytes));
}

ring_transport::ring_transport(std::byte* base, int rank)
    : transport(rank, region(base).ranks()), _region(base) {
    const int n = size();
    _max_message = ring::max_message(_region.header().l.ring_bytes);
    // Rings are attached when first used (a rank of a large job talks to few peers): memory
    // and the poll's scan follow the communication pattern, not the job's size.
    _out = util::zeroed_array<producer>(static_cast<std::size_t>(n) * num_lanes);
    _announced = _region.announcements(rank);
    absorb();  // rings announced in an earlier run of this region
    _region.info(rank).state.store(static_cast<std::uint32_t>(rank_state::attached),
                                   std::memory_order_release);
    set_spin_limit(util::spin_rounds_for(n));
}

void ring_transport::attach(int dest, unsigned lane) {
    const std::size_t cap = _region.header().l.ring_bytes;
    ring_ctl* ctl = _region.ring(rank(), dest, lane);
    _out[static_cast<std::size_t>(dest) * num_lanes + lane] =
        producer(ctl, _region.ring_data(rank(), dest, lane), cap);
    if (ctl->announced.exchange(1, std::memory_order_acq_rel) != 0) return;
    const announce_area a = _region.announcements(dest);
    const std::uint32_t k = a.count->fetch_add(1, std::memory_order_acq_rel);
    // Each ring is announced once (the exchange above): never more than the entries.
    AM_ASSERT(k < static_cast<std::uint32_t>(size()) * num_lanes, "announce entries overflow");
    const auto order = static_cast<std::uint32_t>((num_lanes - 1 - lane) * size() + rank());
    a.entries[k].store(order + 1, std::memory_order_release);
}

void ring_transport::absorb() {
    const std::uint32_t count = _announced.count->load(std::memory_order_acquire);
    const std::size_t cap = _region.header().l.ring_bytes;
    const int n = size();
    for (; _absorbed < count; ++_absorbed) {
        const std::uint32_t e = _announced.entries[_absorbed].load(std::memory_order_acquire);
        if (e == 0) return;  // claimed, not written yet: the next poll takes it
        const unsigned order = e - 1;
        AM_ASSERT(order < static_cast<unsigned>(n) * num_lanes, "announced ring out of range");
        const int src = static_cast<int>(order % static_cast<unsigned>(n));
        const unsigned lane = order < static_cast<unsigned>(n) ? num_lanes - 1 : 0;
        in_ring r{
            consumer(_region.ring(src, rank(), lane), _region.ring_data(src, rank(), lane), cap),
            src, lane, order};
        auto at = std::upper_bound(_in.begin(), _in.end(), order,
                                   [](unsigned o, const in_ring& x) { return o < x.order; });
        _in.insert(at, r);
    }
}

std::span<std::byte> ring_transport::segment(int rank) noexcept {
    return {_region.segment(rank), _region.header().l.segment_bytes};
}

void ring_transport::join(coll_kind kind, std::uint32_t bytes, const idle_fn& idle) {
    const coll_id id = next_collective(kind, bytes);
    const unsigned parity = id.seq() & 1u;
    // Ordered before the other ranks' reads by the barrier's acquire-release counter.
    _region.info(rank()).coll[parity].store(id.word, std::memory_order_relaxed);
    _joining = id;
    struct clear {
        coll_id& c;
        ~clear() { c = coll_id{0}; }
    } clear_after{_joining};
    wait_all(idle);
    for (int r = 0; r < size(); ++r) {
        if (_region.info(r).coll[parity].load(std::memory_order_relaxed) == id.word) continue;
        std::vector<std::uint64_t> ids(static_cast<std::size_t>(size()));
        for (int q = 0; q < size(); ++q) {
            ids[static_cast<std::size_t>(q)] =
                _region.info(q).coll[parity].load(std::memory_order_relaxed);
        }
        collective_mismatch(id, ids);
    }
}

std::string ring_transport::collective_stragglers() const {
    const coll_id id = _joining;
    if (id.word == 0) return {};
    std::string missing;
    int count = 0;
    for (int r = 0; r < size(); ++r) {
        const std::uint64_t w = _region.info(r).coll[id.seq() & 1u].load(std::memory_order_relaxed);
        if (w == id.word) continue;
        if (count++ < 16) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    if (count == 0) return {};
    if (count > 16) missing += " and " + std::to_string(count - 16) + " more";
    return (count == 1 ? "rank " : "ranks ") + missing + (count == 1 ? " has" : " have") +
           " not joined " + collective_names().call(id.kind()) + " (collective #" +
           std::to_string(id.seq()) + ")";
}

void ring_transport::check_departed() const {
    const coll_id id = _joining;
    for (int r = 0; r < size(); ++r) {
        const rank_info& info = _region.info(r);
        if (info.state.load(std::memory_order_acquire) !=
                static_cast<std::uint32_t>(rank_state::exited) ||
            info.coll[id.seq() & 1u].load(std::memory_order_relaxed) == id.word) {
            continue;
        }
        const std::string what =
            collective_names().call(id.kind()) + ": rank " + std::to_string(rank()) + ": rank " +
            std::to_string(r) + " has exited (its last am::run finished) while this rank waits " +
            "for it in " + collective_names().call(id.kind()) + " (collective #" +
            std::to_string(id.seq()) +
            "): every rank must call am::run the same number of times and make the same " +
            "collective calls";
        _region.fail("rank " + std::to_string(rank()) + " failed: " + what);
        throw error(errc::collective_mismatch, what);
    }
}

void ring_transport::barrier(coll_kind kind, const idle_fn& idle) {
    join(kind, 0, idle);
}

void ring_transport::wait_all(const idle_fn& idle) {
    _order.publish();
    struct observe_on_return {
        cross_process_order& o;
        ~observe_on_return() { o.observe(); }
    } observe{_order};
    region_header& h = _region.header();
    const std::uint32_t gen = h.barrier_generation.load(std::memory_order_acquire);
    if (h.barrier_count.fetch_add(1, std::memory_order_acq_rel) + 1 == h.l.ranks) {
        h.barrier_count.store(0, std::memory_order_relaxed);
        h.barrier_generation.store(gen + 1, std::memory_order_release);
        return;
    }
    // A failure seen after the last rank released the barrier does not undo it: the barrier
    // returns, and the rank's next poll or wait reports the failure.
    const auto released = [&] {
        return h.barrier_generation.load(std::memory_order_acquire) != gen;
    };
    unsigned backoff = 0;
    for (unsigned round = 1; !released(); ++round) {
        if (_region.failed()) {
            if (released()) return;
            throw_failed();
        }
        if (round % 64 == 0 && _joining.word != 0) check_departed();
        try {
            if (idle && idle() != 0) backoff = 0;
        } catch (const error& e) {
            if (e.code() == errc::aborted && released()) return;
            throw;
        }
        util::backoff(backoff, spin_limit());
    }
}

void ring_transport::allgather(coll_kind kind, const void* in, void* out, std::size_t bytes,
                               const idle_fn& idle, const done_fn& gathered) {
    if (bytes > gather_bytes) {
        throw error(errc::invalid_argument, "am: allgather of " + std::to_string(bytes) +
                                                " bytes exceeds the limit of " +
                                                std::to_string(gather_bytes));
    }
    std::memcpy(_region.gather_slot(rank()), in, bytes);
    join(kind, static_cast<std::uint32_t>(bytes), idle);
    for (int r = 0; r < size(); ++r) {
        std::memcpy(static_cast<std::byte*>(out) + static_cast<std::size_t>(r) * bytes,
                    _region.gather_slot(r), bytes);
    }
    if (gathered) gathered();
    wait_all(idle);  // no rank overwrites its slot before every rank has read it
}

// One barrier per reduction: each rank writes its words into the slot of this reduction's
// parity, passes the barrier, and adds every rank's slot. The next reduction uses the other
// slot, and a rank writes this one again only after the next barrier, which every rank
// reaches after it has read this reduction's slots.
void ring_transport::allreduce_sum(coll_kind kind, const std::uint64_t* in, std::uint64_t* out,
                                   std::size_t n, const idle_fn& idle) {
    if (n * sizeof(std::uint64_t) > reduce_slot_bytes) {
        throw error(errc::invalid_argument, "am: allreduce of " + std::to_string(n) +
                                                " words exceeds the limit of " +
                                                std::to_string(reduce_slot_bytes / 8));
    }
    const std::size_t off = gather_bytes + _reduce_parity * reduce_slot_bytes;
    _reduce_parity ^= 1u;
    std::memcpy(_region.gather_slot(rank()) + off, in, n * sizeof(std::uint64_t));
    join(kind, 0, idle);  // ranks may contribute different counts
    for (std::size_t i = 0; i < n; ++i) out[i] = 0;
    std::uint64_t w[reduce_slot_bytes / sizeof(std::uint64_t)];
    for (int r = 0; r < size(); ++r) {
        std::memcpy(w, _region.gather_slot(r) + off, n * sizeof(std::uint64_t));
        for (std::size_t i = 0; i < n; ++i) out[i] += w[i];
    }
}

void ring_transport::mark_finished() noexcept {
    _region.info(rank()).state.store(static_cast<std::uint32_t>(rank_state::finished),
                                     std::memory_order_release);
}

void ring_transport::throw_failed() const {
    throw error(errc::aborted,
                "rank " + std::to_string(rank()) + ": job aborted: " + _region.reason());
}

}  // namespace am::transport::ring
