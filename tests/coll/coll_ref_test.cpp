// SPDX-License-Identifier: MIT
// am::coll against a sequential reference: every rank draws every rank's contribution from a
// seed (the same on all ranks), folds them in rank order itself and compares what each
// collective returned. Reductions: every built-in operator on int32, int64, uint64 and double
// (the meaningful ones), a non-commutative 2x2 integer matrix product, string concatenation, a
// set union over std::vector<int> and a serialized record, in the value and span forms, reduce
// at every root, allreduce, inclusive and both exclusive scans. Broadcast of 0, 1, 7 and 300 KB
// (several medium segments) at every root; gather(v), allgather(v), alltoall(v) with empty
// parts; a barrier whose absence a test would see. On every transport at 1-8 and 64 ranks.
#include "coll/coll_support.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <optional>
#include <span>
#include <thread>

namespace {

using am_test::spmd_test;
using coll_test::draw;

class coll_ref : public spmd_test {};
class coll_ref_board : public spmd_test {};

// ------------------------------------------------------------------------------ reductions

/// Every reduction of `op` over values `gen(rank, index)`: reduce at each root, allreduce and
/// both scans (value forms), and for trivially copyable T reduce and allreduce of spans of
/// `len` elements (element i of rank r is gen(r, i)).
template <class T, class Op, class Gen>
void check_reductions(const am::team& t, int round, Op op, Gen gen, std::size_t len = 5) {
    const int n = t.size(), me = t.rank();
    std::vector<T> prefix;  // prefix[r]: op over ranks 0 … r, in rank order
    for (int r = 0; r < n; ++r) {
        prefix.push_back(r == 0 ? gen(0, 0) : op(prefix.back(), gen(r, 0)));
    }
    const T mine = gen(me, 0);
    for (const int root : coll_test::roots(n, round)) {
        const std::optional<T> got = am::coll::reduce(t, mine, op, root);
        if (me == root) {
            ASSERT_TRUE(got.has_value()) << "root " << root;
            EXPECT_TRUE(*got == prefix.back()) << "reduce at root " << root;
        } else {
            EXPECT_FALSE(got.has_value()) << "root " << root;
        }
    }
    EXPECT_TRUE(am::coll::allreduce(t, mine, op) == prefix.back()) << "allreduce";
    EXPECT_TRUE(am::coll::inclusive_scan(t, mine, op) == prefix[me]) << "inclusive_scan";
    const std::optional<T> ex = am::coll::exclusive_scan(t, mine, op);
    EXPECT_EQ(ex.has_value(), me != 0);
    if (me != 0 && ex) {
        EXPECT_TRUE(*ex == prefix[me - 1]) << "exclusive_scan";
    }
    const T init = gen(-1, 0);
    const T ex_init = am::coll::exclusive_scan(t, mine, op, init);
    EXPECT_TRUE(ex_init == (me == 0 ? init : prefix[me - 1])) << "exclusive_scan with init";
    if constexpr (std::is_trivially_copyable_v<T>) {
        std::vector<T> in(len), want(len);
        for (std::size_t i = 0; i < len; ++i) {
            in[i] = gen(me, i);
            want[i] = gen(0, i);
            for (int r = 1; r < n; ++r) want[i] = op(want[i], gen(r, i));
        }
        std::vector<T> out(len);
        am::coll::allreduce(t, std::span<const T>(in), std::span<T>(out), op);
        EXPECT_TRUE(out == want) << "allreduce of " << len << " elements";
        const int root = (round + 1) % n;
        std::vector<T> at_root(me == root ? len : 0);
        am::coll::reduce(t, std::span<const T>(in), std::span<T>(at_root), op, root);
        if (me == root) {
            EXPECT_TRUE(at_root == want) << "reduce of " << len << " elements";
        }
        // In place: out may alias in.
        am::coll::allreduce(t, std::span<const T>(in), std::span<T>(in), op);
        EXPECT_TRUE(in == want) << "allreduce in place";
    }
}

/// The integer operators on T, each over values it makes sense for (products of ±1 and a few
/// 2s, so signed types never overflow; anything for the bitwise ones).
template <class T>
void check_integer_ops(const am::team& t, int round) {
    const auto any = [round](std::uint64_t what) {
        return
            [round, what](int r, std::size_t i) { return static_cast<T>(draw(what, round, r, i)); };
    };
    const auto small = [round](int r, std::size_t i) {
        return static_cast<T>(static_cast<std::int64_t>(draw(11, round, r, i) % 2001) - 1000);
    };
    const auto unit = [round](int r, std::size_t i) {
        if (r >= 0 && r % 8 == 0) return static_cast<T>(2);
        return static_cast<T>((draw(12, round, r, i) & 1) != 0 ? 1 : -1);
    };
    const auto truth = [round](int r, std::size_t i) {
        const std::uint64_t d = draw(13, round, r, i);
        return static_cast<T>(d % 16 == 0 ? 0 : (d >> 8) % 100 + 1);
    };
    {
        SCOPED_TRACE("sum");
        if constexpr (std::is_signed_v<T>) {
            check_reductions<T>(t, round, am::coll::sum{}, small);
        } else {
            check_reductions<T>(t, round, am::coll::sum{}, any(1));
        }
    }
    {
        SCOPED_TRACE("prod");
        if constexpr (std::is_signed_v<T>) {
            check_reductions<T>(t, round, am::coll::prod{}, unit);
        } else {
            check_reductions<T>(t, round, am::coll::prod{}, any(2));
        }
    }
    SCOPED_TRACE("min, max, bitwise, logical");
    check_reductions<T>(t, round, am::coll::min{}, any(3));
    check_reductions<T>(t, round, am::coll::max{}, any(4));
    check_reductions<T>(t, round, am::coll::bit_and{}, any(5));
    check_reductions<T>(t, round, am::coll::bit_or{}, any(6));
    check_reductions<T>(t, round, am::coll::bit_xor{}, any(7));
    check_reductions<T>(t, round, am::coll::logical_and{}, truth);
    check_reductions<T>(t, round, am::coll::logical_or{}, truth);
}

TEST_P(coll_ref, builtin_operators) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  for (int round = 0; round < coll_test::rounds(w.size()); ++round) {
                      SCOPED_TRACE("round " + std::to_string(round));
                      check_integer_ops<std::int32_t>(w, round);
                      check_integer_ops<std::int64_t>(w, round);
                      check_integer_ops<std::uint64_t>(w, round);
                      // Doubles that every order of summation and product gives exactly.
                      const auto whole = [round](int r, std::size_t i) {
                          return static_cast<double>(
                              static_cast<std::int64_t>(draw(21, round, r, i) % 2000001) - 1000000);
                      };
                      const auto factor = [round](int r, std::size_t i) {
                          static constexpr double f[] = {1.0, -1.0, 2.0, 0.5};
                          return f[draw(22, round, r, i) % 4];
                      };
                      check_reductions<double>(w, round, am::coll::sum{}, whole);
                      check_reductions<double>(w, round, am::coll::prod{}, factor);
                      check_reductions<double>(w, round, am::coll::min{}, whole);
                      check_reductions<double>(w, round, am::coll::max{}, whole);
                  }
              }),
              0);
}

