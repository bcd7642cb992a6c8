// SPDX-License-Identifier: MIT
// The MPI profiling-interface wrappers: each MPI_Win_* call the program makes on an AM window
// also does the AM part (create/free the am window, complete the AMs of the epoch it ends,
// open the am epoch it starts) and calls the PMPI_ function for the MPI part. Calls made from
// inside MPIX_AM (or by am itself, which uses none of these functions) go straight to PMPI.
//
// Order. Ending an epoch (fence, unlock, unlock_all, flush*): the AMs first, then MPI, so that
// a process waiting for its AMs to complete still serves the AMs of others (a process stuck in
// PMPI_Win_fence would not, without a progress thread). Passive epochs nest MPI's lock inside
// am's: am's lock first (its wait serves other processes' AMs and lock requests), then MPI's,
// which is then never contended (whoever holds MPI's lock on a target holds am's too); at the
// end the AMs are completed, MPI's lock released, then am's. The other order deadlocks
// without a progress thread: a process blocked in PMPI_Win_lock serves no am lock requests.
#include "pmpi.hpp"

#include "windows.hpp"

// MPIX_MODE_CONCURRENT_AM must be a bit no MPI assertion uses (Open MPI: 1..16, MPICH:
// 1024..16384), checked against the MPI this is built with.
static_assert((MPIX_MODE_CONCURRENT_AM & (MPI_MODE_NOCHECK | MPI_MODE_NOSTORE | MPI_MODE_NOPUT |
                                          MPI_MODE_NOPRECEDE | MPI_MODE_NOSUCCEED)) == 0,
              "MPIX_MODE_CONCURRENT_AM collides with an MPI_MODE_* assertion of this MPI");

namespace am::mpix {
namespace {

unsigned am_assert(int assert) noexcept {
    unsigned a = am::epoch_assert::none;
    if ((assert& MPIX_MODE_CONCURRENT_AM) != 0) a |= am::epoch_assert::concurrent;
    return a;
}

int mpi_assert(int assert) noexcept {
    return assert & ~MPIX_MODE_CONCURRENT_AM;
}

// Runs the am part of `call` on `e`; an am::error is reported on the window and returned.
template <class F>
int am_part(const win_entry& e, const char* call, F&& f) {
    try {
        f(*e.window);
        return MPI_SUCCESS;
    } catch (...) {
        return fail_current({e.win, MPI_COMM_WORLD}, call);
    }
}

bool valid_rank(const win_entry& e, int rank) noexcept {
    return rank >= 0 && static_cast<std::size_t>(rank) < e.disp_units.size();
}

int first_error(int a, int b) noexcept {
    return a != MPI_SUCCESS ? a : b;
}

}  // namespace

void wrappers_anchor() noexcept {}

}  // namespace am::mpix

using am::mpix::am_part;
using am::mpix::inside;
using am::mpix::state;

extern "C" {

int MPI_Win_create(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                   MPI_Win* win) {
    if (inside::active() || !am::mpix::congruent_to_world(comm)) {
        return PMPI_Win_create(base, size, disp_unit, info, comm, win);
    }
    const inside guard;
    return am::mpix::create_window(base, size, disp_unit, info, comm, win);
}

int MPI_Win_allocate(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                     MPI_Win* win) {
    if (inside::active() || !am::mpix::congruent_to_world(comm)) {
        return PMPI_Win_allocate(size, disp_unit, info, comm, baseptr, win);
    }
    const inside guard;
    return am::mpix::allocate_window(size, disp_unit, info, comm, baseptr, win);
}

int MPI_Win_free(MPI_Win* win) {
    if (inside::active() || win == nullptr) return PMPI_Win_free(win);
    const inside guard;
    auto e = state().find_window(*win);
    if (!e) return PMPI_Win_free(win);
    return am::mpix::free_window(e, win);
}

int MPI_Win_fence(int assert, MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e) return PMPI_Win_fence(am::mpix::mpi_assert(assert), win);
    const inside guard;
    const bool next = (assert& MPI_MODE_NOSUCCEED) == 0;
    unsigned a = am::mpix::am_assert(assert);
    if (!next) a |= am::epoch_assert::nosucceed;
    const int rc = am_part(*e, "MPI_Win_fence", [a](am::window& w) { w.fence(a); });
    e->fence_epoch = next;
    return am::mpix::first_error(rc, PMPI_Win_fence(am::mpix::mpi_assert(assert), win));
}

