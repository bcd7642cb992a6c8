// SPDX-License-Identifier: MIT
/// @file
/// A child process that is always reaped, and a temporary file for its output: what the UCX
/// baseline needs to run ucx_perftest's server and client with bounded waits.
#pragma once

#include <sys/types.h>

#include <cstdio>
#include <string>
#include <vector>

namespace am::bench {

/// A started process, killed (SIGKILL) and reaped by the destructor unless it was reaped
/// before: no path out of the baseline leaves a ucx_perftest behind.
class child_process {
  public:
    child_process() = default;
    child_process(const child_process&) = delete;
    child_process& operator=(const child_process&) = delete;
    ~child_process() { kill_and_reap(); }

    /// Forks and runs `argv` (argv[0] a path) in a process group of its own, with stdout and
    /// stderr to `out_fd`, pinned to `cpu` (none when -1), `env` ("NAME=value") added to its
    /// environment. False when fork fails.
    bool start(std::vector<std::string> argv, int out_fd, int cpu,
               const std::vector<std::string>& env);

    /// Waits up to `ms` for the process to exit; true (status in `status()`) when it did.
    bool wait_for(int ms);
    /// Exit status, or -1 when killed by a signal (or never started).
    [[nodiscard]] int status() const noexcept { return _status; }

    /// Kills the process and the processes it started (its process group), and reaps it.
    void kill_and_reap();

  private:
    bool reap(int flags);

    pid_t _pid = -1;
    int _pidfd = -1;
    int _status = -1;
};

/// An anonymous temporary file for a child's output (removed when closed).
struct log_file {
    std::FILE* f = std::tmpfile();
    log_file() = default;
    log_file(const log_file&) = delete;
    log_file& operator=(const log_file&) = delete;
    ~log_file() {
        if (f != nullptr) std::fclose(f);
    }
    [[nodiscard]] int fd() const { return f != nullptr ? fileno(f) : -1; }
    /// What was written so far, line by line (without line ends).
    [[nodiscard]] std::vector<std::string> lines() const;
    /// Copies the output to stderr, each line prefixed by `who`.
    void dump(const char* who) const;
};

}  // namespace am::bench
