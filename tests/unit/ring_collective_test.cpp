// SPDX-License-Identifier: MIT
// The ring transports' bootstrap collectives (src/transport/ring/region.cpp, a combining tree
// over the job region): barrier, allgather and allreduce (sum, min, max) give every rank the
// exact result of a sequential computation, at rank counts that fill the tree's nodes and that
// do not, over many consecutive collectives and across the runs a region serves; ranks in
// different collectives fail the job naming both calls; a rank that has not joined is named.
// Ranks are threads of this process, each with its own ring_transport, heavily oversubscribed.
#include "transport/ring/region.hpp"

#include <am/error.hpp>

#include <gtest/gtest.h>

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

// Named: the unit tests build as one unity source, whose anonymous namespaces are one.
namespace ring_collective_test {

namespace ring = am::transport::ring;
namespace tp = am::transport;

/// A zero-filled region for `ranks` ranks: small rings, no segments.
class region_memory {
  public:
    explicit region_memory(int ranks) {
        ring::region_params p;
        p.ranks = ranks;
        p.ring_bytes = 1024;
        _bytes = ring::layout(p).total;
        _mem.reset(static_cast<std::byte*>(std::aligned_alloc(4096, _bytes)));
        if (!_mem) throw std::bad_alloc();
        std::memset(_mem.get(), 0, _bytes);
        ring::initialize(_mem.get(), p);
    }
    [[nodiscard]] std::byte* base() const { return _mem.get(); }

