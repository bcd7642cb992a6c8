// SPDX-License-Identifier: MIT
// AM_EPOCH_TIMEOUT (config::epoch_timeout): when ranks disagree about epochs, the job fails
// within a bounded time instead of hanging, and every rank that was ending the epoch prints its
// per-peer and per-type counts of it. Two disagreements: rank 0 opens one epoch more than the
// others, and one rank never ends an epoch the others end. The wall-clock bound is a hang
// guard, not a performance claim.
#include "typed/typed_support.hpp"

namespace {

using am_test::spmd_param;
using am_test::spmd_test;

struct timeout_item {
    std::uint64_t value;
    std::int32_t from;
    std::uint32_t index;
};

class typed_timeout : public spmd_test {
  protected:
    // Runs `fn` with a 1 s epoch timeout; returns the job status and what the job printed.
    [[nodiscard]] std::pair<int, std::string> timed_out_job(const am_test::rank_fn& fn) const {
        int rc = 0;
        const auto t0 = std::chrono::steady_clock::now();
        const std::string out = typed_test::capture_stderr(
            [&] { rc = run(fn, [](am::config& cfg) { cfg.epoch_timeout = 1; }); });
        EXPECT_LT(typed_test::seconds_since(t0), 30.0) << "hang guard";
        return {rc, out};
    }
};

// Rank 0 opens a second epoch the others never open (they wait for a message that never
// comes, polling), sends 5 messages one by one and 3 coalesced to rank 1 in it, and ends it:
// the end times out, rank 0 prints its counts of the epoch (8 sent to rank 1 in 6 batches,
// none handled there), names the ranks that never joined the end, and the job fails. (Had the
// others returned, their end-of-run quiescence would meet the epoch's end: a collective
// mismatch, reported at once — tests/collective.)
TEST_P(typed_timeout, one_rank_opens_an_extra_epoch) {
    const auto [rc, out] = timed_out_job([](am::context& ctx) {
        const int me = ctx.rank();
        am::message_type<timeout_item> type(
            ctx, [](const timeout_item&) {}, "probe");
        auto buf = am::coalesce(type, {.bytes = 8 * sizeof(timeout_item)});
        {
            am::epoch e(ctx);
            type.send(timeout_item{1, me, 0}, (me + 1) % ctx.size());
        }
        if (me != 0) {
            am::counter never(ctx);
            never.wait(1);  // polls (handling rank 0's messages) until the job is aborted
            return;
        }
        am::epoch e(ctx);
        for (std::uint32_t i = 0; i < 5; ++i) type.send(timeout_item{2, me, i}, 1);
        for (std::uint32_t i = 0; i < 3; ++i) buf.send(timeout_item{2, me, i}, 1);
        e.end();
        ADD_FAILURE() << "the extra epoch ended";
    });
    EXPECT_NE(rc, 0) << out;
    for (const char* part :
         {"am: rank 0: epoch 2 did not end within AM_EPOCH_TIMEOUT (ending for ",
          "general detector",
          "am: rank 0:   type 0 \"probe\": to rank 1 sent 8 in 6 batches; from rank 1 handled 0",
          "am::epoch::end: rank 0: epoch 2 did not end within 1 s (AM_EPOCH_TIMEOUT)",
          "not joined am::epoch::end (collective #"}) {
        EXPECT_TRUE(am_test::contains(out, part)) << "\"" << part << "\" not in:\n" << out;
    }
    // Only epoch 2's counts: nothing of epoch 1 (sent to rank 1 % size) is listed.
    EXPECT_FALSE(am_test::contains(out, "sent 1 in 1 batches")) << out;
}

// Every rank sends two messages to every other rank in an epoch; then rank 1 keeps polling and
// never ends it, while the others end it. They time out (or are aborted by the first that does)
// and each prints, per peer, what it sent in the epoch and handled from it.
TEST_P(typed_timeout, one_rank_never_ends) {
    const int nranks = ranks();
    const auto [rc, out] = timed_out_job([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        am::message_type<timeout_item> type(
            ctx, [](const timeout_item&) {}, "probe");
        am::epoch e(ctx);
        for (int d = 0; d < n; ++d) {
            if (d == me) continue;
            for (std::uint32_t i = 0; i < 2; ++i) type.send(timeout_item{1, me, i}, d);
        }
        ctx.barrier();  // every message is in its ring: all are handled below
        if (me == 1) {
            for (;;) (void)ctx.poll();  // throws errc::aborted when the job fails
        }
        e.end();
        ADD_FAILURE() << "rank " << me << ": the epoch ended";
    });
    EXPECT_NE(rc, 0) << out;
    EXPECT_TRUE(am_test::contains(out, "did not end within AM_EPOCH_TIMEOUT")) << out;
    EXPECT_TRUE(am_test::contains(out, "did not end within 1 s (AM_EPOCH_TIMEOUT)")) << out;
    for (int r = 0; r < nranks; ++r) {
        if (r == 1) continue;
        const std::string me = "am: rank " + std::to_string(r) + ": ";
        EXPECT_TRUE(am_test::contains(out, me + "epoch 1 did not end within") ||
                    am_test::contains(out, me + "epoch 1 was open when the job aborted"))
            << out;
        for (int p = 0; p < nranks; ++p) {
            if (p == r) continue;
            const std::string line = me + "  type 0 \"probe\": to rank " + std::to_string(p) +
                                     " sent 2 in 2 batches; from rank " + std::to_string(p) +
                                     " handled 2";
            EXPECT_TRUE(am_test::contains(out, line)) << "\"" << line << "\" not in:\n" << out;
        }
    }
    // Rank 1 was not ending the epoch: it prints no counts.
    EXPECT_FALSE(am_test::contains(out, "am: rank 1:   type 0")) << out;
}

// Jobs whose stderr the test reads: every rank in this process (not mpi).
AM_INSTANTIATE(typed_timeout, (std::vector<spmd_param>{{am::transport_kind::threads, 2},
                                                       {am::transport_kind::threads, 4},
                                                       {am::transport_kind::shm, 2}}));

}  // namespace
