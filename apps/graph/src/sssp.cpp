// SPDX-License-Identifier: MIT
// Δ-stepping single-source shortest paths on the typed layer.
#include "bitmap.hpp"
#include "crew.hpp"

#include <graph/graph.hpp>

#include <algorithm>
#include <atomic>
#include <bit>
#include <cmath>
#include <cstdio>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>

namespace am::graph {
namespace {

std::string number(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", x);
    return buf;
}

struct relax {
    std::uint32_t vertex;
    std::uint32_t parent;
    float dist;
};

constexpr std::uint64_t no_bucket = std::numeric_limits<std::uint64_t>::max();
constexpr std::uint64_t bucket_limit = std::numeric_limits<std::uint32_t>::max();
constexpr std::uint32_t no_parent = std::numeric_limits<std::uint32_t>::max();

/// The bucket queues are a ring (Meyer & Sanders): every vertex in a queue is within the
/// heaviest edge of the bucket being processed, so ⌈max weight / Δ⌉ + 3 queues hold them all,
/// however long the paths. At most this many, per thread (24 bytes each when empty).
constexpr std::uint64_t max_ring = std::uint64_t{1} << 20;

/// How many relaxations ahead the relaxation loops prefetch the target's distance.
constexpr std::size_t prefetch_distance = 16;

/// Bucket fusion relaxes what landed in the current bucket during a light round in the same
/// round only while it is smaller than this: a small remainder would otherwise cost a whole
/// round (two epochs) for little work, while a large one is relaxed better after the round,
/// when more of its distances have settled (fewer repeated relaxations).
constexpr std::size_t fuse_below = 1024;

/// Threads > 1: each thread owns a slice of the rank's vertices, a multiple of this many (a
/// cache line of a bitmap), and is the only one to touch their labels, bucket entries and
/// bitmap bits, as if it were a rank of its own: their cache lines stay in its core.
constexpr std::uint32_t slice_granule = 512;

/// Threads > 1: a thread takes its mail every this many of its vertices in a round.
constexpr std::size_t mail_every = 16;

/// Threads > 1: relaxations that one thread found for a vertex of thread o, collected into a
/// chunk that goes to o's mailbox when full (and at the end of each round's work), as a
/// coalesced message would. The owner alone then reads and writes its vertices' labels; a
/// chunk moves a cache line per five relaxations from core to core, in order, where
/// lowering labels in place would move one line per relaxation, at random.
constexpr std::size_t chunk_relaxations = 256;

/// Sets a flag for a scope and clears it on leaving, also by an exception.
class flag_scope {
  public:
    flag_scope(bool& flag, bool value) : _flag(flag) { _flag = value; }
    ~flag_scope() { _flag = false; }
    flag_scope(const flag_scope&) = delete;
    flag_scope& operator=(const flag_scope&) = delete;

