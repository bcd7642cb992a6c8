// SPDX-License-Identifier: MIT
// The one list of transports: how a job's ranks are started for a given configuration.
#pragma once

#include "transport.hpp"

#include <am/config.hpp>

#include <functional>

namespace am::transport {

/// Runs on every rank with that rank's transport; returns the rank's exit status.
using rank_body = std::function<int(transport&)>;

/// Starts the job's ranks as `cfg` (or the launcher's environment) says, runs `body` on each
/// and returns the job's exit status: 0 when every rank returned 0. In a process started by a
/// launcher (`amrun`), runs just that process's rank.
int launch(const config& cfg, const rank_body& body);

}  // namespace am::transport
