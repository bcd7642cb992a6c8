// SPDX-License-Identifier: MIT
#include "child_process.hpp"

#include "sys.hpp"

#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>

namespace am::bench {
namespace {

void sleep_ms(long ms) {
    timespec ts{ms / 1000, (ms % 1000) * 1000000};
    nanosleep(&ts, nullptr);
}

}  // namespace

bool child_process::start(std::vector<std::string> argv, int out_fd, int cpu,
                          const std::vector<std::string>& env) {
    std::fflush(nullptr);
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("bench: fork");
        return false;
    }
    if (pid == 0) {
        setpgid(0, 0);  // a group of its own: killing it kills what it started too
        dup2(out_fd, STDOUT_FILENO);
        dup2(out_fd, STDERR_FILENO);
        if (cpu >= 0) {
            cpu_set_t one;
            CPU_ZERO(&one);
            CPU_SET(cpu, &one);
            sched_setaffinity(0, sizeof one, &one);
        }
        exec_with_env(argv, env, "bench");
    }
    setpgid(pid, pid);  // also here, so that the group exists before any kill
    _pid = pid;
    // A descriptor that becomes readable when the process exits: a blocking, bounded wait
    // with no periodic wake-ups on the cores being measured. -1 on kernels before 5.3.
    _pidfd = static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
    return true;
}

void child_process::kill_and_reap() {
    if (_pid <= 0) return;
    kill(-_pid, SIGKILL);
    kill(_pid, SIGKILL);
    reap(0);
}

bool child_process::reap(int flags) {
    int st = 0;
    const pid_t r = waitpid(_pid, &st, flags);
    if (r == 0) return false;  // WNOHANG: still running
    _status = r == _pid && WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    _pid = -1;
    if (_pidfd >= 0) close(_pidfd);
    _pidfd = -1;
    return true;
}

bool child_process::wait_for(int ms) {
    if (_pid <= 0) return true;
    if (_pidfd >= 0) {
        pollfd p{_pidfd, POLLIN, 0};
        while (poll(&p, 1, ms) < 0 && errno == EINTR) {
        }
        return reap(WNOHANG);
    }
    for (int waited = 0;; waited += 10) {
        if (reap(WNOHANG)) return true;
        if (waited >= ms) return false;
        sleep_ms(10);
    }
}

std::vector<std::string> log_file::lines() const {
    std::vector<std::string> v;
    if (f == nullptr) return v;
    std::rewind(f);
    char line[1024];
    while (std::fgets(line, sizeof line, f) != nullptr) {
        std::string s(line);
        while (!s.empty() && (s.back() == '\n' || s.back() == '\r')) s.pop_back();
        v.push_back(std::move(s));
    }
    return v;
}

void log_file::dump(const char* who) const {
    for (const std::string& s : lines()) std::fprintf(stderr, "  %s: %s\n", who, s.c_str());
}

}  // namespace am::bench