  private:
    bool& _flag;
};

struct outbox {
    std::vector<relax> filling;  // relax::vertex is local
    std::uint64_t min_bucket = no_bucket;
};

/// Threads > 1: the chunks posted to one thread, under a lock taken once per chunk.
/// `posted` lets the owner look without the lock.
struct alignas(64) mailbox {
    std::mutex lock;
    std::vector<std::vector<relax>> chunks;
    std::uint64_t entries = 0;
    std::uint64_t min_bucket = no_bucket;
    std::atomic<bool> posted{false};
};

/// What one thread of the rank works on: the bucket queues of its own vertices, the vertices
/// it settled and relaxed in the current bucket and round, and its outboxes to the other
/// threads. One lane per thread of the crew.
struct alignas(64) lane {
    std::size_t index = 0;  // its thread
    std::uint32_t lo = 0;   // it owns local vertices [lo, lo + span)
    std::uint32_t span = 0;
    [[nodiscard]] bool owns(std::uint32_t local) const noexcept { return local - lo < span; }
    std::vector<std::vector<std::uint32_t>> buckets;  // a ring: bucket b at b & (ring − 1)
    std::vector<std::uint32_t> settled;               // removed from the current bucket
    std::vector<std::uint32_t> touched;               // their done_in_round bit is set
    std::vector<std::uint32_t> round;                 // the part of the bucket being relaxed
    std::vector<std::uint32_t> fused;                 // one rank thread: handler-side fusion
    std::vector<outbox> outboxes;                     // threads > 1: [owner]
    std::vector<std::vector<relax>> mail;             // threads > 1: chunks taken from its mailbox
    std::vector<std::uint64_t> dirty_words;  // words of final_global it changed this bucket
};

}  // namespace

struct sssp_kernel::state {
    context& ctx;
    const csr_graph& g;
    kernel_options opt;
    float inv_delta;
    reductions red;
    search_result* out = nullptr;
    const bool parallel;
    // Tentative distances alone in one array: a relaxation reads only this one, at random, and
    // 4 bytes a vertex keep it in a core's L2 at twice the vertices a {distance, parent} pair
    // would (SCALE 18 on 2 ranks: 512 KiB). The parent (`pred`) is written on improvement only.
    std::vector<float> dist;
    std::vector<std::uint32_t> pred;
    std::uint64_t floor_bucket = 0;  // improvements go to this bucket or a later one
    bool fuse_arrivals = false;      // one rank thread, light round: handlers fuse (see below)
    bool fusing = false;             // a handler is fusing: nested ones only queue
    std::uint32_t slice = 0;         // threads > 1: vertices per thread
    std::uint64_t ring = 0;          // bucket queues per lane, a power of two
    std::vector<lane> lanes;
    std::vector<mailbox> mailboxes;            // threads > 1: [owner]
    alignas(64) std::atomic<int> finished{0};  // threads > 1: threads done with a round's work
    bitmap in_settled;
    bitmap done_in_round;  // relaxed at its current distance in the current light round
    bitmap final_global;   // global: vertices of completed buckets (final)
    std::vector<std::uint8_t> word_dirty;  // local words of final_global changed this bucket
    std::unique_ptr<crew> workers;         // threads > 1 only
    message_type<relax> relax_msg;
    coalesced<relax> relaxes;
    word_broadcast final_words;

    state(context& c, const csr_graph& graph, kernel_options o)
        : ctx(c),
          g(graph),
          opt(o),
          inv_delta(1.0f / o.delta),
          red(c),
          parallel(o.threads != 1),
          in_settled(graph.local_n),
          done_in_round(graph.local_n),
          final_global(graph.part.n()),
          word_dirty((std::uint64_t{graph.local_n} + 63) / 64, 0),
          relax_msg(
              c, [this](int, std::span<const relax> batch) { receive(batch); }, "sssp.relax"),
          relaxes(relax_msg),
          final_words(c, final_global, "sssp.final") {
        ring = ring_size(max_weight());
        workers = make_crew(c, o.threads, "sssp_kernel");
        const auto threads = static_cast<std::uint32_t>(o.threads);
        const std::uint32_t per = (graph.local_n + threads - 1) / threads;
        slice = std::max(slice_granule, (per + slice_granule - 1) / slice_granule * slice_granule);
        lanes.resize(parallel ? threads : 1);
        mailboxes = std::vector<mailbox>(parallel ? threads : 0);
        for (std::size_t t = 0; t < lanes.size(); ++t) {
            lanes[t].index = t;
            lanes[t].buckets.resize(ring);
            const std::uint64_t lo = std::min<std::uint64_t>(t * slice, graph.local_n);
            const std::uint64_t hi = t + 1 == lanes.size()
                                         ? graph.local_n
                                         : std::min<std::uint64_t>((t + 1) * slice, graph.local_n);
            lanes[t].lo = static_cast<std::uint32_t>(lo);
            lanes[t].span = static_cast<std::uint32_t>(hi - lo);
            if (parallel) lanes[t].outboxes.resize(threads);
        }
    }