  private:
    struct free_it {
        void operator()(std::byte* p) const { std::free(p); }
    };
    std::size_t _bytes = 0;
    std::unique_ptr<std::byte, free_it> _mem;
};

using rank_body = std::function<void(ring::ring_transport&)>;

/// Runs `body` on every rank of the region at `base`, each a thread with its own transport
/// (a "run"); returns each rank's exception, if any.
std::vector<std::exception_ptr> run_ranks(std::byte* base, int ranks, const rank_body& body) {
    std::vector<std::exception_ptr> errors(static_cast<std::size_t>(ranks));
    std::vector<std::thread> threads;
    for (int r = 0; r < ranks; ++r) {
        threads.emplace_back([&, r] {
            try {
                ring::ring_transport t(base, r);
                body(t);
            } catch (...) {
                errors[static_cast<std::size_t>(r)] = std::current_exception();
            }
        });
    }
    for (std::thread& t : threads) t.join();
    return errors;
}

void expect_no_errors(const std::vector<std::exception_ptr>& errors) {
    for (std::size_t r = 0; r < errors.size(); ++r) {
        if (!errors[r]) continue;
        try {
            std::rethrow_exception(errors[r]);
        } catch (const std::exception& e) {
            ADD_FAILURE() << "rank " << r << ": " << e.what();
        }
    }
}

constexpr tp::coll_kind test_reduce{9, 1};
constexpr tp::coll_kind test_gather{9, 2};
constexpr tp::coll_kind test_other{9, 3};

// Rank r's word i in collective `step`: large, so that the sums wrap around.
std::uint64_t value(int r, std::size_t i, int step) {
    std::uint64_t x = (static_cast<std::uint64_t>(r) + 1) * 0x9e3779b97f4a7c15ull;
    x ^= (static_cast<std::uint64_t>(step) << 20) + i * 0xbf58476d1ce4e5b9ull;
    return x * 0x94d049bb133111ebull;
}

// The reduction every rank must get, computed in rank order.
std::vector<std::uint64_t> expected(tp::reduce_op op, int ranks, std::size_t n, int step) {
    std::vector<std::uint64_t> out(n);
    for (std::size_t i = 0; i < n; ++i) {
        out[i] = value(0, i, step);
        for (int r = 1; r < ranks; ++r) out[i] = tp::combine(op, out[i], value(r, i, step));
    }
    return out;
}

// One collective of a sequence that cycles through every kind and size: step s is a barrier,
// an allgather or a reduction of 1 … 32 words with sum, min or max.
void one_step(ring::ring_transport& t, int step) {
    const int kind = step % 4;
    if (kind == 0) {
        t.barrier(tp::coll::barrier, {});
        return;
    }
    if (kind == 1) {
        const std::uint64_t mine = value(t.rank(), 0, step);
        std::vector<std::uint64_t> all(static_cast<std::size_t>(t.size()));
        t.allgather(test_gather, &mine, all.data(), sizeof mine, {}, {});
        for (int r = 0; r < t.size(); ++r) {
            ASSERT_EQ(all[static_cast<std::size_t>(r)], value(r, 0, step)) << "step " << step;
        }
        return;
    }
    const auto op = static_cast<tp::reduce_op>(step / 4 % 3);
    const std::size_t n = 1 + static_cast<std::size_t>(step) % tp::transport::max_reduce_words;
    std::vector<std::uint64_t> in(n), out(n);
    for (std::size_t i = 0; i < n; ++i) in[i] = value(t.rank(), i, step);
    if (op == tp::reduce_op::sum && kind == 2) {
        t.allreduce_sum(test_reduce, in.data(), out.data(), n, {});
    } else {
        t.allreduce(test_reduce, op, in.data(), out.data(), n, {});
    }
    ASSERT_EQ(out, expected(op, t.size(), n, step)) << "step " << step << ", rank " << t.rank();
}

class ring_collectives : public ::testing::TestWithParam<int> {};

// Every rank gets the exact result of every collective, many in a row; the rank counts fill
// the tree's nodes (8, 64) or leave the last node of a level short (3, 5, 7, 13).
TEST_P(ring_collectives, exact_results_over_many_collectives) {
    const int ranks = GetParam();
    const int steps = ranks >= 64 ? 400 : 2000;
    region_memory mem(ranks);
    expect_no_errors(run_ranks(mem.base(), ranks, [&](ring::ring_transport& t) {
        for (int s = 0; s < steps && !::testing::Test::HasFatalFailure(); ++s) one_step(t, s);
    }));
}

// A region serves several runs (am::run calls of launched shm ranks): new transports go on
// from the counts the tree's nodes and mailboxes hold.
TEST_P(ring_collectives, a_region_serves_several_runs) {
    const int ranks = GetParam();
    region_memory mem(ranks);
    for (int run = 0; run < 3; ++run) {
        expect_no_errors(run_ranks(mem.base(), ranks, [&](ring::ring_transport& t) {
            for (int s = 0; s < 9; ++s) one_step(t, 100 * run + s);
        }));
    }
}

INSTANTIATE_TEST_SUITE_P(unit, ring_collectives, ::testing::Values(1, 2, 3, 5, 7, 8, 13, 64),
                         [](const ::testing::TestParamInfo<int>& p) {
                             return "np" + std::to_string(p.param);
                         });

// Ranks 2 and 5 of 7 call another collective than the others: the job fails naming both
// calls and every rank's, no rank returns from its collective, and every rank throws.
TEST(ring_collective_mismatch, two_of_seven_ranks_named_with_both_calls) {
    constexpr int ranks = 7;
    region_memory mem(ranks);
    const auto errors = run_ranks(mem.base(), ranks, [](ring::ring_transport& t) {
        t.collective_names().add(test_other, {"test::other", {}, false});
        t.collective_names().add(test_reduce, {"test::reduce", {}, false});
        t.barrier(tp::coll::barrier, {});
        std::uint64_t in = 1, out = 0;
        if (t.rank() == 2 || t.rank() == 5) {
            t.barrier(test_other, {});
        } else {
            t.allreduce_sum(test_reduce, &in, &out, 1, {});
        }
        ADD_FAILURE() << "rank " << t.rank() << " passed a mismatched collective";
    });
    const ring::region reg(mem.base());
    ASSERT_TRUE(reg.failed());
    const std::string reason = reg.reason();
    EXPECT_NE(reason.find("collectives do not match at collective #2: ranks 0-1, 3-4, 6 called "
                          "test::reduce while ranks 2, 5 called test::other (every rank must "
                          "make the same collective calls in the same order)"),
              std::string::npos)
        << reason;
    int mismatches = 0;
    for (std::size_t r = 0; r < errors.size(); ++r) {
        ASSERT_TRUE(errors[r]) << "rank " << r << " did not fail";
        try {
            std::rethrow_exception(errors[r]);
        } catch (const am::error& e) {
            EXPECT_TRUE(e.code() == am::errc::collective_mismatch || e.code() == am::errc::aborted)
                << e.what();
            if (e.code() != am::errc::collective_mismatch) continue;
            ++mismatches;
            const std::string what = e.what();
            EXPECT_NE(what.find("ranks 2, 5 called test::other"), std::string::npos) << what;
            EXPECT_NE(what.find("test::other"), std::string::npos) << what;
            EXPECT_NE(what.find("test::reduce"), std::string::npos) << what;
        }
    }
    EXPECT_GE(mismatches, 1);
}

// While a rank waits in a collective, collective_stragglers() names the rank that has not
// joined it yet, and nothing once the collective is over.
TEST(ring_collective_stragglers, names_the_rank_that_has_not_joined) {
    constexpr int ranks = 3;
    region_memory mem(ranks);
    std::string seen;
    expect_no_errors(run_ranks(mem.base(), ranks, [&](ring::ring_transport& t) {
        t.barrier(tp::coll::barrier, {});
        if (t.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(200));
        const tp::idle_fn idle = [&]() -> std::size_t {
            if (t.rank() != 0) return 0;
            std::string now = t.collective_stragglers();
            if (!now.empty()) seen = std::move(now);  // the last before rank 1 joins
            return 0;
        };
        t.barrier(tp::coll::barrier, idle);
        if (t.rank() == 0) {
            EXPECT_EQ(t.collective_stragglers(), "");
        }
    }));
    EXPECT_EQ(seen, "rank 1 has not joined a transport barrier (collective #2)");
}

}  // namespace ring_collective_test
