// SPDX-License-Identifier: MIT
// threads: ranks are threads of one process over a region in private anonymous memory.
#pragma once

#include "../registry.hpp"

namespace am::transport::threads {

/// Runs `cfg.ranks` ranks as threads (rank 0 on the calling thread) and joins them.
int launch(const config& cfg, const rank_body& body);

}  // namespace am::transport::threads