    [[noreturn]] void bucket_overflow(float d) const {
        throw std::invalid_argument("sssp_kernel: rank " + std::to_string(g.rank) + ": distance " +
                                    number(d) + " / delta " + number(opt.delta) +
                                    " exceeds 2^32 buckets; use a larger delta");
    }

    /// The heaviest edge weight of the graph (collective).
    [[nodiscard]] float max_weight() {
        std::uint32_t bits = 0;  // of a non-negative float: ordered as the values are
        for (const adjacency& a : g.adj) bits = std::max(bits, std::bit_cast<std::uint32_t>(a.w));
        const std::uint64_t most = ~red.min(~std::uint64_t{bits});
        return std::bit_cast<float>(static_cast<std::uint32_t>(most));
    }

    /// Bucket queues for edges up to `heaviest`: the next power of two ≥ ⌈heaviest / Δ⌉ + 3
    /// (rounding margin). Throws std::invalid_argument naming the rank beyond `max_ring`.
    [[nodiscard]] std::uint64_t ring_size(float heaviest) const {
        const double span = std::ceil(static_cast<double>(heaviest) / opt.delta) + 3;
        if (!(span <= static_cast<double>(max_ring))) {
            throw std::invalid_argument("sssp_kernel: rank " + std::to_string(g.rank) +
                                        ": heaviest edge " + number(heaviest) + " / delta " +
                                        number(opt.delta) + " needs " + number(span) +
                                        " buckets, more than 2^20; use a larger delta");
        }
        return std::bit_ceil(static_cast<std::uint64_t>(span));
    }

    [[nodiscard]] std::vector<std::uint32_t>& queue(lane& L, std::uint64_t b) noexcept {
        return L.buckets[b & (ring - 1)];
    }
    [[nodiscard]] const std::vector<std::uint32_t>& queue(const lane& L,
                                                          std::uint64_t b) const noexcept {
        return L.buckets[b & (ring - 1)];
    }

    [[nodiscard]] std::uint64_t bucket_of(float d) const noexcept {
        return static_cast<std::uint64_t>(d * inv_delta);
    }

    /// Threads > 1: the thread that owns local vertex `local`.
    [[nodiscard]] std::size_t owner(std::uint32_t local) const noexcept {
        return std::min<std::size_t>(local / slice, lanes.size() - 1);
    }

    /// Threads > 1: hands the relaxation of another thread's vertex `local` over to it.
    void hand_over(lane& L, std::uint32_t local, float d, std::uint32_t parent) {
        const std::size_t o = owner(local);
        outbox& box = L.outboxes[o];
        box.filling.push_back(relax{local, parent, d});
        box.min_bucket = std::min(box.min_bucket, std::max(bucket_of(d), floor_bucket));
        if (box.filling.size() >= chunk_relaxations) post(box, mailboxes[o]);
    }

    /// Lowers `local`'s distance to `d` through `parent` if that is shorter, and puts it in
    /// its bucket; `local` is `L`'s thread's.
    void improve(lane& L, std::uint32_t local, float d, std::uint32_t parent) {
        if (!(d < dist[local])) return;
        dist[local] = d;
        pred[local] = parent;
        // Rounding on a bucket boundary can lower a vertex whose bucket is done (a relaxation
        // sent before its final word arrived): it is no longer final, and is relaxed again.
        const std::uint64_t v = std::uint64_t{g.first} + local;
        if (final_global.test_shared(v)) [[unlikely]]
            final_global.reset_shared(v);
        // Never below the bucket being processed: rounding in d·(1/Δ) may put a distance
        // reached by a heavy edge back into the bucket whose heavy round is running.
        const std::uint64_t b = std::max(bucket_of(d), floor_bucket);
        if (b >= bucket_limit) [[unlikely]]
            bucket_overflow(d);
        // A vertex improved again during a (fused) light round is relaxed again.
        if (b == floor_bucket) done_in_round.reset(local);
        queue(L, b).push_back(local);
    }