coll_test::mat random_mat(int round, int r, std::size_t i) {
    const std::uint64_t d = draw(31, round, r, i);
    return {d % 7, (d >> 8) % 7, (d >> 16) % 7, (d >> 24) % 7 + 1};
}

// Operators that are not commutative see the ranks in order, in every form, including a span
// of 160 KB (several medium messages per step) and a user lambda.
TEST_P(coll_ref, non_commutative_in_rank_order) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            for (int round = 0; round < coll_test::rounds(w.size()); ++round) {
                SCOPED_TRACE("round " + std::to_string(round));
                const auto m = [round](int r, std::size_t i) { return random_mat(round, r, i); };
                check_reductions<coll_test::mat>(w, round, coll_test::mat_mul_op{}, m);
                const auto lambda = [](const coll_test::mat& a, const coll_test::mat& b) {
                    return coll_test::mat_mul(a, b);
                };
                check_reductions<coll_test::mat>(w, round, lambda, m, 5000);
                const auto cat = [](const std::string& a, const std::string& b) { return a + b; };
                check_reductions<std::string>(w, round, cat, [round](int r, std::size_t) {
                    return coll_test::make_string(32, round, r);
                });
                check_reductions<coll_test::record>(
                    w, round, coll_test::record_join{},
                    [round](int r, std::size_t) { return coll_test::make_record(33, round, r); });
            }
        }),
        0);
}

