// SPDX-License-Identifier: MIT
// The profiling-interface wrappers (pmpi.cpp) define MPI_Win_* and MPI_Finalize.
#pragma once

namespace am::mpix {

/// Called by MPIX_Am_op_create so that linking any MPIX function links the wrappers too (a
/// static library's object is linked only when something in it is needed; a program that
/// names libmpi before libam_mpix would otherwise get MPI's MPI_Win_create).
void wrappers_anchor() noexcept;

}  // namespace am::mpix