    template <bool Parallel>
    void receive_into(lane& L, std::span<const relax> batch) {
        const std::size_t n = batch.size();
        for (std::size_t i = 0; i < n; ++i) {
            if (i + prefetch_distance < n) {
                // With threads only this thread's own labels: another's would leave its core.
                const std::uint32_t ahead = batch[i + prefetch_distance].vertex - g.first;
                if (!Parallel || L.owns(ahead)) __builtin_prefetch(&dist[ahead], 1);
            }
            const std::uint32_t local = batch[i].vertex - g.first;
            if (Parallel && !L.owns(local)) {
                hand_over(L, local, batch[i].dist, batch[i].parent);
            } else {
                improve(L, local, batch[i].dist, batch[i].parent);
            }
        }
    }

    void receive(std::span<const relax> batch) {
        if (!parallel) {
            receive_into<false>(lanes[0], batch);
            if (fuse_arrivals && !fusing) fuse_arrived(lanes[0]);
            return;
        }
        const int t = workers->self();
        if (t < 0) [[unlikely]] {
            throw std::logic_error("sssp_kernel: rank " + std::to_string(g.rank) +
                                   ": a relaxation ran on a thread outside the kernel's " +
                                   std::to_string(lanes.size()) +
                                   " threads; no other thread may poll the context during run");
        }
        receive_into<true>(lanes[static_cast<std::size_t>(t)], batch);
    }

    /// Threads > 1: moves `box`'s chunk to the owner's mailbox. Out of line: `improve`, which
    /// calls it once per chunk, stays small enough to be inlined into the relaxation loops.
    [[gnu::noinline]] static void post(outbox& box, mailbox& m) {
        std::vector<relax> chunk;
        chunk.reserve(chunk_relaxations);
        chunk.swap(box.filling);
        std::lock_guard lock(m.lock);
        m.entries += chunk.size();
        m.min_bucket = std::min(m.min_bucket, std::exchange(box.min_bucket, no_bucket));
        m.chunks.push_back(std::move(chunk));
        m.posted.store(true, std::memory_order_release);
    }

    /// Threads > 1: posts every partial chunk of lane `L`.
    void post_all(lane& L) {
        for (std::size_t o = 0; o < L.outboxes.size(); ++o) {
            if (!L.outboxes[o].filling.empty()) post(L.outboxes[o], mailboxes[o]);
        }
    }

    /// Threads > 1: applies the chunks posted to lane `L`'s thread.
    void take_mail(lane& L) {
        mailbox& m = mailboxes[L.index];
        if (!m.posted.load(std::memory_order_acquire)) return;
        L.mail.clear();  // what a throwing `improve` left is dropped, not posted again
        {
            std::lock_guard lock(m.lock);
            L.mail.swap(m.chunks);
            m.entries = 0;
            m.min_bucket = no_bucket;
            m.posted.store(false, std::memory_order_relaxed);
        }
        for (const std::vector<relax>& chunk : L.mail) {
            const std::size_t n = chunk.size();
            for (std::size_t i = 0; i < n; ++i) {
                if (i + prefetch_distance < n) {
                    __builtin_prefetch(&dist[chunk[i + prefetch_distance].vertex], 1);
                }
                improve(L, chunk[i].vertex, chunk[i].dist, chunk[i].parent);
            }
        }
        L.mail.clear();
    }

    /// Threads > 1, at the end of a thread's work in a round: posts its partial chunks, then
    /// takes mail (and polls) until every thread has posted, and takes the rest.
    void finish_work(lane& L) {
        {
            struct arrive {  // also when posting throws: the others wait for it
                std::atomic<int>& count;
                ~arrive() { count.fetch_add(1, std::memory_order_acq_rel); }
            } arrived{finished};
            post_all(L);
        }
        const int threads = static_cast<int>(mailboxes.size());
        for (unsigned spin = 0; finished.load(std::memory_order_acquire) < threads; ++spin) {
            take_mail(L);
            // Polls now and then only: with more threads than cores, a poll on every turn
            // (it takes the context's locks) slows the threads still working.
            if (spin % 64 != 0 || ctx.poll() == 0) std::this_thread::yield();
        }
        take_mail(L);
    }

