// SPDX-License-Identifier: MIT
#include "shm_transport.hpp"

#include "../ring/params.hpp"
#include "../ring/region.hpp"
#include "shm_region.hpp"

#include <am/error.hpp>

#include <fcntl.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

namespace am::transport::shm {
namespace {

constexpr const char* env_fd = "AM_SHM_FD";
constexpr const char* env_rank = "AM_RANK";

std::atomic<int> g_interrupted{0};  // async-signal flag of the launcher process only
extern "C" void on_signal(int sig) {
    g_interrupted.store(sig);
}

// The launcher turns SIGINT/SIGTERM into an orderly job abort, and ignores SIGPIPE: with its
// stderr a closed pipe, its report fails instead of killing it before the job is wound up.
// Installed after the ranks are forked, so they keep the dispositions the launcher had.
class signal_guard {
  public:
    signal_guard() {
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &_int);
        sigaction(SIGTERM, &sa, &_term);
        sa.sa_handler = SIG_IGN;
        sigaction(SIGPIPE, &sa, &_pipe);
    }
    ~signal_guard() {
        sigaction(SIGINT, &_int, nullptr);
        sigaction(SIGTERM, &_term, nullptr);
        sigaction(SIGPIPE, &_pipe, nullptr);
    }
    signal_guard(const signal_guard&) = delete;
    signal_guard& operator=(const signal_guard&) = delete;

  private:
    struct sigaction _int {
    }, _term{}, _pipe{};
};

std::string describe_exit(int rank, pid_t pid, int status, bool finished) {
    std::string who = "rank " + std::to_string(rank) + " (pid " + std::to_string(pid) + ")";
    if (WIFSIGNALED(status)) {
        const int sig = WTERMSIG(status);
        return who + " was killed by signal " + std::to_string(sig) + " (" + strsignal(sig) + ")";
    }
    const int code = WEXITSTATUS(status);
    if (!finished) {
        return who + " exited with status " + std::to_string(code) + " before finishing am::run";
    }
    return who + " exited with status " + std::to_string(code);
}

/// Waits for every rank; on the first failure marks the job failed, then kills stragglers.
int supervise(std::byte* base, const std::vector<pid_t>& pids) {
    ring::region reg(base);
    std::vector<bool> done(pids.size(), false);
    std::size_t remaining = pids.size();
    int job_status = 0;
    using clock = std::chrono::steady_clock;
    clock::time_point kill_at = clock::time_point::max();
    while (remaining != 0) {
        int st = 0;
        const pid_t p = waitpid(-1, &st, WNOHANG);
        if (p > 0) {
            std::size_t r = 0;
            while (r < pids.size() && pids[r] != p) ++r;
            if (r == pids.size()) continue;
            done[r] = true;
            --remaining;
            const bool finished = reg.info(static_cast<int>(r)).state.load() ==
                                  static_cast<std::uint32_t>(ring::rank_state::finished);
            if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && finished) {
                // Ranks still waiting for it in a collective learn it can never join.
                reg.info(static_cast<int>(r))
                    .state.store(static_cast<std::uint32_t>(ring::rank_state::exited));
                continue;
            }
            const std::string why = describe_exit(static_cast<int>(r), p, st, finished);
            if (job_status == 0) {
                job_status = WIFEXITED(st) && WEXITSTATUS(st) != 0 ? WEXITSTATUS(st) : 1;
                reg.fail(why);  // keeps the reason of a rank that failed the job itself
                std::fprintf(stderr, "am: job aborted: %s\n", reg.reason().c_str());
                kill_at = clock::now() + std::chrono::seconds(kill_grace_seconds);
            }
            continue;
        }
        if (const int sig = g_interrupted.exchange(0); sig != 0 && job_status == 0) {
            job_status = 128 + sig;
            reg.fail(std::string("launcher received signal ") + strsignal(sig));
            kill_at = clock::now() + std::chrono::seconds(kill_grace_seconds);
        }
        if (clock::now() >= kill_at) {
            for (std::size_t r = 0; r < pids.size(); ++r) {
                if (!done[r]) kill(pids[r], SIGKILL);
            }
        }
        usleep(1000);
    }
    return job_status;
}

void become_rank_child(pid_t launcher) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // the job cannot outlive its launcher
    if (getppid() != launcher) _exit(1);
}

