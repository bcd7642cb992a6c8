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

// At each level, a rank (then the node it climbed from) with index i is member i mod k of the
// level's node i / k; the last node of a level may have fewer members.
std::vector<ring_transport::hop> ring_transport::path_of(const region& reg, int rank) {
    std::vector<hop> path;
    std::size_t first = 0;  // the level's first node
    auto i = static_cast<std::uint64_t>(rank);
    for (std::uint64_t c = static_cast<std::uint64_t>(reg.ranks()); c > 1;) {
        const std::uint64_t nodes = (c + tree_fan_in - 1) / tree_fan_in;
        const std::uint64_t g = i / tree_fan_in;
        path.push_back(
            {&reg.node(first + g), static_cast<unsigned>(i % tree_fan_in),
             static_cast<unsigned>(std::min<std::uint64_t>(tree_fan_in, c - g * tree_fan_in))});
        first += nodes;
        i = g;
        c = nodes;
    }
    return path;
}

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
    h.tree_off = align_up(h.gather_off + n * gather_slot_bytes, 64);
    h.announce_off = align_up(h.tree_off + tree_nodes(n) * sizeof(tree_node), 64);
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

tree_node& region::node(std::size_t index) const noexcept {
    AM_ASSERT(index < tree_nodes(_hdr->l.ranks), "tree node out of range");
    return *reinterpret_cast<tree_node*>(
        at(_hdr->l.tree_off + index * sizeof(tree_node), sizeof(tree_node)));
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
    // The collectives go on counting from the region's last run, as the tree's counts do.
    _pass = _region.info(rank).pass.load(std::memory_order_relaxed);
    _path = path_of(_region, rank);
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

// The collectives run over a combining tree (Yew, Tzeng and Lawrie's software combining tree):
// each rank writes its collective word (and its reduction) into its slot of its leaf node and
// counts itself in; the last of the node's members to arrive reads the others' slots, checks
// their words against its own, combines their reductions and goes on to the node above, and
// the last at the root publishes the release. A rank writes O(1) lines and the last arriver at
// a node reads `tree_fan_in`: O(log P) per rank where one central counter made every rank read
// all P slots. No rank waits for a particular one on the way up, so the tree is climbed by
// whichever ranks happen to run last, in the same time slice: ranks oversubscribed on few
// cores need about two turns each (arrive, see the release), as with the central counter,
// where rounds of point-to-point signals (a dissemination barrier) need one per round.
//
// Every rank's word meets every other's through the nodes, so ranks in different collectives
// fail the job (the last arriver at the lowest node where two words differ sees it), and no
// rank passes one: the root releases a pass only after every node has found its words equal.
void ring_transport::enter(coll_kind kind, std::uint32_t bytes) {
    const coll_id id = next_collective(kind, bytes);
    ++_pass;
    rank_info& me = _region.info(rank());
    me.coll[_pass & 1u].store(id.word, std::memory_order_relaxed);
    me.pass.store(_pass, std::memory_order_release);
    _joining = id;
}

void ring_transport::collective(coll_kind kind, std::uint32_t bytes, const idle_fn& idle,
                                reduction* red) {
    enter(kind, bytes);
    struct leave {
        ring_transport& t;
        ~leave() {
            t._joining = coll_id{0};
            t._order.observe();
        }
    } leave_after{*this};
    _order.publish();
    for (const hop& h : _path) {
        if (!arrive(h, idle, red)) {
            wait_released(idle);
            if (red != nullptr)
                std::memcpy(red->v, _region.header().release.v, red->n * sizeof(std::uint64_t));
            return;
        }
    }
    if (_path.empty()) return;  // a single rank
    tree_release& r = _region.header().release;
    if (red != nullptr) std::memcpy(r.v, red->v, red->n * sizeof(std::uint64_t));
    r.pass.store(_pass, std::memory_order_release);
}

// The slots are written before the count, whose read-modify-writes form one release
// sequence: the last arriver's acquire sees every member's slot. A member writes its slot
// again only after the release of this pass, which the last arriver's reads come before.
bool ring_transport::arrive(const hop& h, const idle_fn& idle, reduction* red) {
    tree_slot& mine = h.node->slot[h.slot];
    if (red != nullptr) std::memcpy(mine.v, red->v, red->n * sizeof(std::uint64_t));
    mine.word.store(_joining.word, std::memory_order_relaxed);
    const std::uint64_t before = h.node->arrived.fetch_add(1, std::memory_order_acq_rel);
    if (before + 1 != _pass * h.members) return false;
    for (unsigned j = 0; j < h.members; ++j) {
        const tree_slot& s = h.node->slot[j];
        if (j == h.slot) continue;
        if (s.word.load(std::memory_order_relaxed) != _joining.word) report_mismatch(idle);
        if (red == nullptr) continue;
        for (std::size_t i = 0; i < red->n; ++i) red->v[i] = combine(red->op, red->v[i], s.v[i]);
    }
    return true;
}

void ring_transport::wait_released(const idle_fn& idle) {
    const std::atomic<std::uint64_t>& flag = _region.header().release.pass;
    const auto released = [&] { return flag.load(std::memory_order_acquire) == _pass; };
    const int next = (rank() + 1) % size();
    unsigned backoff = 0;
    for (unsigned round = 1; !released(); ++round) {
        // A failure seen after the release does not undo it: the collective returns, and the
        // rank's next poll or wait reports the failure.
        if (_region.failed()) {
            if (released()) return;
            fail_waiting();
        }
        if (round % 64 == 0) check_departed(next);
        try {
            if (idle && idle() != 0) backoff = 0;
        } catch (const error& e) {
            if (e.code() != errc::aborted) throw;
            if (released()) return;
            fail_waiting();
        }
        util::backoff(backoff, spin_limit());
    }
}

void ring_transport::fail_waiting() {
    if (_region.header().mismatch_pass.load(std::memory_order_acquire) == _pass) {
        report_mismatch({});
    }
    throw_failed();
}

void ring_transport::report_mismatch(const idle_fn& idle) {
    std::uint64_t none = 0;
    _region.header().mismatch_pass.compare_exchange_strong(none, _pass, std::memory_order_acq_rel);
    collective_mismatch(_joining, published_words(idle));
}

// A mismatch is seen at the first node where two words meet, possibly before the other ranks
// have entered their collective of this pass. They do so soon (they are in it, or run towards
// it): the rank that sees the mismatch waits a little for their words, so that the report
// names every rank's call, as when every collective met at one central barrier.
std::vector<std::uint64_t> ring_transport::published_words(const idle_fn& idle) const {
    const auto entered = [this](int r) {
        return _region.info(r).pass.load(std::memory_order_acquire) >= _pass;
    };
    const auto all_entered = [&] {
        for (int r = 0; r < size(); ++r) {
            if (!entered(r)) return false;
        }
        return true;
    };
    const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(2);
    unsigned backoff = 0;
    while (!_region.failed() && !all_entered() && std::chrono::steady_clock::now() < until) {
        try {
            if (idle) idle();
        } catch (const error&) {
            break;
        }
        util::backoff(backoff, spin_limit());
    }
    // A rank past this pass is in the next one at most: it cannot pass that without this rank.
    std::vector<std::uint64_t> ids(static_cast<std::size_t>(size()));
    for (int r = 0; r < size(); ++r) {
        ids[static_cast<std::size_t>(r)] =
            entered(r) ? _region.info(r).coll[_pass & 1u].load(std::memory_order_relaxed) : 0;
    }
    return ids;
}

std::string ring_transport::collective_stragglers() const {
    const coll_id id = _joining;
    if (id.word == 0) return {};
    std::string missing;
    int count = 0;
    for (int r = 0; r < size(); ++r) {
        if (_region.info(r).pass.load(std::memory_order_acquire) >= _pass) continue;
        if (count++ < 16) missing += (missing.empty() ? "" : ", ") + std::to_string(r);
    }
    if (count == 0) return {};
    if (count > 16) missing += " and " + std::to_string(count - 16) + " more";
    return (count == 1 ? "rank " : "ranks ") + missing + (count == 1 ? " has" : " have") +
           " not joined " + collective_names().call(id.kind()) + " (collective #" +
           std::to_string(id.seq()) + ")";
}

// Each waiting rank watches the next one: the first live rank before a departed one sees it.
void ring_transport::check_departed(int r) const {
    const rank_info& info = _region.info(r);
    if (info.state.load(std::memory_order_acquire) !=
            static_cast<std::uint32_t>(rank_state::exited) ||
        info.pass.load(std::memory_order_acquire) >= _pass) {
        return;
    }
    const coll_id id = _joining;
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

void ring_transport::barrier(coll_kind kind, const idle_fn& idle) {
    collective(kind, 0, idle, nullptr);
}

// Each rank's slot has two halves, used by alternate collectives: a rank writes a half again
// two collectives later, after every rank has entered the one in between, so has read this.
void ring_transport::allgather(coll_kind kind, const void* in, void* out, std::size_t bytes,
                               const idle_fn& idle, const done_fn& gathered) {
    if (bytes > gather_bytes) {
        throw error(errc::invalid_argument, "am: allgather of " + std::to_string(bytes) +
                                                " bytes exceeds the limit of " +
                                                std::to_string(gather_bytes));
    }
    const std::size_t half = ((_pass + 1) & 1u) * gather_bytes;  // of the collective entered next
    std::memcpy(_region.gather_slot(rank()) + half, in, bytes);
    collective(kind, static_cast<std::uint32_t>(bytes), idle, nullptr);
    for (int r = 0; r < size(); ++r) {
        std::memcpy(static_cast<std::byte*>(out) + static_cast<std::size_t>(r) * bytes,
                    _region.gather_slot(r) + half, bytes);
    }
    if (gathered) gathered();
}

void ring_transport::allreduce_sum(coll_kind kind, const std::uint64_t* in, std::uint64_t* out,
                                   std::size_t n, const idle_fn& idle) {
    allreduce(kind, reduce_op::sum, in, out, n, idle);
}

void ring_transport::allreduce(coll_kind kind, reduce_op op, const std::uint64_t* in,
                               std::uint64_t* out, std::size_t n, const idle_fn& idle) {
    if (n > max_reduce_words) {
        throw error(errc::invalid_argument, "am: allreduce of " + std::to_string(n) +
                                                " words exceeds the limit of " +
                                                std::to_string(max_reduce_words));
    }
    reduction red{op, n, {}};
    std::memcpy(red.v, in, n * sizeof(std::uint64_t));
    collective(kind, 0, idle, &red);  // ranks may contribute different counts
    std::memcpy(out, red.v, n * sizeof(std::uint64_t));
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