    /// Relaxes edges [begin, end) of `u`'s list.
    template <bool Parallel>
    void relax_edges(lane& L, std::uint32_t u, float du, std::uint64_t begin, std::uint64_t end) {
        const adjacency* list = g.adj.data() + g.offsets[u];
        const std::uint32_t parent = g.first + u;
        // In blocks: first the entries whose target is not final, without a branch (most
        // are final, at random, which a branch would mispredict), then those.
        constexpr std::uint64_t block = 64;
        std::uint32_t open[block];
        for (std::uint64_t start = begin; start < end; start += block) {
            const std::uint64_t stop = std::min(end, start + block);
            std::uint32_t n = 0;
            for (std::uint64_t i = start; i < stop; ++i) {
                open[n] = static_cast<std::uint32_t>(i);
                // With threads, other ranks' words are stored by handlers on other threads.
                const bool final = Parallel ? final_global.test_shared(list[i].target)
                                            : final_global.test(list[i].target);
                n += final ? 0U : 1U;
            }
            // Then split into this thread's targets and the others (other ranks', and with
            // threads other threads'), again without a branch.
            std::uint32_t local[block], remote[block];
            std::uint32_t nl = 0, nr = 0;
            for (std::uint32_t k = 0; k < n; ++k) {
                const std::uint32_t target = list[open[k]].target;
                const bool mine = Parallel ? L.owns(target - g.first) : g.owns(target);
                local[nl] = remote[nr] = open[k];
                nl += mine ? 1U : 0U;
                nr += mine ? 0U : 1U;
            }
            for (std::uint32_t k = 0; k < nl; ++k) {
                if (k + prefetch_distance < nl) {
                    __builtin_prefetch(&dist[list[local[k + prefetch_distance]].target - g.first],
                                       1);
                }
                const adjacency& a = list[local[k]];
                improve(L, a.target - g.first, du + a.w, parent);
            }
            for (std::uint32_t k = 0; k < nr; ++k) {
                const adjacency& a = list[remote[k]];
                if (Parallel && g.owns(a.target)) {
                    hand_over(L, a.target - g.first, du + a.w, parent);
                } else {
                    relaxes.send(relax{a.target, parent, du + a.w}, g.part.owner(a.target));
                }
            }
        }
    }

    /// First edge of `local`'s list (sorted by weight) with weight ≥ `limit`. A linear scan:
    /// the prefix is short (weights below Δ) and read in order, where a binary search would
    /// wait for a cache miss at every step.
    [[nodiscard]] std::uint64_t split(std::uint32_t local, float limit) const noexcept {
        const adjacency* list = g.adj.data() + g.offsets[local];
        const std::uint64_t n = g.degree(local);
        std::uint64_t i = 0;
        while (i < n && list[i].w < limit) ++i;
        return i;
    }

    /// Prefetches what processing vertex list[i + k] will read: its offsets and distance 2k
    /// ahead, its adjacency k ahead (the lists are visited in bucket order, i.e. at random).
    void prefetch_vertex(const std::vector<std::uint32_t>& list, std::size_t i) const noexcept {
        constexpr std::size_t k = 8;
        if (i + 2 * k < list.size()) {
            __builtin_prefetch(&g.offsets[list[i + 2 * k]]);
            __builtin_prefetch(&dist[list[i + 2 * k]]);
        }
        if (i + k < list.size()) __builtin_prefetch(g.adj.data() + g.offsets[list[i + k]]);
    }

    /// Before a round's loop takes vertex list[i]: with threads, the mail every
    /// `mail_every` vertices; the prefetches.
    template <bool Parallel>
    void next_vertex(lane& L, const std::vector<std::uint32_t>& list, std::size_t i) {
        if constexpr (Parallel) {
            if (i % mail_every == 0) take_mail(L);
        }
        prefetch_vertex(list, i);
    }

