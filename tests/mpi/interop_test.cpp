// SPDX-License-Identifier: MIT
// am inside an MPI program, started by mpiexec (tests/mpi/CMakeLists.txt):
//
//   am_mpi_interop user [single|serialized|multiple]
//     The program initialises MPI itself (MPI_Init, or MPI_Init_thread at the level named),
//     builds its own communicators (world in reversed order, and odd/even halves) and, three
//     times over, alternates its own MPI traffic (MPI_Allreduce, MPI_Bcast, point-to-point on
//     its communicator with tags am might use too) with am::run(comm, ...) phases (short,
//     medium and long active messages, put/get, send/recv). Receives the program posted on its
//     communicator before a phase (any source and any tag among them) must still be pending
//     after the phase and then get exactly the program's own messages. With "multiple" one
//     phase also runs a progress thread. At the end MPI must not have been finalised by am;
//     the program calls MPI_Finalize itself.
//
//   am_mpi_interop am_init
//     The program never calls MPI_Init: the first am::run (transport from the environment,
//     which says mpiexec started it) initialises MPI, a second am::run (config naming mpi)
//     works after it, and am finalises MPI at exit (mpiexec then exits 0).
//
// Every check that fails prints "interop: FAILED: rank R: ..." to stderr; the process exits
// non-zero then. Each process prints "interop: rank R ok" to stdout when everything held.
#include <am/am.hpp>
#include <am/mpi.hpp>

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <span>
#include <string>
#include <vector>