// A set union of sorted vectors (serialized values of different sizes, some empty).
TEST_P(coll_ref, set_union_allreduce) {
    ASSERT_EQ(run([](am::context& ctx) {
                  const am::team w = am::coll::world(ctx);
                  const auto set_union = [](const std::vector<int>& a, const std::vector<int>& b) {
                      std::vector<int> u;
                      std::set_union(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(u));
                      return u;
                  };
                  for (int round = 0; round < coll_test::rounds(w.size()); ++round) {
                      const auto subset = [round](int r, std::size_t) {
                          std::vector<int> s;
                          const std::uint64_t k = draw(41, round, r) % 6;  // 0-5 elements
                          for (std::uint64_t i = 0; i < k; ++i) {
                              s.push_back(static_cast<int>(draw(42, round, r, i) % 200));
                          }
                          std::sort(s.begin(), s.end());
                          s.erase(std::unique(s.begin(), s.end()), s.end());
                          return s;
                      };
                      check_reductions<std::vector<int>>(w, round, set_union, subset);
                      std::vector<int> want;
                      for (int r = 0; r < w.size(); ++r) want = set_union(want, subset(r, 0));
                      EXPECT_EQ(am::coll::allreduce(w, subset(w.rank(), 0), set_union), want);
                  }
              }),
              0);
}

// ------------------------------------------------------------------------------ broadcast

TEST_P(coll_ref, broadcast_every_root_and_size) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            const int n = w.size(), me = w.rank();
            for (int round = 0; round < coll_test::rounds(n); ++round) {
                for (const int root : coll_test::roots(n, round)) {
                    SCOPED_TRACE("round " + std::to_string(round) + " root " +
                                 std::to_string(root));
                    EXPECT_EQ(am::coll::broadcast(w, draw(51, round, me), root),
                              draw(51, round, root));
                    EXPECT_EQ(am::coll::broadcast(w, coll_test::make_string(52, round, me), root),
                              coll_test::make_string(52, round, root));
                    EXPECT_EQ(am::coll::broadcast(w, std::string(), root), "");
                    EXPECT_EQ(am::coll::broadcast(w, coll_test::make_record(53, round, me), root),
                              coll_test::make_record(53, round, root));
                    for (const std::size_t bytes : {0, 1, 7}) {
                        const auto want = am_test::pattern(bytes, draw(54, round, root));
                        auto data =
                            me == root ? want : std::vector<std::byte>(bytes, std::byte{0xee});
                        am::coll::broadcast(w, std::span<std::byte>(data), root);
                        EXPECT_EQ(data, want) << bytes << " bytes";
                    }
                }
                // Several medium segments (pipelined): one root a round at 64 ranks.
                const std::vector<int> big_roots =
                    n > 8 ? std::vector<int>{(3 * round + 1) % n} : coll_test::roots(n, round);
                for (const int root : big_roots) {
                    const std::size_t bytes = 300 * 1024 + 5;
                    const auto want = am_test::pattern(bytes, draw(55, round, root));
                    auto data = me == root ? want : std::vector<std::byte>(bytes);
                    am::coll::broadcast(w, std::span<std::byte>(data), root);
                    EXPECT_TRUE(data == want) << "300 KB from root " << root;
                    // The nonblocking span form into a buffer that outlives it.
                    std::vector<std::uint64_t> words(bytes / 8 + 3, me == root ? 7 : 0);
                    auto f = am::coll::broadcast_nb(w, std::span<std::uint64_t>(words), root);
                    f.get();
                    EXPECT_EQ(std::count(words.begin(), words.end(), 7u),
                              static_cast<std::ptrdiff_t>(words.size()));
                }
            }
        }),
        0);
}

