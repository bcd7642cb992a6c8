// SPDX-License-Identifier: MIT
// am::mpi_session (include/am/mpi.hpp), the non-scoped am job AML is built on, from C++:
//   ok     two sessions in a row on MPI_COMM_WORLD (closed by finish) and one on a split
//          communicator (closed by its destructor); messages exchanged in each, the last one
//          sent just before the session closes must still be handled (quiescence at finish).
//   throw  rank 1 fails inside the session: the job must end naming it.
// Prints "session: rank R ok" per rank when every check held.
#include <am/context.hpp>
#include <am/mpi.hpp>

#include <cstdio>
#include <cstring>
#include <stdexcept>

namespace {

int failures = 0;

void check(bool ok, int rank, const char* what) {
    if (ok) return;
    std::printf("session: rank %d FAILED: %s\n", rank, what);
    ++failures;
}

// Every rank sends `rounds` requests to every rank; the handler counts them in `got`.
void exchange(am::mpi_session& s, int rounds, int& got, bool quiesce) {
    am::context& ctx = s.ctx();
    auto h = ctx.handler([&got](am::token&, int value) { got += value; });
    ctx.barrier();
    for (int r = 0; r < rounds; ++r) {
        for (int d = 0; d < ctx.size(); ++d) ctx.request(d, h, 1);
    }
    if (quiesce) ctx.quiesce();
}

}  // namespace

int main(int argc, char** argv) {
    MPI_Init(&argc, &argv);
    int rank = 0, size = 1;
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    const bool fail_mode = argc > 1 && std::strcmp(argv[1], "throw") == 0;
    {
        am::mpi_session s(MPI_COMM_WORLD);
        // What am (or this code) throws while the session is open goes to fail(): the job ends
        // naming the rank, on every rank.
        try {
            int got = 0;
            check(s.ctx().rank() == rank && s.ctx().size() == size, rank, "rank or size");
            exchange(s, 100, got, true);
            check(got == 100 * size, rank, "first session: messages lost before quiesce");
            if (fail_mode && rank == 1 % size) {
                throw std::runtime_error("deliberate failure in a session");
            }
            int late = 0;
            exchange(s, 50, late, false);
            s.finish();  // quiesces: every message sent above has been handled here
            check(late == 50 * size, rank, "first session: finish did not complete the messages");
            check(s.finished(), rank, "finished() after finish");
        } catch (...) {
            s.fail(std::current_exception());
        }
    }
    {
        int got = 0;
        am::mpi_session s(MPI_COMM_WORLD);
        exchange(s, 10, got, true);
        check(got == 10 * size, rank, "second session on the same communicator");
    }
    MPI_Comm half = MPI_COMM_NULL;
    MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
    int half_size = 0;
    MPI_Comm_size(half, &half_size);
    int got = 0;
    {
        am::mpi_session s(half);
        check(s.ctx().size() == half_size, rank, "session on a split communicator: size");
        exchange(s, 20, got, false);
    }  // the destructor finishes: quiescence
    check(got == 20 * half_size, rank, "destructor did not complete the messages");
    MPI_Comm_free(&half);
    if (failures == 0) std::printf("session: rank %d ok\n", rank);
    std::fflush(stdout);
    MPI_Finalize();
    return failures == 0 ? 0 : 1;
}