namespace {

int g_world_rank = -1;
int g_failures = 0;

void fail(int line, const std::string& what) {
    std::fprintf(stderr, "interop: FAILED: rank %d: line %d: %s\n", g_world_rank, line,
                 what.c_str());
    std::fflush(stderr);
    ++g_failures;
}

#define CHECK(cond)                                   \
    do {                                              \
        if (!(cond)) fail(__LINE__, "check: " #cond); \
    } while (0)

#define CHECK_EQ(a, b)                                                                      \
    do {                                                                                    \
        const auto va_ = (a);                                                               \
        const auto vb_ = (b);                                                               \
        if (!(va_ == vb_)) {                                                                \
            fail(__LINE__, std::string("check: " #a " == " #b ": ") + std::to_string(va_) + \
                               " != " + std::to_string(vb_));                               \
        }                                                                                   \
    } while (0)

#define CHECK_MPI(call)                                                                   \
    do {                                                                                  \
        const int rc_ = (call);                                                           \
        if (rc_ != MPI_SUCCESS) fail(__LINE__, #call " returned " + std::to_string(rc_)); \
    } while (0)

constexpr std::uint64_t mix(std::uint64_t x) noexcept {
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

std::vector<std::byte> pattern(std::size_t n, std::uint64_t seed) {
    std::vector<std::byte> v(n);
    std::uint64_t s = mix(seed);
    for (std::size_t i = 0; i < n; ++i) {
        if ((i & 7) == 0) s = mix(s + i);
        v[i] = static_cast<std::byte>(s >> ((i & 7) * 8));
    }
    return v;
}

bool same(std::span<const std::byte> a, std::span<const std::byte> b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin());
}

// The value rank `src` sends rank `dst` in a short message of phase `phase`.
std::uint64_t short_value(int phase, int src, int dst) {
    return mix(static_cast<std::uint64_t>(phase) * 1000003u +
               static_cast<std::uint64_t>(src) * 1009u + static_cast<std::uint64_t>(dst));
}

// What one am phase saw on this rank, for the program's MPI checks afterwards.
struct phase_result {
    int rank = -1, size = 0;
    std::uint64_t short_sum = 0;  // sum of short values received
    int bad = 0;                  // content errors seen in handlers
};

// One am phase: every rank sends every rank a short, a medium and a long request (each answered
// by a reply), puts into its right neighbour's block and gets from its left neighbour's block,
// and exchanges tagged messages (eager and rendezvous) with both neighbours, with the tags the
// program uses on its own communicator. Checked here; the sums are checked by the caller.
void am_phase(am::context& ctx, int phase, std::span<const int> tags, phase_result& out) {
    const int n = ctx.size(), me = ctx.rank();
    const int right = (me + 1) % n, left = (me + n - 1) % n;
    const auto un = static_cast<std::uint64_t>(n);
    out.rank = me;
    out.size = n;
    constexpr std::size_t medium_len = 3000, long_len = 5000, block = 200000;
    am::counter got(ctx), replies(ctx), flag(ctx), got_back(ctx);
    auto ack = ctx.handler([&](am::token&) { replies.add(); });
    auto on_short = ctx.handler([&, ack](am::token& t, std::uint64_t v) {
        if (v != short_value(phase, t.source(), me)) ++out.bad;
        out.short_sum += v;
        got.add();
        t.reply(ack);
    });
    auto on_medium = ctx.handler([&, ack](am::token& t, std::span<const std::byte> p) {
        if (!same(p, pattern(medium_len, short_value(phase, t.source(), me)))) ++out.bad;
        got.add();
        t.reply(ack);
    });
    auto on_long = ctx.handler([&, ack](am::token& t, std::span<std::byte> p, std::uint64_t off) {
        if (p.data() != ctx.segment().data() + off) ++out.bad;
        if (!same(p, pattern(long_len, short_value(phase, t.source(), me) + 1))) ++out.bad;
        got.add();
        t.reply(ack);
    });
    // Long payloads land in the segment's top part; allocate() blocks come first.
    const std::size_t long_base = ctx.segment().size() / 2;
    ctx.barrier();
    for (int i = 0; i < n; ++i) {
        const int d = (me + i) % n;
        const std::uint64_t v = short_value(phase, me, d);
        ctx.request(d, on_short, v);
        const auto m = pattern(medium_len, v);
        ctx.request(d, on_medium, am::bytes(m));
        const auto l = pattern(long_len, v + 1);
        const std::size_t off = long_base + static_cast<std::size_t>(me) * long_len;
        ctx.request(d, on_long, am::bytes(l), off, std::uint64_t{off});
    }

    // Split-C: put into the right neighbour's block, get the left neighbour's.
    const auto mine = ctx.allocate<std::byte>(block);
    const auto exposed = ctx.allocate<std::byte>(block);
    {
        const auto e = pattern(block, 7000 + static_cast<std::uint64_t>(phase * 100 + me));
        std::memcpy(ctx.local(exposed), e.data(), block);
    }
    const auto boxes = ctx.exchange(mine);
    const auto areas = ctx.exchange(exposed);
    const auto put_data = pattern(block, short_value(phase, me, right) + 2);
    ctx.put(boxes[static_cast<std::size_t>(right)], put_data.data(), block, flag);
    std::vector<std::byte> pulled(block);
    ctx.get(pulled.data(), areas[static_cast<std::size_t>(left)], block, got_back);

    // Send/receive with the program's tags: eager (small) and rendezvous (large).
    std::vector<std::vector<std::byte>> in, out_data;
    std::vector<am::request> reqs;
    std::vector<std::size_t> lens;
    for (std::size_t k = 0; k < tags.size(); ++k) {
        const std::size_t len = k % 2 == 0 ? 100 : 70000;
        lens.push_back(len);
        in.emplace_back(len + 8);
    }
    for (std::size_t k = 0; k < tags.size(); ++k) {
        reqs.push_back(ctx.irecv(left, tags[k], am::writable_bytes(in[k])));
    }
    for (std::size_t k = 0; k < tags.size(); ++k) {
        out_data.push_back(pattern(lens[k], short_value(phase, me, right) + 10 + k));
        reqs.push_back(ctx.isend(right, tags[k], am::bytes(out_data.back())));
    }
    for (std::size_t k = 0; k < tags.size(); ++k) {
        const am::message_status st = reqs[k].wait();
        CHECK_EQ(st.source, left);
        CHECK_EQ(st.tag, tags[k]);
        CHECK_EQ(st.bytes, lens[k]);
        CHECK(same(std::span(in[k]).first(lens[k]),
                   pattern(lens[k], short_value(phase, left, me) + 10 + k)));
    }
    for (std::size_t k = tags.size(); k < reqs.size(); ++k) reqs[k].wait();

    got.wait(3 * un);
    replies.wait(3 * un);
    flag.wait(1);
    got_back.wait(1);
    CHECK(same({ctx.local(mine), block}, pattern(block, short_value(phase, left, me) + 2)));
    CHECK(same(pulled, pattern(block, 7000 + static_cast<std::uint64_t>(phase * 100 + left))));
    ctx.quiesce();  // handlers use this function's state: nothing may arrive after it returns
    ctx.deallocate(exposed);
    ctx.deallocate(mine);
}

// The sum of the short values every rank of an `n`-rank job receives in phase `phase`.
std::uint64_t expected_total(int phase, int n) {
    std::uint64_t sum = 0;
    for (int s = 0; s < n; ++s) {
        for (int d = 0; d < n; ++d) sum += short_value(phase, s, d);
    }
    return sum;
}

// Runs one am phase on `comm` and checks it against the program's own view of `comm`.
void checked_phase(MPI_Comm comm, const am::config& cfg, int phase, std::span<const int> tags) {
    int crank = -1, csize = 0;
    MPI_Comm_rank(comm, &crank);
    MPI_Comm_size(comm, &csize);
    phase_result r;
    const int rc = am::run(comm, cfg, [&](am::context& ctx) { am_phase(ctx, phase, tags, r); });
    CHECK_EQ(rc, 0);
    CHECK_EQ(r.rank, crank);  // am ranks are the communicator's ranks
    CHECK_EQ(r.size, csize);
    CHECK_EQ(r.bad, 0);
    // The program's own collective on its communicator, right after the phase.
    std::uint64_t total = 0;
    CHECK_MPI(MPI_Allreduce(&r.short_sum, &total, 1, MPI_UINT64_T, MPI_SUM, comm));
    CHECK_EQ(total, expected_total(phase, csize));
}

// Fails unless `r`, a receive the program posted before an am phase, is still pending.
void expect_pending(MPI_Request& r, const std::string& what, int line) {
    int done = 0;
    MPI_Status st;
    if (MPI_Test(&r, &done, &st) != MPI_SUCCESS) fail(line, "MPI_Test of " + what + " failed");
    if (done == 0) return;
    int cancelled = 0;
    MPI_Test_cancelled(&st, &cancelled);
    fail(line, what + " posted before the am phases completed during them (source " +
                   std::to_string(st.MPI_SOURCE) + ", tag " + std::to_string(st.MPI_TAG) +
                   (cancelled != 0 ? ", cancelled" : ", not cancelled") + ")");
}

int init_level(const std::string& level) {
    if (level == "serialized") return MPI_THREAD_SERIALIZED;
    if (level == "multiple") return MPI_THREAD_MULTIPLE;
    return MPI_THREAD_SINGLE;
}

int user_mode(int argc, char** argv, const std::string& level) {
    if (level == "single") {
        MPI_Init(&argc, &argv);
    } else {
        int provided = -1;
        MPI_Init_thread(&argc, &argv, init_level(level), &provided);
        if (provided < init_level(level)) {
            std::fprintf(stderr, "interop: MPI provides thread level %d only, %s wanted\n",
                         provided, level.c_str());
            MPI_Abort(MPI_COMM_WORLD, 2);
        }
    }
    int wn = 0;
    MPI_Comm_rank(MPI_COMM_WORLD, &g_world_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &wn);
    const int wr = g_world_rank;

    // The program's communicators: world reversed, and the odd and even ranks.
    MPI_Comm rev = MPI_COMM_NULL, half = MPI_COMM_NULL;
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, 0, wn - 1 - wr, &rev));
    CHECK_MPI(MPI_Comm_split(MPI_COMM_WORLD, wr % 2, wr, &half));
    int rr = -1, hr = -1, hn = 0;
    MPI_Comm_rank(rev, &rr);
    MPI_Comm_rank(half, &hr);
    MPI_Comm_size(half, &hn);
    CHECK_EQ(rr, wn - 1 - wr);
    const int right = (rr + 1) % wn, left = (rr + wn - 1) % wn;

    int* tag_ub_attr = nullptr;
    int has_ub = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &tag_ub_attr, &has_ub);
    const int tag_ub = has_ub != 0 && tag_ub_attr != nullptr ? *tag_ub_attr : 32767;
    // Tags am could use too: the smallest, small ones, and the largest MPI allows.
    const std::array<int, 4> tags = {0, 1, 7, tag_ub};

    const am::config cfg = am::config::from_env();  // AM_NODE_SIZE from the test's environment
    constexpr int rounds = 3;
    for (int round = 0; round < rounds; ++round) {
        // 1. The program's collectives.
        int sum = 0, want = 0;
        for (int r = 0; r < wn; ++r) want += r + round;
        const int mine = rr + round;
        CHECK_MPI(MPI_Allreduce(&mine, &sum, 1, MPI_INT, MPI_SUM, rev));
        CHECK_EQ(sum, want);
        std::array<std::uint64_t, 64> bc{};
        const int root = round % wn;
        if (rr == root) {
            for (std::size_t i = 0; i < bc.size(); ++i) bc[i] = mix(round * 100 + i);
        }
        CHECK_MPI(MPI_Bcast(bc.data(), static_cast<int>(bc.size()), MPI_UINT64_T, root, rev));
        for (std::size_t i = 0; i < bc.size(); ++i) CHECK_EQ(bc[i], mix(round * 100 + i));

        // 2. Receives the program posts on its communicator before the am phase: one for any
        //    source and any tag, one for its left neighbour and this round's tag.
        const int tag = tags[static_cast<std::size_t>(round) % tags.size()];
        std::array<std::uint64_t, 4> any_in{}, tag_in{};
        MPI_Request any_req = MPI_REQUEST_NULL, tag_req = MPI_REQUEST_NULL;
        CHECK_MPI(
            MPI_Irecv(any_in.data(), 4, MPI_UINT64_T, MPI_ANY_SOURCE, MPI_ANY_TAG, rev, &any_req));
        CHECK_MPI(MPI_Irecv(tag_in.data(), 4, MPI_UINT64_T, left, tag, rev, &tag_req));

        // 3. am phases: on the reversed world (with a progress thread in one round when MPI
        //    allows it), then on each half at once (two am jobs side by side).
        am::config phase_cfg = cfg;
        phase_cfg.progress_thread = level == "multiple" && round == 1;
        checked_phase(rev, phase_cfg, round, tags);
        checked_phase(half, cfg, 10 + round, tags);

        // 4. am took none of the program's messages: both receives are still pending. (Checked
        //    before any process sends its own messages of step 5.)
        MPI_Status st;
        expect_pending(any_req, "the any-source any-tag receive", __LINE__);
        expect_pending(tag_req, "the receive from the left neighbour", __LINE__);
        CHECK_MPI(MPI_Barrier(rev));

        // 5. The program's own point-to-point traffic: two messages to the right neighbour with
        //    this round's tag; the first matches the any-source receive (posted first), the
        //    second the tagged one.
        std::array<std::uint64_t, 4> first{}, second{};
        for (std::size_t i = 0; i < 4; ++i) {
            first[i] = mix(1000 * round + 10 * rr + i);
            second[i] = mix(2000 * round + 10 * rr + i);
        }
        CHECK_MPI(MPI_Send(first.data(), 4, MPI_UINT64_T, right, tag, rev));
        CHECK_MPI(MPI_Send(second.data(), 4, MPI_UINT64_T, right, tag, rev));
        CHECK_MPI(MPI_Wait(&any_req, &st));
        CHECK_EQ(st.MPI_SOURCE, left);
        CHECK_EQ(st.MPI_TAG, tag);
        for (std::size_t i = 0; i < 4; ++i) CHECK_EQ(any_in[i], mix(1000 * round + 10 * left + i));
        CHECK_MPI(MPI_Wait(&tag_req, &st));
        CHECK_EQ(st.MPI_SOURCE, left);
        for (std::size_t i = 0; i < 4; ++i) CHECK_EQ(tag_in[i], mix(2000 * round + 10 * left + i));

        // 6. A ring exchange on the halves and a world barrier between rounds.
        int from_left = -1;
        const int hright = (hr + 1) % hn, hleft = (hr + hn - 1) % hn;
        CHECK_MPI(MPI_Sendrecv(&hr, 1, MPI_INT, hright, tag, &from_left, 1, MPI_INT, hleft, tag,
                               half, MPI_STATUS_IGNORE));
        CHECK_EQ(from_left, hleft);
        CHECK_MPI(MPI_Barrier(MPI_COMM_WORLD));
    }

    // am must not have finalised MPI: the program does that.
    int finalized = 1, initialized = 0;
    MPI_Finalized(&finalized);
    MPI_Initialized(&initialized);
    CHECK_EQ(finalized, 0);
    CHECK_EQ(initialized, 1);
    CHECK_MPI(MPI_Comm_free(&half));
    CHECK_MPI(MPI_Comm_free(&rev));
    // Every process learns whether all were fine, so one failure fails every process.
    int failures = g_failures, all_failures = 0;
    CHECK_MPI(MPI_Allreduce(&failures, &all_failures, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD));
    MPI_Finalize();
    if (g_failures == 0 && all_failures == 0) std::printf("interop: rank %d ok\n", wr);
    return all_failures == 0 ? 0 : 1;
}

int am_init_mode(int argc, char** argv) {
    const char* env_rank = std::getenv("OMPI_COMM_WORLD_RANK");
    if (env_rank == nullptr) env_rank = std::getenv("PMI_RANK");
    const char* env_size = std::getenv("OMPI_COMM_WORLD_SIZE");
    if (env_size == nullptr) env_size = std::getenv("PMI_SIZE");
    g_world_rank = env_rank != nullptr ? std::atoi(env_rank) : -1;
    const int want_size = env_size != nullptr ? std::atoi(env_size) : -1;

    int initialized = 1;
    MPI_Initialized(&initialized);
    CHECK_EQ(initialized, 0);

    // 1. Transport from the environment: mpiexec started this process, so mpi.
    const std::array<int, 2> tags = {0, 5};
    phase_result r1;
    const int rc1 = am::run(argc, argv, [&](am::context& ctx) { am_phase(ctx, 0, tags, r1); });
    CHECK_EQ(rc1, 0);
    CHECK_EQ(r1.size, want_size);
    CHECK_EQ(r1.rank, g_world_rank);
    CHECK_EQ(r1.bad, 0);
    MPI_Initialized(&initialized);
    CHECK_EQ(initialized, 1);  // am initialised MPI ...
    int finalized = 1;
    MPI_Finalized(&finalized);
    CHECK_EQ(finalized, 0);  // ... and keeps it until the process exits
    // MPI is usable by the program in between.
    std::uint64_t total = 0;
    CHECK_MPI(MPI_Allreduce(&r1.short_sum, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(total, expected_total(0, want_size));

    // 2. A second job in the same process, the config naming mpi.
    am::config cfg = am::config::from_env();
    cfg.transport = am::transport_kind::mpi;
    cfg.ranks = 1;  // ignored on mpi
    phase_result r2;
    const int rc2 = am::run(cfg, [&](am::context& ctx) { am_phase(ctx, 1, tags, r2); });
    CHECK_EQ(rc2, 0);
    CHECK_EQ(r2.size, want_size);
    CHECK_EQ(r2.rank, g_world_rank);
    CHECK_EQ(r2.bad, 0);
    CHECK_MPI(MPI_Allreduce(&r2.short_sum, &total, 1, MPI_UINT64_T, MPI_SUM, MPI_COMM_WORLD));
    CHECK_EQ(total, expected_total(1, want_size));
    if (g_failures == 0) std::printf("interop: rank %d ok\n", g_world_rank);
    std::fflush(stdout);
    return g_failures == 0 ? 0 : 1;  // am finalises MPI at exit
}

}  // namespace

int main(int argc, char** argv) {
    const std::string mode = argc > 1 ? argv[1] : "";
    const std::string level = argc > 2 ? argv[2] : "single";
    try {
        if (mode == "user" && (level == "single" || level == "serialized" || level == "multiple")) {
            return user_mode(argc, argv, level);
        }
        if (mode == "am_init") return am_init_mode(argc, argv);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "interop: FAILED: rank %d: %s\n", g_world_rank, e.what());
        return 1;
    }
    std::fprintf(stderr, "usage: am_mpi_interop user [single|serialized|multiple] | am_init\n");
    return 2;
}