    /// Whether local vertex `u`'s bucket is done (with threads, other threads store the words).
    template <bool Parallel>
    [[nodiscard]] bool is_final(std::uint32_t u) const noexcept {
        const std::uint64_t v = std::uint64_t{g.first} + u;
        return Parallel ? final_global.test_shared(v) : final_global.test(v);
    }

    /// Upper end of bucket b's distances.
    [[nodiscard]] float bucket_end(std::uint64_t b) const noexcept {
        return static_cast<float>(b + 1) * opt.delta;
    }

    /// Relaxes the inner short edges of the vertices in `L.round` that are still in bucket
    /// `b` and not relaxed at their current distance yet.
    template <bool Parallel>
    void relax_light(lane& L, const std::vector<std::uint32_t>& list, std::uint64_t b) {
        for (std::size_t i = 0; i < list.size(); ++i) {
            next_vertex<Parallel>(L, list, i);
            const std::uint32_t u = list[i];
            const float du = dist[u];
            // A queue entry is stale when a later improvement queued the vertex in an earlier
            // bucket: that bucket is done, so the vertex is final (distances only fall, and a
            // vertex queued in the floor bucket is not final yet; `improve` clears the bit of
            // a final vertex that rounding lowers, so that one is relaxed again).
            if (is_final<Parallel>(u) || done_in_round.test_and_set(u)) continue;
            L.touched.push_back(u);
            if (!in_settled.test_and_set(u)) L.settled.push_back(u);
            // Inner short edges only (w < end of the bucket − d(u)); the outer ones are
            // relaxed once with u's final distance in the heavy round, which splits the list
            // with the same comparison.
            relax_edges<Parallel>(L, u, du, 0, split(u, bucket_end(b) - du));
        }
    }

    /// One round of light-edge relaxations from `L`'s vertices now in bucket `b`, fused:
    /// what lands in bucket `b` meanwhile (local improvements, and relaxations from other
    /// ranks handled during sends) is relaxed in the same round while it is small
    /// (`fuse_below`).
    template <bool Parallel>
    void light_work(lane& L, std::uint64_t b) {
        do {
            L.round.clear();
            L.round.swap(queue(L, b));
            relax_light<Parallel>(L, L.round, b);
            if constexpr (Parallel) take_mail(L);
        } while (opt.bucket_fusion && !queue(L, b).empty() && queue(L, b).size() < fuse_below);
        relaxes.flush();  // this thread's buffers
    }

    /// One rank thread, in a light round's relaxation handler: relaxes what the batch put in
    /// the current bucket, and what that relaxes into it, while it is small — bucket fusion
    /// across ranks, as one thread fuses its own improvements. Handlers nested in its sends
    /// only queue (`fusing`); this loop takes their entries. The round's epoch then ends with
    /// the bucket done on every rank instead of leaving the arrivals to another round (two
    /// epochs), and runs the general detector, as its handlers send.
    void fuse_arrived(lane& L) {
        const flag_scope scope(fusing, true);
        const std::uint64_t b = floor_bucket;
        while (!queue(L, b).empty() && queue(L, b).size() < fuse_below) {
            L.fused.clear();
            L.fused.swap(queue(L, b));
            relax_light<false>(L, L.fused, b);
        }
    }

    /// Relaxes the outer short and heavy edges of `L`'s settled vertices, whose distances are
    /// final now.
    template <bool Parallel>
    void heavy_work(lane& L, std::uint64_t b) {
        publish_final<Parallel>(L);
        for (std::size_t i = 0; i < L.settled.size(); ++i) {
            next_vertex<Parallel>(L, L.settled, i);
            const std::uint32_t u = L.settled[i];
            const float du = dist[u];
            relax_edges<Parallel>(L, u, du, split(u, bucket_end(b) - du), g.degree(u));
            in_settled.words()[u >> 6] = 0;
        }
        L.settled.clear();
        relaxes.flush();
    }