/// Runs `body` as `rank` of the region at `base`. With `after_all_arrive`, the run starts only
/// once every rank has come this far.
int run_rank(std::byte* base, int rank, std::uint64_t faults, const rank_body& body,
             bool after_all_arrive) {
    ring::region(base).info(rank).pid.store(getpid());
    ring::ring_transport tp(base, rank);
    tp.ranks_are_processes();
    if (faults != 0) tp.set_faults(faults * 0x9e3779b97f4a7c15ull + static_cast<unsigned>(rank));
    // A region that serves several runs: a rank may still be waiting in the previous run's
    // closing barrier, which may poll once more after it was released, and would hand this
    // run's messages to the previous run's handlers. Nothing is in flight between runs (each
    // ends with quiescence), so this wait need not poll.
    if (after_all_arrive) tp.barrier(coll::start_of_run, {});
    return body(tp);
}

}  // namespace

bool launched_as_rank() {
    return std::getenv(env_fd) != nullptr;
}

int run_launched_rank(const rank_body& body) {
    const char* fd_text = std::getenv(env_fd);
    const char* rank_text = std::getenv(env_rank);
    if (rank_text == nullptr) {
        throw error(errc::invalid_argument, "am::run: AM_SHM_FD is set but AM_RANK is not");
    }
    char* end = nullptr;
    const long fd = std::strtol(fd_text, &end, 10);
    // The descriptor stays open for this process's next am::run, but programs it starts do not
    // inherit it (their AM_SHM_FD then names no region and am::run reports it).
    if (*fd_text == '\0' || *end != '\0' || fd < 0 || fd > std::numeric_limits<int>::max() ||
        fcntl(static_cast<int>(fd), F_SETFD, FD_CLOEXEC) != 0) {
        throw error(errc::invalid_argument, std::string("am::run: AM_SHM_FD=") + fd_text +
                                                " is not an open descriptor of a job region");
    }
    const mapped_region mapping(static_cast<int>(fd));
    std::byte* bytes = mapping.data();
    const int rank = std::atoi(rank_text);
    const int ranks = ring::region(bytes).ranks();
    if (rank < 0 || rank >= ranks) {
        throw error(errc::invalid_argument, std::string("am::run: AM_RANK=") + rank_text +
                                                " is outside [0, " + std::to_string(ranks) + ")");
    }
    return run_rank(bytes, rank, 0, body, true);
}

namespace {

/// Creates the region, forks `cfg.ranks` children that each run `child(shm, rank)` (which
/// never returns), and supervises them. The region has no name: the children inherit its
/// mapping, or its descriptor across exec, and it is freed when the last of them is gone.
int start_and_supervise(const config& cfg, const std::function<void(shared_region&, int)>& child) {
    shared_region shm(ring::params_for(cfg), sharing::by_fd);
    std::fflush(nullptr);  // children must not re-print buffered output
    const pid_t launcher = getpid();
    std::vector<pid_t> pids;
    for (int r = 0; r < cfg.ranks; ++r) {
        const pid_t pid = fork();
        if (pid < 0) {
            ring::region(shm.data()).fail("fork failed");
            break;
        }
        if (pid == 0) {
            become_rank_child(launcher);
            child(shm, r);
            _exit(1);  // not reached: `child` exits
        }
        pids.push_back(pid);
    }
    signal_guard guard;
    const int status = supervise(shm.data(), pids);
    return pids.size() == static_cast<std::size_t>(cfg.ranks) ? status : 1;
}

}  // namespace

int launch(const config& cfg, const rank_body& body) {
    return start_and_supervise(cfg, [&](shared_region& shm, int r) {
        int status = 1;
        try {
            status = run_rank(shm.data(), r, cfg.faults, body, false);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "am: rank %d: %s\n", r, e.what());
        }
        std::fflush(nullptr);
        _exit(status);
    });
}

int launch_exec(const config& cfg, char* const* argv) {
    return start_and_supervise(cfg, [&](shared_region& shm, int r) {
        // Only this child's copy of the descriptor loses close-on-exec.
        if (fcntl(shm.fd(), F_SETFD, 0) != 0) {
            std::fprintf(stderr, "amrun: rank %d: fcntl: %s\n", r, std::strerror(errno));
            _exit(127);
        }
        setenv(env_fd, std::to_string(shm.fd()).c_str(), 1);
        setenv(env_rank, std::to_string(r).c_str(), 1);
        setenv("AM_RANKS", std::to_string(cfg.ranks).c_str(), 1);
        setenv("AM_TRANSPORT", "shm", 1);
        execvp(argv[0], argv);
        std::fprintf(stderr, "amrun: cannot execute %s: %s\n", argv[0], std::strerror(errno));
        _exit(127);
    });
}

}  // namespace am::transport::shm
