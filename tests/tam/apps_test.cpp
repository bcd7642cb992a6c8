// SPDX-License-Identifier: MIT
// The six TAM programs of the J-Machine study (apps/tam, tam_apps.hpp) at the paper's
// argument, under both dispatch policies: each must finish with the answer of its sequential
// reference on every rank, on threads at 1, 2, 4 and 8 ranks and on shm and mpi at 2 and 4.
#include "tam/tam_support.hpp"

#include "tam_apps.hpp"

#include <chrono>
#include <cstdio>
#include <string>

namespace {

using namespace am_tam_test;

class tam_apps_run : public tam_test {};

void check_app(const tam_test& t, const char* name, policy p) {
    const tam_apps::app& a = tam_apps::find(name);
    const word expected = a.reference(a.paper_arg);
    watchdog dog(std::string("tam app ") + name, 50);
    const int rc = t.job([&](am::context& ctx) {
        const auto t0 = std::chrono::steady_clock::now();
        const am::tam::result res = a.run(ctx, a.paper_arg, opts(p));
        const double ms =
            std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0)
                .count();
        if (ctx.rank() == 0) {
            std::printf(
                "%s(%d) %s on %d ranks: %.1f ms, threads %llu, quanta %llu, inlets %llu, "
                "messages %llu (%llu remote)\n",
                name, a.paper_arg, am::tam::to_string(p), ctx.size(), ms,
                static_cast<unsigned long long>(res.total.threads),
                static_cast<unsigned long long>(res.total.quanta),
                static_cast<unsigned long long>(res.total.inlets),
                static_cast<unsigned long long>(res.total.messages),
                static_cast<unsigned long long>(res.total.remote_messages));
        }
        EXPECT_TRUE(res.finished) << name << " rank " << ctx.rank();
        EXPECT_EQ(res.value, expected) << name << "(" << a.paper_arg << ") rank " << ctx.rank();
        EXPECT_GT(res.total.threads, 0u);
        EXPECT_GT(res.total.quanta, 0u);
        EXPECT_GE(res.total.frames, res.total.released);
        if (ctx.size() > 1) {
            EXPECT_GT(res.total.remote_messages, 0u) << name << " ran on one rank only";
        }
    });
    ASSERT_EQ(rc, 0);
}

#define TAM_APP_TEST(app)                                \
    TEST_P(tam_apps_run, app##_am) {                     \
        check_app(*this, #app, policy::active_messages); \
    }                                                    \
    TEST_P(tam_apps_run, app##_md) {                     \
        check_app(*this, #app, policy::message_driven);  \
    }

TAM_APP_TEST(mmt)
TAM_APP_TEST(qs)
TAM_APP_TEST(dtw)
TAM_APP_TEST(paraffins)
TAM_APP_TEST(wavefront)
TAM_APP_TEST(ss)

AM_INSTANTIATE(tam_apps_run, am_test::make_params({1, 2, 4, 8}, {2, 4}));

TEST(tam_apps_list, six_in_table_order) {
    const auto all = tam_apps::all();
    ASSERT_EQ(all.size(), 6u);
    const char* names[] = {"mmt", "qs", "dtw", "paraffins", "wavefront", "ss"};
    for (std::size_t i = 0; i < all.size(); ++i) {
        EXPECT_EQ(std::string(all[i].name), names[i]);
        EXPECT_EQ(&tam_apps::find(names[i]), &all[i]);
        EXPECT_GT(all[i].paper_arg, 0);
        EXPECT_GE(all[i].large_arg, all[i].paper_arg);
    }
    EXPECT_THROW((void)tam_apps::find("nope"), std::invalid_argument);
}

}  // namespace