    /// Runs `work(lane)` in an epoch: on the rank's thread, or with threads on every thread of
    /// the crew (each first clearing its done_in_round bits of the last light round and
    /// applying its mail, at the end exchanging mail until all are done), every one polling
    /// until the epoch has ended. Relaxations handed over after that (by handlers) wait in
    /// the mailboxes.
    template <class Work>
    void in_epoch(Work&& work, int depth = 0) {
        epoch ep(ctx, {.depth = depth});
        if (!parallel) {
            work(lanes[0]);
            ep.end();
        } else {
            finished.store(0, std::memory_order_relaxed);
            workers->run_then(
                [&](int t) {
                    lane& L = lanes[static_cast<std::size_t>(t)];
                    try {
                        clear_touched(L);
                        take_mail(L);
                        work(L);
                    } catch (...) {
                        finish_work(L);  // the others wait for every thread to finish
                        throw;
                    }
                    finish_work(L);
                },
                [&] { ep.end(); });
            for (lane& L : lanes) post_all(L);
        }
        out->messages += ep.stats().messages_sent;
    }

    /// Clears the done_in_round bits `L`'s thread set (its own words).
    void clear_touched(lane& L) {
        for (const std::uint32_t u : L.touched) done_in_round.words()[u >> 6] = 0;
        L.touched.clear();
    }

    void light_round(std::uint64_t b) {
        floor_bucket = b;
        if (parallel) {
            in_epoch([&](lane& L) { light_work<true>(L, b); });
        } else {
            const flag_scope scope(fuse_arrivals, opt.bucket_fusion);
            in_epoch([&](lane& L) { light_work<false>(L, b); }, fuse_arrivals ? -1 : 0);
            clear_touched(lanes[0]);
        }
    }

    /// Marks `L`'s settled vertices final and sends the changed bitmap words to every rank.
    /// With threads each publishes its own, whose words no other thread writes (others read
    /// them meanwhile: the stores are atomic).
    template <bool Parallel>
    void publish_final(lane& L) {
        for (const std::uint32_t u : L.settled) {
            const std::uint64_t v = std::uint64_t{g.first} + u;
            if constexpr (Parallel) {
                final_global.set_shared(v);
            } else {
                final_global.set(v);
            }
            const std::uint64_t w = u >> 6;
            if (word_dirty[w] == 0) {
                word_dirty[w] = 1;
                L.dirty_words.push_back((g.first >> 6) + w);
            }
        }
        for (const std::uint64_t w : L.dirty_words) {
            final_words.send(w);
            word_dirty[w - (g.first >> 6)] = 0;
        }
        L.dirty_words.clear();
        // Now, not at the heavy epoch's end: the other ranks skip relaxations towards these
        // vertices during the heavy round.
        final_words.flush();
    }

    void heavy_round(std::uint64_t b) {
        floor_bucket = b + 1;
        if (parallel) {
            in_epoch([&](lane& L) { heavy_work<true>(L, b); });
        } else {
            in_epoch([&](lane& L) { heavy_work<false>(L, b); });
        }
    }

    [[nodiscard]] std::uint64_t next_bucket(std::uint64_t after) const noexcept {
        std::uint64_t best = no_bucket;
        // A queue holds one bucket's vertices only: all lie within ring − 1 buckets of `after`.
        for (const lane& L : lanes) {
            for (std::uint64_t b = after; b < std::min(after + ring, best); ++b) {
                if (!queue(L, b).empty()) {
                    best = b;
                    break;
                }
            }
        }
        for (const mailbox& m : mailboxes) {
            if (m.entries > 0) best = std::min(best, std::max(m.min_bucket, after));
        }
        return best;
    }

    /// Entries of bucket `b` on this rank, counting every handed-over relaxation that may
    /// land there.
    [[nodiscard]] std::uint64_t bucket_size(std::uint64_t b) const noexcept {
        std::uint64_t n = 0;
        for (const lane& L : lanes) {
            n += queue(L, b).size();
        }
        for (const mailbox& m : mailboxes) n += m.min_bucket <= b ? m.entries : 0;
        return n;
    }

