// SPDX-License-Identifier: MIT
// The algorithms, one coroutine per kind of collective. Each runs on one rank: it sends its
// messages and awaits the ones it needs (co_await l.recv(o, team_rank, step)); `step` numbers
// the messages of one collective between the same two ranks. Ranks are team ranks; `r` is this
// rank's, `n` the team's size.
#include "coll_layer.hpp"

#include <algorithm>
#include <cstring>

namespace am::coll::detail {
namespace {

int size_of(const op& o) {
    return o.team->size();
}

// ------------------------------------------------------------------------------- barrier

// Dissemination: in round k every rank signals rank r + 2^k and waits for r - 2^k.
task barrier_alg(coll_layer& l, op& o) {
    const int n = size_of(o), r = o.team->rank;
    std::uint32_t k = 0;
    for (int d = 1; d < n; d <<= 1, ++k) {
        l.send(o, (r + d) % n, k, {});
        (void)co_await l.recv(o, (r - d + n) % n, k);
    }
}

// ----------------------------------------------------------------------------- broadcast

// Binomial tree over ranks relative to the root, in segments of one medium message each (step
// s carries segment s), so a rank forwards segment s while s+1 is on its way: a pipeline.
task broadcast_alg(coll_layer& l, op& o) {
    const int n = size_of(o), r = o.team->rank, root = o.req.root;
    const int vr = (r - root + n) % n;
    auto abs = [&](int v) { return (v + root) % n; };
    int mask = 1, parent = -1;
    while (mask < n) {
        if ((vr & mask) != 0) {
            parent = vr - mask;
            break;
        }
        mask <<= 1;
    }
    std::vector<int> children;
    for (int m = mask >> 1; m > 0; m >>= 1) {
        if (vr + m < n) children.push_back(abs(vr + m));
    }
    const std::size_t seg = l.segment_bytes();
    blob data;
    if (parent < 0) {
        data = std::move(o.req.in.at(0));
    } else {
        entry first = co_await l.recv(o, abs(parent), 0);
        data.resize(first.aux);
        std::copy(first.data.begin(), first.data.end(), data.begin());
    }
    const std::size_t segments = std::max<std::size_t>(1, (data.size() + seg - 1) / seg);
    for (std::size_t s = 0; s < segments; ++s) {
        const std::size_t at = s * seg,
                          len = std::min(seg, data.size() - std::min(at, data.size()));
        if (parent >= 0 && s > 0) {
            l.post(o, abs(parent), static_cast<std::uint32_t>(s),
                   std::span<std::byte>(data.data() + at, len), false, false);
            co_await l.posted(o);
        }
        const std::span<const std::byte> part(data.data() + at, len);
        for (const int c : children) {
            l.send(o, c, static_cast<std::uint32_t>(s), part, data.size());
        }
    }
    o.out.push_back(std::move(data));
}

// -------------------------------------------------------------------------------- reduce

constexpr std::uint32_t forward_step = 1u << 20;

// Binomial tree to rank 0 in rank order (so non-commutative operators see rank order), then
// rank 0 forwards to the root when it is another rank.
task reduce_alg(coll_layer& l, op& o) {
    const int n = size_of(o), r = o.team->rank, root = o.req.root;
    blob acc = std::move(o.req.in.at(0));
    std::uint32_t k = 0;
    for (int mask = 1; mask < n; mask <<= 1, ++k) {
        if ((r & mask) != 0) {
            l.send(o, r - mask, k, acc);
            break;
        }
        if (r + mask < n) {
            entry e = co_await l.recv(o, r + mask, k);
            o.req.combine(acc, e.data, false);
        }
    }
    if (root == 0) {
        if (r == 0) o.out.push_back(std::move(acc));
    } else if (r == 0) {
        l.send(o, root, forward_step, acc);
    } else if (r == root) {
        entry e = co_await l.recv(o, 0, forward_step);
        o.out.push_back(std::move(e.data));
    }
}

// ----------------------------------------------------------------------------- allreduce

// Large element-wise allreduces: a vector this long is split between the ranks
// (reduce-scatter by recursive halving, then an allgather by recursive doubling): each rank
// combines and sends about 2·bytes instead of bytes·log2 P.
constexpr std::size_t split_bytes = 64 * 1024;

struct range {
    std::size_t lo, hi;  // elements
};

// Recursive doubling on the largest power of two p2 ≤ n: the first 2·(n − p2) ranks pair up
// first (the even one hands its value to the odd one and takes the result back at the end).
// Blocks stay in rank order, so the combine knows which side comes first. Large element-wise
// vectors go through reduce_scatter_allgather instead of the doubling.
task allreduce_alg(coll_layer& l, op& o) {
    const int n = size_of(o), r = o.team->rank;
    int p2 = 1;
    while (p2 * 2 <= n) p2 *= 2;
    const int rem = n - p2;
    blob acc = std::move(o.req.in.at(0));
    int newrank = r - rem;
    if (r < 2 * rem) {
        if (r % 2 == 0) {
            l.send(o, r + 1, 0, acc);
            newrank = -1;
        } else {
            entry e = co_await l.recv(o, r - 1, 0);
            o.req.combine(acc, e.data, true);
            newrank = r / 2;
        }
    }
    // Posted combines take whole elements per fragment: elements larger than a fragment do not
    // split.
    const bool split = o.req.elem > 0 && o.req.elem <= l.segment_bytes() && o.req.combine_range &&
                       acc.size() >= split_bytes &&
                       acc.size() / o.req.elem >= static_cast<std::size_t>(p2);
    if (newrank >= 0 && split) {
        // Among the p2 ranks left after the fold: in step k (mask = 2^k) a rank keeps half of
        // its range and sends the other half to its partner, whose half of that range it
        // combines into its own; then the halves travel back in reverse order. Masks grow, so
        // each rank's block always covers contiguous ranks, in order.
        const std::size_t e = o.req.elem;
        auto real = [rem](int np) { return np < rem ? np * 2 + 1 : np + rem; };
        auto bytes = [&acc, e](range x) {
            return std::span<std::byte>(acc.data() + x.lo * e, (x.hi - x.lo) * e);
        };
        std::vector<range> stack;
        range mine{0, acc.size() / e};
        std::uint32_t k = 1;
        for (int mask = 1; mask < p2; mask <<= 1, ++k) {
            const bool lower = (newrank & mask) == 0;
            const std::size_t mid = mine.lo + (mine.hi - mine.lo) / 2;
            const range keep = lower ? range{mine.lo, mid} : range{mid, mine.hi};
            const range give = lower ? range{mid, mine.hi} : range{mine.lo, mid};
            const int partner = real(newrank ^ mask);
            l.post(o, partner, k, bytes(keep), true, !lower);
            l.send(o, partner, k, bytes(give));
            co_await l.posted(o);
            stack.push_back(mine);
            mine = keep;
        }
        for (int mask = p2 >> 1; mask > 0; mask >>= 1, ++k) {
            const range whole = stack.back();
            stack.pop_back();
            const int partner = real(newrank ^ mask);
            const range theirs =
                mine.lo == whole.lo ? range{mine.hi, whole.hi} : range{whole.lo, mine.lo};
            l.post(o, partner, k, bytes(theirs), false, false);
            l.send(o, partner, k, bytes(mine));
            co_await l.posted(o);
            mine = whole;
        }
    } else if (newrank >= 0) {
        std::uint32_t k = 1;
        for (int mask = 1; mask < p2; mask <<= 1, ++k) {
            const int np = newrank ^ mask;
            const int partner = np < rem ? np * 2 + 1 : np + rem;
            l.send(o, partner, k, acc);
            entry e = co_await l.recv(o, partner, k);
            o.req.combine(acc, e.data, np < newrank);
        }
    }
    if (r < 2 * rem) {
        if (r % 2 == 1) {
            l.send(o, r - 1, forward_step, acc);
        } else {
            entry e = co_await l.recv(o, r + 1, forward_step);
            acc = std::move(e.data);
        }
    }
    o.out.push_back(std::move(acc));
}

// --------------------------------------------------------------------------------- scans

// Hillis-Steele: in round k every rank sends its prefix so far to r + 2^k and folds in the one
// from r − 2^k, which covers the ranks just before its own.
task scan_alg(coll_layer& l, op& o) {
    const int n = size_of(o), r = o.team->rank;
    const bool exclusive = o.req.what == kind::exclusive_scan;
    blob x = std::move(o.req.in.at(0));
    blob before;  // exclusive: the prefix of ranks 0 … r-1 so far
    bool have_before = false;
    std::uint32_t k = 0;
    for (int d = 1; d < n; d <<= 1, ++k) {
        if (r + d < n) l.send(o, r + d, k, x);
        if (r - d >= 0) {
            entry e = co_await l.recv(o, r - d, k);
            if (exclusive) {
                if (have_before) {
                    o.req.combine(before, e.data, true);
                } else {
                    before = e.data;
                    have_before = true;
                }
            }
            o.req.combine(x, e.data, true);
        }
    }
    if (!exclusive) {
        o.out.push_back(std::move(x));
    } else if (have_before) {
        o.out.push_back(std::move(before));
    }
}

// ------------------------------------------------------------------------ gather, allgather

task gather_alg(coll_layer& l, op& o) {
    const int n = size_of(o), r = o.team->rank, root = o.req.root;
    if (r != root) {
        l.send(o, root, 0, o.req.in.at(0));
        co_return;
    }
    o.out.resize(static_cast<std::size_t>(n));
    o.out[static_cast<std::size_t>(r)] = std::move(o.req.in.at(0));
    for (int s = 0; s < n; ++s) {
        if (s == root) continue;
        entry e = co_await l.recv(o, s, 0);
        o.out[static_cast<std::size_t>(s)] = std::move(e.data);
    }
}

// A list of blobs as one: count, sizes, then the bytes.
blob encode(const std::vector<blob>& list, std::size_t count) {
    std::size_t bytes = 8 * (1 + count);
    for (std::size_t i = 0; i < count; ++i) bytes += list[i].size();
    blob b(bytes);
    std::byte* p = b.data();
    const std::uint64_t c = count;
    std::memcpy(p, &c, 8);
    p += 8;
    for (std::size_t i = 0; i < count; ++i) {
        const std::uint64_t s = list[i].size();
        std::memcpy(p, &s, 8);
        p += 8;
    }
    for (std::size_t i = 0; i < count; ++i) {
        if (!list[i].empty()) std::memcpy(p, list[i].data(), list[i].size());
        p += list[i].size();
    }
    return b;
}

void decode_append(const blob& b, std::vector<blob>& list) {
    std::uint64_t c = 0;
    std::memcpy(&c, b.data(), 8);
    const std::byte* sizes = b.data() + 8;
    const std::byte* p = sizes + 8 * c;
    for (std::uint64_t i = 0; i < c; ++i) {
        std::uint64_t s = 0;
        std::memcpy(&s, sizes + 8 * i, 8);
        list.emplace_back(p, p + s);
        p += s;
    }
}

// Bruck: in round k every rank sends the first min(2^k, n − 2^k) values it holds (its own, then
// those of the ranks after it) to r − 2^k and appends those of r + 2^k; ⌈log2 n⌉ rounds.
task allgather_alg(coll_layer& l, op& o) {
    const int n = size_of(o), r = o.team->rank;
    std::vector<blob> held;
    held.push_back(std::move(o.req.in.at(0)));
    std::uint32_t k = 0;
    for (int d = 1; d < n; d <<= 1, ++k) {
        const auto count = static_cast<std::size_t>(std::min(d, n - d));
        l.send(o, (r - d + n) % n, k, encode(held, count));
        entry e = co_await l.recv(o, (r + d) % n, k);
        decode_append(e.data, held);
    }
    o.out.resize(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) {
        o.out[static_cast<std::size_t>((r + i) % n)] = std::move(held[static_cast<std::size_t>(i)]);
    }
}

// ----------------------------------------------------------------------------- all-to-all

// Direct: block j to rank j, starting with r + 1 so ranks do not all send to rank 0 first.
task alltoall_alg(coll_layer& l, op& o) {
    const int n = size_of(o), r = o.team->rank;
    for (int i = 1; i < n; ++i) {
        const int dest = (r + i) % n;
        l.send(o, dest, 0, o.req.in.at(static_cast<std::size_t>(dest)));
    }
    o.out.resize(static_cast<std::size_t>(n));
    o.out[static_cast<std::size_t>(r)] = std::move(o.req.in.at(static_cast<std::size_t>(r)));
    for (int i = 1; i < n; ++i) {
        const int source = (r - i + n) % n;
        entry e = co_await l.recv(o, source, 0);
        o.out[static_cast<std::size_t>(source)] = std::move(e.data);
    }
}

}  // namespace

task run_algorithm(coll_layer& l, op& o) {
    switch (o.req.what) {
        case kind::barrier:
            return barrier_alg(l, o);
        case kind::broadcast:
            return broadcast_alg(l, o);
        case kind::reduce:
            return reduce_alg(l, o);
        case kind::allreduce:
            return allreduce_alg(l, o);
        case kind::inclusive_scan:
        case kind::exclusive_scan:
            return scan_alg(l, o);
        case kind::gather:
            return gather_alg(l, o);
        case kind::allgather:
        case kind::split:
            return allgather_alg(l, o);
        case kind::alltoall:
            return alltoall_alg(l, o);
    }
    return barrier_alg(l, o);
}

}  // namespace am::coll::detail
