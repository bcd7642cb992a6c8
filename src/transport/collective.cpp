// SPDX-License-Identifier: MIT
// What every transport shares about bootstrap collectives: the names of their kinds (given by
// the parts that start them), the mismatch report, and the default reduction over allgather.
#include "transport.hpp"

#include <am/error.hpp>

#include <algorithm>
#include <map>
#include <stdexcept>
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

}  // namespace

coll_names::coll_names() {
    add(coll::barrier, {"a transport barrier", {}, false});
    add(coll::start_of_run, {"the start of am::run", {}, false});
}

void coll_names::add(coll_kind kind, coll_name name) {
    if (kind.layer > 0xf || kind.id > 0xf) {
        throw std::logic_error("am: collective kind " + std::to_string(kind.layer) + "." +
                               std::to_string(kind.id) + " is out of range (layer and id < 16)");
    }
    _names[coll_id::byte_of(kind)] = std::move(name);
}

std::string coll_names::call(coll_kind kind) const {
    const auto it = _names.find(coll_id::byte_of(kind));
    if (it != _names.end()) return it->second.call;
    return "an unknown collective (kind " + std::to_string(kind.layer) + "." +
           std::to_string(kind.id) + ")";
}

std::string coll_names::did(coll_kind kind, std::uint32_t size) const {
    const auto it = _names.find(coll_id::byte_of(kind));
    if (it != _names.end() && !it->second.did.empty()) return it->second.did;
    std::string s = " called " + call(kind);
    if (it != _names.end() && it->second.sized) {
        s += " of " + std::to_string(size) + " bytes per rank";
    }
    return s;
}

std::string coll_names::describe_mismatch(const std::vector<std::uint64_t>& ids) const {
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
        const coll_id id{order[i].second};
        out += rank_list(by_call[order[i].second]) + did(id.kind(), id.size());
    }
    return out + " (every rank must make the same collective calls in the same order)";
}

void transport::collective_mismatch(coll_id mine, const std::vector<std::uint64_t>& ids) {
    const std::string what = collective_names().call(mine.kind()) + ": rank " +
                             std::to_string(_rank) + ": " +
                             collective_names().describe_mismatch(ids);
    fail_job("rank " + std::to_string(_rank) + " failed: " + what);
    throw error(errc::collective_mismatch, what);
}

void transport::allreduce_sum(coll_kind kind, const std::uint64_t* in, std::uint64_t* out,
                              std::size_t n, const idle_fn& idle) {
    std::vector<std::uint64_t> all(static_cast<std::size_t>(size()) * n);
    allgather(kind, in, all.data(), n * sizeof(std::uint64_t), idle, {});
    for (std::size_t i = 0; i < n; ++i) out[i] = 0;
    for (std::size_t r = 0; r < static_cast<std::size_t>(size()); ++r) {
        for (std::size_t i = 0; i < n; ++i) out[i] += all[r * n + i];
    }
}

}  // namespace am::transport