    void reset_search() {
        dist.assign(g.local_n, std::numeric_limits<float>::infinity());
        pred.assign(g.local_n, no_parent);
        // Everything a search leaves, also one that threw part-way.
        for (lane& L : lanes) {
            for (auto& b : L.buckets) b.clear();
            for (outbox& box : L.outboxes) box = outbox{};
            L.settled.clear();
            L.touched.clear();
            L.round.clear();
            L.mail.clear();
            L.dirty_words.clear();
        }
        in_settled.clear();
        done_in_round.clear();
        std::fill(word_dirty.begin(), word_dirty.end(), std::uint8_t{0});
        for (mailbox& m : mailboxes) {
            m.chunks.clear();
            m.entries = 0;
            m.min_bucket = no_bucket;
            m.posted.store(false, std::memory_order_relaxed);
        }
        final_global.clear();
        floor_bucket = 0;
    }

    void run(std::uint32_t root, search_result& result) {
        out = &result;
        reset_search();
        result.messages = 0;
        result.bottom_up_levels = 0;
        if (g.owns(root)) {
            const std::uint32_t r = root - g.first;
            improve(lanes[parallel ? owner(r) : 0], r, 0.0f, root);
        }
        int rounds = 0;
        for (std::uint64_t b = red.min(next_bucket(0)); b != no_bucket;
             b = red.min(next_bucket(b + 1))) {
            while (red.sum(bucket_size(b)) > 0) {
                light_round(b);
                ++rounds;
            }
            heavy_round(b);
            ++rounds;
        }
        result.levels = rounds;
        result.pred.resize(g.local_n);
        result.dist.resize(g.local_n);
        std::uint64_t reached_degrees = 0;
        for (std::uint32_t v = 0; v < g.local_n; ++v) {
            result.dist[v] = dist[v];
            result.pred[v] = pred[v] == no_parent ? -1 : static_cast<std::int64_t>(pred[v]);
            if (pred[v] != no_parent) reached_degrees += g.degree(v);
        }
        result.edges = red.sum(reached_degrees) / 2;
    }
};

delta_choice auto_delta(context& ctx, const csr_graph& g) {
    double sums[3] = {0, 0, 0};  // weights, adjacency entries, vertices with edges
    for (const adjacency& a : g.adj) sums[0] += a.w;
    sums[1] = static_cast<double>(g.adj.size());
    for (std::uint32_t v = 0; v < g.local_n; ++v) sums[2] += g.degree(v) > 0 ? 1 : 0;
    reductions(ctx).sum(sums);
    delta_choice c;
    if (sums[1] == 0) {
        c.delta = 1;  // no edges: any Δ
        return c;
    }
    c.mean_weight = sums[0] / sums[1];
    c.mean_degree = sums[1] / sums[2];
    c.delta =
        std::max(1e-6f, static_cast<float>(auto_delta_factor * c.mean_weight / c.mean_degree));
    return c;
}

sssp_kernel::sssp_kernel(context& ctx, const csr_graph& g, kernel_options opt) {
    if (!(opt.delta == 0 || opt.delta >= 1e-6f) || !std::isfinite(opt.delta)) {
        throw std::invalid_argument("sssp_kernel: rank " + std::to_string(ctx.rank()) + ": delta " +
                                    number(opt.delta) + " outside [1e-6, inf) (0: automatic)");
    }
    if (opt.delta == 0) opt.delta = auto_delta(ctx, g).delta;
    _s = std::make_unique<state>(ctx, g, opt);
}
float sssp_kernel::delta() const noexcept {
    return _s->opt.delta;
}
sssp_kernel::~sssp_kernel() = default;
void sssp_kernel::run(std::uint32_t root, search_result& out) {
    _s->run(root, out);
}

}  // namespace am::graph