// -------------------------------------------------------------------- gather and allgather

std::vector<std::uint32_t> part_of(std::uint64_t what, int round, int r) {
    // 0-4 elements; rank 0 always none (an empty part at the root of some gathers).
    const std::size_t k = r == 0 ? 0 : draw(what, round, r) % 5;
    std::vector<std::uint32_t> v(k);
    for (std::size_t i = 0; i < k; ++i)
        v[i] = static_cast<std::uint32_t>(draw(what + 1, round, r, i));
    return v;
}

TEST_P(coll_ref, gather_and_allgather) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            const int n = w.size(), me = w.rank();
            for (int round = 0; round < coll_test::rounds(n); ++round) {
                SCOPED_TRACE("round " + std::to_string(round));
                std::vector<std::uint64_t> values;
                std::vector<std::string> strings;
                std::vector<std::vector<std::uint32_t>> parts;
                std::vector<std::vector<std::string>> string_parts;
                std::vector<coll_test::record> records;
                for (int r = 0; r < n; ++r) {
                    values.push_back(draw(61, round, r));
                    strings.push_back(coll_test::make_string(62, round, r));
                    parts.push_back(part_of(63, round, r));
                    string_parts.emplace_back(draw(65, round, r) % 3, strings.back());
                    records.push_back(coll_test::make_record(66, round, r));
                }
                for (const int root : coll_test::roots(n, round)) {
                    const auto g = am::coll::gather(w, values[me], root);
                    const auto gs = am::coll::gather(w, strings[me], root);
                    const auto gv =
                        am::coll::gatherv(w, std::span<const std::uint32_t>(parts[me]), root);
                    const auto gsv =
                        am::coll::gatherv(w, std::span<const std::string>(string_parts[me]), root);
                    if (me == root) {
                        EXPECT_EQ(g, values);
                        EXPECT_EQ(gs, strings);
                        EXPECT_EQ(gv, parts);
                        EXPECT_EQ(gsv, string_parts);
                    } else {
                        EXPECT_TRUE(g.empty() && gs.empty() && gv.empty() && gsv.empty());
                    }
                }
                EXPECT_EQ(am::coll::allgather(w, values[me]), values);
                EXPECT_EQ(am::coll::allgather(w, strings[me]), strings);
                EXPECT_EQ(am::coll::allgather(w, records[me]), records);
                EXPECT_EQ(am::coll::allgatherv(w, std::span<const std::uint32_t>(parts[me])),
                          parts);
                EXPECT_EQ(am::coll::allgatherv(w, std::span<const std::string>(string_parts[me])),
                          string_parts);
                // Every part empty.
                const auto none = am::coll::allgatherv(w, std::span<const std::uint32_t>());
                EXPECT_EQ(none,
                          std::vector<std::vector<std::uint32_t>>(static_cast<std::size_t>(n)));
            }
        }),
        0);
}

// ----------------------------------------------------------------------------- all-to-all

