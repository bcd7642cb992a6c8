// SPDX-License-Identifier: MIT
#include "rma_ranks.hpp"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <stdexcept>

namespace am::bench {
namespace {

constexpr std::size_t page = 4096;
constexpr std::size_t default_max_bytes = std::size_t{4} << 20;

std::size_t round_to_page(std::size_t n) {
    return (std::max<std::size_t>(n, 1) + page - 1) / page * page;
}

}  // namespace

std::vector<std::size_t> rma_sizes(const options& o) {
    if (!o.sizes.empty()) return sizes_for(o, 1, std::size_t{1} << 40);
    if (o.min_bytes != 0 || o.max_bytes != 0) {
        return sizes_for(o, 8, std::max(default_max_bytes, o.max_bytes));
    }
    // Every factor of 8 from 8 B, and 1 MiB (the size of the bandwidth goal).
    return {8, 64, 512, 4 << 10, 32 << 10, 256 << 10, 1 << 20, 4 << 20};
}

bool rma_wants(const options& o, std::string_view op, bool by_default) {
    if (o.ops.empty()) return by_default;
    return std::find(o.ops.begin(), o.ops.end(), op) != o.ops.end();
}

std::vector<am::rma_path> rma_paths(const options& o) {
    if (o.rma == "am") return {am::rma_path::am};
    if (o.rma == "auto" || std::getenv("AM_SHM_NAME") != nullptr) {
        return {am::rma_path::automatic};
    }
    return {am::rma_path::automatic, am::rma_path::am};
}

std::string rma_op(std::string_view op, am::rma_path p) {
    return std::string(op) + (p == am::rma_path::am ? "_am" : "");
}

std::size_t rma_segment_bytes(const std::vector<std::size_t>& sizes) {
    std::size_t biggest = 8;
    for (std::size_t s : sizes) biggest = std::max(biggest, s);
    // Two regions, the alignment, and room for the allocator's own bookkeeping.
    return 2 * round_to_page(biggest) + page + (std::size_t{64} << 10);
}

int run_rma_jobs(const options& o, const rma_body& body, reporter& rep, bool& reporting) {
    const std::size_t segment = rma_segment_bytes(rma_sizes(o));
    bool first = true;
    for (const am::rma_path path : rma_paths(o)) {
        job_params p{segment, first, path};
        const int st = run_am_job(
            o, p, [&](am::context& ctx, rank_env& env) { body(ctx, env, path, first); }, rep,
            reporting);
        if (st != 0 || !reporting) return st;
        first = false;
    }
    return 0;
}

rma_ranks::rma_ranks(am::context& c, std::size_t bytes)
    : ctx(c), peer(c.rank() < 2 ? 1 - c.rank() : -1), put_flag(c), pp_flag(c), done(c), got(c) {
    if (c.size() < 2) throw std::runtime_error("bench: the RMA benchmarks need at least 2 ranks");
    _stop = ctx.handler([this](am::token&, std::uint64_t flags) {
        _stop_flags = flags;
        ++_stops;
    });
    ctx.barrier();
    _region = round_to_page(bytes);
    const am::global_ptr<std::byte> block = ctx.allocate<std::byte>(2 * _region + page);
    _mine = block + static_cast<std::ptrdiff_t>((page - block.offset() % page) % page);
    const std::vector<am::global_ptr<std::byte>> all = ctx.exchange(_mine);
    src.reset(_region);
    dst.reset(_region);
    std::memset(src.data(), static_cast<int>(pattern(ctx.rank())), _region);
    std::byte* mine = ctx.local(_mine);
    std::memset(mine, static_cast<int>(pattern(ctx.rank())), _region);
    std::memset(mine + _region, 0, _region);
    if (peer >= 0) {
        peer_get = all[static_cast<std::size_t>(peer)];
        peer_put = peer_get + static_cast<std::ptrdiff_t>(_region);
    }
    ctx.barrier();
}

std::byte* rma_ranks::my_put() const {
    return ctx.local(_mine) + _region;
}

void rma_ranks::begin(std::size_t bytes) {
    if (peer >= 0 && bytes > 0) {
        dst.data()[0] = dst.data()[bytes - 1] = std::byte{0};
        my_put()[0] = my_put()[bytes - 1] = std::byte{0};
    }
    ctx.barrier();
}

void rma_ranks::end(const rank_env& env) {
    if (ctx.rank() == 0) {
        ctx.request(1, _stop, puts_flagged);
    } else if (ctx.rank() == 1) {
        env.wait(ctx, [&] { return _stops > _stops_seen; });
        ++_stops_seen;
        // Every flagged put has counted at the target before the point ends; a flag that
        // never comes is a library bug, reported instead of hanging.
        const auto t0 = bench_clock::now();
        std::uint64_t polls = 0;
        while (!put_flag.test(_stop_flags)) {
            ctx.poll();
            if (++polls % 4096 == 0 && seconds_since(t0) > 20) {
                const std::string msg = "bench: put flag at rank 1 counts " +
                                        std::to_string(put_flag.value()) + " after 20 s, " +
                                        std::to_string(_stop_flags) + " puts were flagged";
                ctx.abort(msg);
            }
        }
    }
    ctx.barrier();
}

void rma_ranks::check_get(std::string_view what, std::size_t bytes) {
    if (ctx.rank() != 0 || bytes == 0) return;
    for (const std::size_t at : {std::size_t{0}, bytes - 1}) {
        if (dst.data()[at] != pattern(peer)) fail(what, bytes, at, dst.data()[at], pattern(peer));
    }
}

void rma_ranks::check_put(std::string_view what, std::size_t bytes) {
    if (peer < 0 || bytes == 0) return;
    for (const std::size_t at : {std::size_t{0}, bytes - 1}) {
        if (my_put()[at] != pattern(peer)) fail(what, bytes, at, my_put()[at], pattern(peer));
    }
}

void rma_ranks::fail(std::string_view what, std::size_t bytes, std::size_t at, std::byte got_byte,
                     std::byte want) {
    char msg[256];
    std::snprintf(msg, sizeof msg,
                  "bench: DATA CHECK FAILED: %.*s of %zu bytes: rank %d byte %zu is 0x%02x, "
                  "expected 0x%02x",
                  static_cast<int>(what.size()), what.data(), bytes, ctx.rank(), at,
                  static_cast<unsigned>(got_byte), static_cast<unsigned>(want));
    std::fprintf(stderr, "%s\n", msg);
    ctx.abort(msg);
}

}  // namespace am::bench
