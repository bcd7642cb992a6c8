// SPDX-License-Identifier: MIT
#include "shm_transport.hpp"

#include "../ring/params.hpp"
#include "../ring/region.hpp"
#include "shm_region.hpp"

#include <am/error.hpp>

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
#include <string>
#include <vector>

namespace am::transport::shm {
namespace {

constexpr const char* env_name = "AM_SHM_NAME";
constexpr const char* env_rank = "AM_RANK";

std::atomic<int> g_interrupted{0};  // async-signal flag of the launcher process only
extern "C" void on_signal(int sig) {
    g_interrupted.store(sig);
}

class signal_guard {  // the launcher turns SIGINT/SIGTERM into an orderly job abort
  public:
    signal_guard() {
        struct sigaction sa {};
        sa.sa_handler = on_signal;
        sigemptyset(&sa.sa_mask);
        sigaction(SIGINT, &sa, &_int);
        sigaction(SIGTERM, &sa, &_term);
    }
    ~signal_guard() {
        sigaction(SIGINT, &_int, nullptr);
        sigaction(SIGTERM, &_term, nullptr);
    }
    signal_guard(const signal_guard&) = delete;
    signal_guard& operator=(const signal_guard&) = delete;

  private:
    struct sigaction _int {
    }, _term{};
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
int supervise(shared_region& shm, const std::vector<pid_t>& pids) {
    ring::region reg(shm.data());
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
            if (WIFEXITED(st) && WEXITSTATUS(st) == 0 && finished) continue;
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
        bool all_attached = true;
        for (std::size_t r = 0; r < pids.size(); ++r) {
            all_attached = all_attached && (done[r] || reg.info(static_cast<int>(r)).state != 0);
        }
        if (all_attached) shm.unlink();  // nothing is left in /dev/shm whatever happens next
        usleep(1000);
    }
    return job_status;
}

void become_rank_child(pid_t launcher) {
    prctl(PR_SET_PDEATHSIG, SIGKILL);  // the job cannot outlive its launcher
    if (getppid() != launcher) _exit(1);
}

int run_rank(std::byte* base, int rank, std::uint64_t faults, const rank_body& body) {
    ring::region(base).info(rank).pid.store(getpid());
    ring::ring_transport tp(base, rank);
    if (faults != 0) tp.set_faults(faults * 0x9e3779b97f4a7c15ull + static_cast<unsigned>(rank));
    return body(tp);
}

}  // namespace

bool launched_as_rank() {
    return std::getenv(env_name) != nullptr;
}

int run_launched_rank(const rank_body& body) {
    const char* name = std::getenv(env_name);
    const char* rank_text = std::getenv(env_rank);
    if (rank_text == nullptr) {
        throw error(errc::invalid_argument, "am::run: AM_SHM_NAME is set but AM_RANK is not");
    }
    const mapped_region mapping(name);
    std::byte* bytes = mapping.data();
    const int rank = std::atoi(rank_text);
    const int ranks = ring::region(bytes).ranks();
    if (rank < 0 || rank >= ranks) {
        throw error(errc::invalid_argument, std::string("am::run: AM_RANK=") + rank_text +
                                                " is outside [0, " + std::to_string(ranks) + ")");
    }
    return run_rank(bytes, rank, 0, body);
}

namespace {

/// Creates the region, forks `cfg.ranks` children that each run `child(shm, rank)` (which
/// never returns), and supervises them. When the children inherit the mapping (they do not
/// exec), the name is unlinked at once; otherwise `supervise` unlinks it once all attached.
int start_and_supervise(const config& cfg, const std::function<void(shared_region&, int)>& child,
                        bool children_inherit_mapping) {
    shared_region shm(ring::params_for(cfg));
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
    if (children_inherit_mapping) shm.unlink();
    signal_guard guard;
    const int status = supervise(shm, pids);
    return pids.size() == static_cast<std::size_t>(cfg.ranks) ? status : 1;
}

}  // namespace

int launch(const config& cfg, const rank_body& body) {
    return start_and_supervise(
        cfg,
        [&](shared_region& shm, int r) {
            int status = 1;
            try {
                status = run_rank(shm.data(), r, cfg.faults, body);
            } catch (const std::exception& e) {
                std::fprintf(stderr, "am: rank %d: %s\n", r, e.what());
            }
            std::fflush(nullptr);
            _exit(status);
        },
        true);
}

int launch_exec(const config& cfg, char* const* argv) {
    return start_and_supervise(
        cfg,
        [&](shared_region& shm, int r) {
            setenv(env_name, shm.name().c_str(), 1);
            setenv(env_rank, std::to_string(r).c_str(), 1);
            setenv("AM_RANKS", std::to_string(cfg.ranks).c_str(), 1);
            setenv("AM_TRANSPORT", "shm", 1);
            execvp(argv[0], argv);
            std::fprintf(stderr, "amrun: cannot execute %s: %s\n", argv[0], std::strerror(errno));
            _exit(127);
        },
        false);
}

}  // namespace am::transport::shm
