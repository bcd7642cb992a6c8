// SPDX-License-Identifier: MIT
// The handler-table handshake at barrier(): mismatching registrations are reported on every
// rank, naming both ranks and the entry; handlers registered after the last barrier cannot be
// used until the next one. Entries whose names agree for hundreds of characters are printed
// so that the difference shows.
#include "support/expect.hpp"

namespace {

using am_test::spmd_test;

// Handler names longer than a report line could hold whole: lambdas of a function template
// instantiated with this type.
template <class T>
struct a_type_with_a_name_long_enough_that_four_of_them_make_a_handler_name_long {};
template <class T>
using long4 = a_type_with_a_name_long_enough_that_four_of_them_make_a_handler_name_long<
    a_type_with_a_name_long_enough_that_four_of_them_make_a_handler_name_long<
        a_type_with_a_name_long_enough_that_four_of_them_make_a_handler_name_long<
            a_type_with_a_name_long_enough_that_four_of_them_make_a_handler_name_long<T>>>>;

// Two lambdas of one function have the same readable name; only their types differ.
template <class Long>
void register_one_of_two(am::context& c, bool second) {
    auto first = [](am::token&, int) {};
    auto other = [](am::token&, int) {};
    if (second) {
        (void)c.handler(other);
    } else {
        (void)c.handler(first);
    }
}

class handshake : public spmd_test {
  protected:
    // Runs am_test::expect_mismatch(ctx, register_all, entry, names) on every rank; 0 when
    // every rank saw the mismatch reported so.
    [[nodiscard]] int run_mismatch(void (*register_all)(am::context&), const std::string& entry,
                                   const std::vector<std::string>& names) const {
        return run(
            [&](am::context& ctx) { am_test::expect_mismatch(ctx, register_all, entry, names); });
    }
};

TEST_P(handshake, different_signature_reports_entry) {
    ASSERT_EQ(run_mismatch(
                  [](am::context& c) {
                      (void)c.handler([](am::token&) {});
                      if (c.rank() == c.size() - 1) {
                          (void)c.handler([](am::token&, std::span<const std::byte>, int) {});
                      } else {
                          (void)c.handler([](am::token&, int, int) {});
                      }
                  },
                  "1", {"medium", "short"}),
              0);
}

TEST_P(handshake, extra_handler_reports_entry) {
    ASSERT_EQ(run_mismatch(
                  [](am::context& c) {
                      (void)c.handler([](am::token&) {});
                      (void)c.handler([](am::token&, int) {});
                      if (c.rank() == c.size() - 1) (void)c.handler([](am::token&, double) {});
                  },
                  "2", {"(nothing)", "double"}),
              0);
}

// Two different lambdas with the same signature registered in a different order are a
// mismatch too: the wrong code would run for every message.
TEST_P(handshake, swapped_lambdas_are_a_mismatch) {
    ASSERT_EQ(run_mismatch(
                  [](am::context& c) {
                      auto add = [](am::token&, int) {};
                      auto sub = [](am::token&, int) {};
                      if (c.rank() == c.size() - 1) {
                          (void)c.handler(sub);
                          (void)c.handler(add);
                      } else {
                          (void)c.handler(add);
                          (void)c.handler(sub);
                      }
                  },
                  "0", {}),
              0);
}

// The names of the two lambdas agree in their first few hundred characters: the report prints
// the part where they differ, so the two printed entries differ too.
TEST_P(handshake, long_equal_prefix_names_print_their_difference) {
    const int rc = run([](am::context& ctx) {
        const int last = ctx.size() - 1;
        const auto [first, other] = am_test::expect_mismatch_names(
            [&] {
                register_one_of_two<long4<int>>(ctx, ctx.rank() == last);
                ctx.barrier();
            },
            last);
        // Each is cut to its start and a window around the difference, marked as cut.
        EXPECT_LE(first.size(), 300u) << first;
        EXPECT_TRUE(am_test::contains(first, "...")) << first;
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(handshake, am_test::multi_rank_params());

class sealing : public spmd_test {};

// A handler registered after the last barrier is rejected (bad_handler) until the next
// barrier seals it; it then works, and the rejected send sent nothing.
TEST_P(sealing, unsealed_handler_is_rejected) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::counter first(ctx), late(ctx);
        auto h1 = ctx.handler([&](am::token&) { first.add(); });
        ctx.barrier();
        ctx.request((me + 1) % n, h1);
        auto h2 = ctx.handler([&](am::token&, int v) {
            EXPECT_EQ(v, 2);
            late.add();
        });
        try {
            ctx.request((me + 1) % n, h2, 1);
            ADD_FAILURE() << "request with an unsealed handler was accepted";
        } catch (const am::error& e) {
            const std::string what = e.what();
            EXPECT_EQ(e.code(), am::errc::bad_handler) << what;
            EXPECT_TRUE(am_test::contains(what, "am::context::request")) << what;
            EXPECT_TRUE(am_test::contains(what, "rank " + std::to_string(me) + ":")) << what;
            EXPECT_TRUE(am_test::contains(what, "handler " + std::to_string(h2.index))) << what;
            EXPECT_TRUE(am_test::contains(what, "barrier")) << what;
        }
        ctx.barrier();
        ctx.request((me + 1) % n, h2, 2);
        first.wait(1);
        late.wait(1);
        ctx.barrier();
        ctx.request(me, h1);  // a fence on this rank's own lane
        first.wait(2);
        EXPECT_EQ(late.value(), 1u);
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(sealing, am_test::all_params());

}  // namespace
