// SPDX-License-Identifier: MIT
// AM windows behind MPI windows: creation (MPI_Win_create / MPI_Win_allocate on a communicator
// congruent to MPI_COMM_WORLD), the am_* info keys, and freeing.
#pragma once

#include "state.hpp"

#include <string>

namespace am::mpix {

/// Whether windows on `comm` are AM windows: `comm` has MPI_COMM_WORLD's processes in its
/// order (am's ranks are MPI_COMM_WORLD's).
bool congruent_to_world(MPI_Comm comm);

/// The am_* info keys of `info` (MPI_INFO_NULL: the defaults): am_ordering (the paper's
/// syntax), am_internal_buffer (bytes), am_pipeline_unit (segments). Throws am::error
/// (errc::invalid_argument) naming the key and the value.
am::window_info parse_info(MPI_Info info, const char* call);

/// MPI_Win_create on an AM communicator: the MPI window, then the am window over the same
/// memory (collective).
int create_window(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                  MPI_Win* win);
/// MPI_Win_allocate on an AM communicator: the memory in am's segment when every process has
/// room there (so node peers can map it), else MPI's; an MPI window over it (PMPI_Win_create)
/// and the am window.
int allocate_window(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                    MPI_Win* win);
/// MPI_Win_free of an AM window (collective): completes the AMs and frees the am window, then
/// the MPI window, then the memory in am's segment.
int free_window(const std::shared_ptr<win_entry>& e, MPI_Win* win);

}  // namespace am::mpix
