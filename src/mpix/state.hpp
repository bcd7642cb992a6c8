// SPDX-License-Identifier: MIT
// The process-wide state of MPIX_AM: the am job, the AM windows by MPI_Win, the ops by MPI_Op.
//
// The one exception to am's no-global-state rule: MPI's handles (MPI_Win, MPI_Op) and the
// profiling interface are per process, so the map from them to am objects is too. Ranks are
// processes here (one am::mpi_session on MPI_COMM_WORLD per process), never threads.
#pragma once

#include <am/mpix_am.h>
#include <am/mpi.hpp>
#include <am/window.hpp>

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace am::mpix {

/// An MPI window that is also an am window.
struct win_entry {
    MPI_Win win = MPI_WIN_NULL;
    std::unique_ptr<am::window> window;
    std::vector<int> disp_units;                 ///< every rank's disp_unit (they may differ)
    std::optional<global_ptr<std::byte>> block;  ///< MPI_Win_allocate memory in am's segment
    std::vector<std::pair<MPI_Op, std::uint32_t>> ops;  ///< registered ops: am op index
    void* attached = nullptr;                           ///< the user's attached buffer, as given
    MPI_Aint attached_size = 0;
    // Access epochs as MPI sees them (for MPIX_Am's MPI_ERR_RMA_SYNC).
    std::atomic<bool> fence_epoch{false};
    std::atomic<bool> lock_all{false};
    std::unique_ptr<std::atomic<bool>[]> locked;  ///< per target rank

    [[nodiscard]] bool in_epoch(int target) const noexcept {
        return fence_epoch.load() || lock_all.load() || locked[static_cast<std::size_t>(target)];
    }
    /// The am op index of `op` on this window, if registered.
    [[nodiscard]] std::optional<std::uint32_t> op_index(MPI_Op op) const;
};

/// The process's MPIX_AM state (created on first use, never destroyed: the program may call
/// MPI from exit handlers).
class process_state {
  public:
    /// The am context, opening the session on MPI_COMM_WORLD first (collective over it).
    am::context& ctx();
    [[nodiscard]] bool session_open() const noexcept { return _session != nullptr; }
    /// Closes the session (collective; MPI_Finalize).
    void finish();

    void add_window(std::shared_ptr<win_entry> e);
    [[nodiscard]] std::shared_ptr<win_entry> find_window(MPI_Win w) const;
    std::shared_ptr<win_entry> remove_window(MPI_Win w);
    /// The windows still open, in creation order.
    [[nodiscard]] std::vector<std::shared_ptr<win_entry>> windows() const;

    void add_op(MPI_Op op, MPIX_Am_user_function* fn);
    [[nodiscard]] MPIX_Am_user_function* find_op(MPI_Op op) const;
    bool remove_op(MPI_Op op);

  private:
    mutable std::mutex _mutex;
    std::unique_ptr<am::mpi_session> _session;
    std::vector<std::shared_ptr<win_entry>> _windows;
    std::vector<std::pair<MPI_Op, MPIX_Am_user_function*>> _ops;
};

process_state& state();

/// Marks the calling thread as inside MPIX_AM: the wrapped MPI_* functions then go straight to
/// PMPI (MPI calls made by am itself, or by our own code, never re-enter the wrappers).
class inside {
  public:
    inside() noexcept { ++depth(); }
    ~inside() { --depth(); }
    inside(const inside&) = delete;
    inside& operator=(const inside&) = delete;
    [[nodiscard]] static bool active() noexcept { return depth() > 0; }

  private:
    static int& depth() noexcept;
};

/// This process's rank in MPI_COMM_WORLD (-1 when MPI is not running).
int world_rank() noexcept;

/// Whose error handler a failure invokes: a window's, or a communicator's (window creation;
/// MPI_COMM_WORLD when no object is involved).
struct err_target {
    MPI_Win win = MPI_WIN_NULL;
    MPI_Comm comm = MPI_COMM_WORLD;
};

/// Reports a failed call: prints "<call>: rank R: <what>" (`what` alone when it names the rank
/// already), invokes the error handler of `on` with `error_class`, returns `error_class`.
int fail(err_target on, int error_class, const char* call, const std::string& what);
/// As `fail` for the exception being handled in `call`: am::error (by its errc),
/// std::bad_alloc, std::invalid_argument (MPI_ERR_TYPE), anything else (MPI_ERR_OTHER).
int fail_current(err_target on, const char* call);
/// The MPI error class of an am::errc.
int error_class_of(int am_errc) noexcept;

}  // namespace am::mpix