int MPI_Win_lock(int lock_type, int rank, int assert, MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e || !am::mpix::valid_rank(*e, rank)) {
        return PMPI_Win_lock(lock_type, rank, am::mpix::mpi_assert(assert), win);
    }
    const inside guard;
    const am::lock_type t =
        lock_type == MPI_LOCK_SHARED ? am::lock_type::shared : am::lock_type::exclusive;
    const unsigned a = am::mpix::am_assert(assert);
    const int arc = am_part(*e, "MPI_Win_lock", [&](am::window& w) { w.lock(rank, t, a); });
    if (arc != MPI_SUCCESS) return arc;
    const int rc = PMPI_Win_lock(lock_type, rank, am::mpix::mpi_assert(assert), win);
    if (rc != MPI_SUCCESS) {
        am_part(*e, "MPI_Win_lock", [rank](am::window& w) { w.unlock(rank); });
        return rc;
    }
    e->locked[static_cast<std::size_t>(rank)] = true;
    return MPI_SUCCESS;
}

int MPI_Win_unlock(int rank, MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e || !am::mpix::valid_rank(*e, rank)) return PMPI_Win_unlock(rank, win);
    const inside guard;
    const int rc = am_part(*e, "MPI_Win_unlock", [rank](am::window& w) { w.flush(rank); });
    e->locked[static_cast<std::size_t>(rank)] = false;
    const int prc = PMPI_Win_unlock(rank, win);
    const int arc = am_part(*e, "MPI_Win_unlock", [rank](am::window& w) { w.unlock(rank); });
    return am::mpix::first_error(rc, am::mpix::first_error(prc, arc));
}

int MPI_Win_lock_all(int assert, MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e) return PMPI_Win_lock_all(am::mpix::mpi_assert(assert), win);
    const inside guard;
    const unsigned a = am::mpix::am_assert(assert);
    const int arc = am_part(*e, "MPI_Win_lock_all", [a](am::window& w) { w.lock_all(a); });
    if (arc != MPI_SUCCESS) return arc;
    const int rc = PMPI_Win_lock_all(am::mpix::mpi_assert(assert), win);
    if (rc != MPI_SUCCESS) {
        am_part(*e, "MPI_Win_lock_all", [](am::window& w) { w.unlock_all(); });
        return rc;
    }
    e->lock_all = true;
    return MPI_SUCCESS;
}

int MPI_Win_unlock_all(MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e) return PMPI_Win_unlock_all(win);
    const inside guard;
    const int rc = am_part(*e, "MPI_Win_unlock_all", [](am::window& w) { w.flush_all(); });
    e->lock_all = false;
    const int prc = PMPI_Win_unlock_all(win);
    const int arc = am_part(*e, "MPI_Win_unlock_all", [](am::window& w) { w.unlock_all(); });
    return am::mpix::first_error(rc, am::mpix::first_error(prc, arc));
}

int MPI_Win_flush(int rank, MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e || !am::mpix::valid_rank(*e, rank)) return PMPI_Win_flush(rank, win);
    const inside guard;
    const int rc = am_part(*e, "MPI_Win_flush", [rank](am::window& w) { w.flush(rank); });
    return am::mpix::first_error(rc, PMPI_Win_flush(rank, win));
}

int MPI_Win_flush_all(MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e) return PMPI_Win_flush_all(win);
    const inside guard;
    const int rc = am_part(*e, "MPI_Win_flush_all", [](am::window& w) { w.flush_all(); });
    return am::mpix::first_error(rc, PMPI_Win_flush_all(win));
}

// Local completion of an AM would free only its input buffer; the output arrives with remote
// completion, so the flush_local forms complete the AMs entirely (a stronger guarantee).
int MPI_Win_flush_local(int rank, MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e || !am::mpix::valid_rank(*e, rank)) return PMPI_Win_flush_local(rank, win);
    const inside guard;
    const int rc = am_part(*e, "MPI_Win_flush_local", [rank](am::window& w) { w.flush(rank); });
    return am::mpix::first_error(rc, PMPI_Win_flush_local(rank, win));
}

int MPI_Win_flush_local_all(MPI_Win win) {
    auto e = inside::active() ? nullptr : state().find_window(win);
    if (!e) return PMPI_Win_flush_local_all(win);
    const inside guard;
    const int rc = am_part(*e, "MPI_Win_flush_local_all", [](am::window& w) { w.flush_all(); });
    return am::mpix::first_error(rc, PMPI_Win_flush_local_all(win));
}

// The am job ends before MPI: windows the program left open are freed first (collective, in
// creation order, as on every process), then the session is finished.
int MPI_Finalize(void) {
    if (inside::active()) return PMPI_Finalize();
    {
        const inside guard;
        for (const auto& e : state().windows()) {
            MPI_Win w = e->win;
            am::mpix::free_window(e, &w);
        }
        state().finish();
    }
    return PMPI_Finalize();
}

}  // extern "C"
