// SPDX-License-Identifier: MIT
#include "state.hpp"

#include <am/error.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <new>
#include <stdexcept>

namespace am::mpix {

std::optional<std::uint32_t> win_entry::op_index(MPI_Op op) const {
    for (const auto& [o, index] : ops) {
        if (o == op) return index;
    }
    return std::nullopt;
}

am::context& process_state::ctx() {
    std::lock_guard lock(_mutex);
    if (!_session) {
        am::config cfg = am::config::from_env();
        int provided = MPI_THREAD_SINGLE;
        MPI_Query_thread(&provided);
        const bool multiple = provided == MPI_THREAD_MULTIPLE;
        // With MPI_THREAD_MULTIPLE, AMs progress while the target computes (a progress
        // thread) and any thread may make MPIX calls; AM_PROGRESS_THREAD overrides the first.
        if (std::getenv("AM_PROGRESS_THREAD") == nullptr) cfg.progress_thread = multiple;
        cfg.thread_multiple = multiple;
#ifdef MPICH_VERSION
        // MPICH completes another process's passive-target calls (MPI_Win_lock, _unlock,
        // _flush) only while this process is inside MPI, and am polls MPI only for peers it
        // reaches through MPI: with peers in shared memory, a process waiting in am (for an am
        // lock, a flush, MPI_Win_free) would never let a peer's MPI_Win_lock finish while the
        // peer holds what it waits for. Every am message goes through MPI then (no mapped
        // windows, no origin-side runs). Open MPI's one-sided needs no such progress.
        cfg.node_size = 1;
#endif
        _session = std::make_unique<am::mpi_session>(MPI_COMM_WORLD, cfg);
    }
    return _session->ctx();
}

void process_state::finish() {
    std::unique_ptr<am::mpi_session> s;
    {
        std::lock_guard lock(_mutex);
        s = std::move(_session);
    }
    if (s) s->finish();
}

void process_state::add_window(std::shared_ptr<win_entry> e) {
    std::lock_guard lock(_mutex);
    _windows.push_back(std::move(e));
}

std::shared_ptr<win_entry> process_state::find_window(MPI_Win w) const {
    std::lock_guard lock(_mutex);
    for (const auto& e : _windows) {
        if (e->win == w) return e;
    }
    return nullptr;
}

std::shared_ptr<win_entry> process_state::remove_window(MPI_Win w) {
    std::lock_guard lock(_mutex);
    auto it =
        std::find_if(_windows.begin(), _windows.end(), [w](const auto& e) { return e->win == w; });
    if (it == _windows.end()) return nullptr;
    std::shared_ptr<win_entry> e = *it;
    _windows.erase(it);
    return e;
}

std::vector<std::shared_ptr<win_entry>> process_state::windows() const {
    std::lock_guard lock(_mutex);
    return _windows;
}

void process_state::add_op(MPI_Op op, MPIX_Am_user_function* fn) {
    std::lock_guard lock(_mutex);
    _ops.emplace_back(op, fn);
}

MPIX_Am_user_function* process_state::find_op(MPI_Op op) const {
    std::lock_guard lock(_mutex);
    for (const auto& [o, fn] : _ops) {
        if (o == op) return fn;
    }
    return nullptr;
}

bool process_state::remove_op(MPI_Op op) {
    std::lock_guard lock(_mutex);
    auto it = std::find_if(_ops.begin(), _ops.end(), [op](const auto& p) { return p.first == op; });
    if (it == _ops.end()) return false;
    _ops.erase(it);
    return true;
}

process_state& state() {
    static process_state* s = new process_state;  // never destroyed: see the class comment
    return *s;
}

int& inside::depth() noexcept {
    thread_local int d = 0;
    return d;
}

int world_rank() noexcept {
    int initialized = 0, finalized = 0, rank = -1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

int error_class_of(int am_errc) noexcept {
    switch (static_cast<am::errc>(am_errc)) {
        case am::errc::bad_rank:
            return MPI_ERR_RANK;
        case am::errc::bad_handler:
        case am::errc::handler_mismatch:
            return MPI_ERR_OP;
        case am::errc::too_large:
            return MPI_ERR_BUFFER;
        case am::errc::bad_context:
            return MPI_ERR_RMA_SYNC;
        case am::errc::out_of_segment:
            return MPI_ERR_RMA_RANGE;
        case am::errc::invalid_argument:
            return MPI_ERR_ARG;
        case am::errc::no_memory:
            return MPI_ERR_NO_MEM;
        default:
            return MPI_ERR_OTHER;
    }
}

int fail(err_target on, int error_class, const char* call, const std::string& what) {
    const int rank = world_rank();
    const std::string tag = "rank " + std::to_string(rank) + ":";
    if (what.rfind(call, 0) == 0) {  // names the call (and the rank) already
        std::fprintf(stderr, "%s\n", what.c_str());
    } else if (what.find(tag) != std::string::npos) {
        std::fprintf(stderr, "%s: %s\n", call, what.c_str());
    } else {
        std::fprintf(stderr, "%s: rank %d: %s\n", call, rank, what.c_str());
    }
    std::fflush(stderr);
    if (rank >= 0) {
        if (on.win != MPI_WIN_NULL) {
            MPI_Win_call_errhandler(on.win, error_class);
        } else {
            MPI_Comm_call_errhandler(on.comm, error_class);
        }
    }
    return error_class;
}

int fail_current(err_target on, const char* call) {
    try {
        throw;
    } catch (const am::error& e) {
        return fail(on, error_class_of(static_cast<int>(e.code())), call, e.what());
    } catch (const std::bad_alloc&) {
        return fail(on, MPI_ERR_NO_MEM, call, "out of memory");
    } catch (const std::invalid_argument& e) {
        return fail(on, MPI_ERR_TYPE, call, e.what());
    } catch (const std::exception& e) {
        return fail(on, MPI_ERR_OTHER, call, e.what());
    } catch (...) {
        return fail(on, MPI_ERR_OTHER, call, "unknown exception");
    }
}

}  // namespace am::mpix
