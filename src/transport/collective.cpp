// SPDX-License-Identifier: MIT
// What every transport shares about bootstrap collectives: the names of their kinds, the
// mismatch report, and the default reduction over allgather.
#include "transport.hpp"

#include <am/error.hpp>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

namespace am::transport {
namespace {

// "rank 0", "ranks 1-3, 5": consecutive ranks are shown as ranges.
std::string rank_list(const std::vector<int>& ranks) {
    std::string out = ranks.size() == 1 ? "rank " : "ranks ";
    for (std::size_t i = 0; i < ranks.size();) {
        std::size_t j = i;
        while (j + 1 < ranks.size() && ranks[j + 1] == ranks[j] + 1) ++j;
        if (i != 0) out += ", ";
        out += std::to_string(ranks[i]);
        if (j > i) {
            out += '-';  // appended, not `"-" + to_string(...)`: GCC 12 -O3 -Wrestrict false alarm
            out += std::to_string(ranks[j]);
        }
        i = j + 1;
    }
    return out;
}

// What the ranks with collective word `id` did, after "rank 3".
std::string what_ranks_did(coll_id id) {
    if (id.kind() == coll::end_of_run) {
        return " returned from the rank function (the quiescence at the end of am::run)";
    }
    std::string s = std::string(" called ") + to_string(id.kind());
    if (id.kind() == coll::exchange) s += " of " + std::to_string(id.size()) + " bytes per rank";
    return s;
}

}  // namespace

const char* to_string(coll kind) noexcept {
    switch (kind) {
        case coll::barrier:
            return "a transport barrier";
        case coll::handshake:
            return "am::context::barrier";
        case coll::handshake_report:
            return "am::context::barrier (comparing differing handler tables)";
        case coll::exchange:
            return "am::context::exchange";
        case coll::epoch_end:
            return "am::epoch::end";
        case coll::quiesce:
            return "am::context::quiesce";
        case coll::end_of_run:
            return "am::run";
        case coll::start_of_run:
            return "the start of am::run";
        case coll::trace:
            return "am::context::trace_start / trace_stop";
        case coll::window_fence:
            return "am::window::fence";
        case coll::window_free:
            return "am::window::free";
        case coll::tam_run:
            return "am::tam::run";
    }
    return "an unknown collective";
}

std::string describe_mismatch(const std::vector<std::uint64_t>& ids) {
    std::map<std::uint64_t, std::vector<int>> by_call;
    for (std::size_t r = 0; r < ids.size(); ++r) by_call[ids[r]].push_back(static_cast<int>(r));
    // Every rank's n-th collective meets here: the sequence number is the same for all.
    std::string out = "collectives do not match at collective #" +
                      std::to_string(coll_id{ids.empty() ? 0 : ids[0]}.seq()) + ": ";
    // The calls in the order of their lowest rank, so the text is the same on every rank.
    std::vector<std::pair<int, std::uint64_t>> order;
    for (const auto& [id, ranks] : by_call) order.emplace_back(ranks.front(), id);
    std::sort(order.begin(), order.end());
    for (std::size_t i = 0; i < order.size(); ++i) {
        if (i != 0) out += " while ";
        out += rank_list(by_call[order[i].second]) + what_ranks_did(coll_id{order[i].second});
    }
    return out + " (every rank must make the same collective calls in the same order)";
}

void transport::collective_mismatch(coll_id mine, const std::vector<std::uint64_t>& ids) {
    const std::string what = std::string(to_string(mine.kind())) + ": rank " +
                             std::to_string(_rank) + ": " + describe_mismatch(ids);
    fail_job("rank " + std::to_string(_rank) + " failed: " + what);
    throw error(errc::collective_mismatch, what);
}

void transport::allreduce_sum(coll kind, const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                              const idle_fn& idle) {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size()) * n);
    allgather(kind, in, all.data(), n * sizeof(std::uint64_t), idle, {});
    for (std::size_t i = 0; i < n; ++i) out[i] = 0;
    for (std::size_t r = 0; r < static_cast<std::size_t>(size()); ++r) {
        for (std::size_t i = 0; i < n; ++i) out[i] += all[r * n + i];
    }
}

}  // namespace am::transport