TEST_P(coll_ref, alltoall_and_alltoallv) {
    ASSERT_EQ(
        run([](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            const int n = w.size(), me = w.rank();
            const auto elem = [](int round, int from, int to, std::size_t i) {
                return draw(71, round, from, static_cast<std::uint64_t>(to) << 16 | i);
            };
            for (int round = 0; round < coll_test::rounds(n); ++round) {
                SCOPED_TRACE("round " + std::to_string(round));
                for (const std::size_t k : {0, 1, 3}) {  // elements per block
                    std::vector<std::uint64_t> out;
                    for (int to = 0; to < n; ++to) {
                        for (std::size_t i = 0; i < k; ++i) out.push_back(elem(round, me, to, i));
                    }
                    const auto in = am::coll::alltoall(w, std::span<const std::uint64_t>(out));
                    ASSERT_EQ(in.size(), k * static_cast<std::size_t>(n));
                    for (int from = 0; from < n; ++from) {
                        for (std::size_t i = 0; i < k; ++i) {
                            EXPECT_EQ(in[static_cast<std::size_t>(from) * k + i],
                                      elem(round, from, me, i))
                                << "from " << from << " element " << i;
                        }
                    }
                }
                // Variable blocks, some empty (every block to and from rank 0 at round 0).
                const auto block = [&](int from, int to) {
                    std::vector<std::uint64_t> v;
                    const std::size_t len =
                        round == 0 && (from == 0 || to == 0) ? 0 : draw(72, round, from, to) % 4;
                    for (std::size_t i = 0; i < len; ++i) v.push_back(elem(round, from, to, i));
                    return v;
                };
                std::vector<std::vector<std::uint64_t>> out;
                std::vector<std::vector<std::string>> sout;
                for (int to = 0; to < n; ++to) {
                    out.push_back(block(me, to));
                    sout.emplace_back(out.back().size(),
                                      std::to_string(me) + ">" + std::to_string(to));
                }
                const auto in = am::coll::alltoallv(w, out);
                const auto sin = am::coll::alltoallv(w, sout);
                ASSERT_EQ(in.size(), static_cast<std::size_t>(n));
                ASSERT_EQ(sin.size(), static_cast<std::size_t>(n));
                for (int from = 0; from < n; ++from) {
                    const auto want = block(from, me);
                    EXPECT_EQ(in[from], want) << "from " << from;
                    EXPECT_EQ(sin[from],
                              std::vector<std::string>(
                                  want.size(), std::to_string(from) + ">" + std::to_string(me)));
                }
            }
        }),
        0);
}

// -------------------------------------------------------------------------------- barrier

// What a barrier orders: each rank writes its round to a board in memory every rank (and the
// test process) sees, then passes a barrier; after it, every rank's entry holds at least this
// round and none more than the next. A random rank sleeps before writing, so a barrier that
// returned early would be seen. The board is shared memory, so not on mpi (one rank per
// process there).
struct barrier_board {
    std::atomic<int> round[64];
    std::atomic<int> early{0};  // entries seen behind after a barrier
    std::atomic<int> ahead{0};  // entries seen two rounds ahead
};

TEST_P(coll_ref_board, barrier_orders_side_effects) {
    am_test::shared<barrier_board> b;
    for (auto& r : b->round) r.store(-1);
    ASSERT_EQ(
        run([&](am::context& ctx) {
            const am::team w = am::coll::world(ctx);
            const int n = w.size(), me = w.rank();
            const int rounds = n > 8 ? 5 : 20;
            for (int round = 0; round < rounds; ++round) {
                if (static_cast<int>(draw(81, round, 0) % static_cast<std::uint64_t>(n)) == me) {
                    std::this_thread::sleep_for(std::chrono::milliseconds(2));
                }
                b->round[me].store(round);
                if (round % 2 == 0) {
                    am::coll::barrier(w);
                } else {
                    am::coll::barrier_nb(w).get();
                }
                for (int r = 0; r < n; ++r) {
                    const int seen = b->round[r].load();
                    if (seen < round) ++b->early;
                    if (seen > round + 1) ++b->ahead;
                }
            }
        }),
        0);
    EXPECT_EQ(b->early.load(), 0) << "a barrier returned before every rank had reached it";
    EXPECT_EQ(b->ahead.load(), 0) << "a rank passed two barriers while another was in one";
}

AM_INSTANTIATE(coll_ref, coll_test::params());
AM_INSTANTIATE(coll_ref_board, am_test::without_mpi(coll_test::params()));

}  // namespace
