// SPDX-License-Identifier: MIT
#include "baseline.hpp"

#include "sys.hpp"

#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#ifndef AM_BENCH_MPI_BASELINE
#define AM_BENCH_MPI_BASELINE ""
#endif
#ifndef AM_BENCH_MPI_RMA_BASELINE
#define AM_BENCH_MPI_RMA_BASELINE ""
#endif
#ifndef AM_BENCH_MPIEXEC
#define AM_BENCH_MPIEXEC "mpirun"
#endif

namespace am::bench {
namespace {

bool is_file(const std::string& p) {
    return !p.empty() && access(p.c_str(), X_OK) == 0;
}

const char* program_name(mpi_program p) {
    return p == mpi_program::rma ? "mpi_rma_baseline" : "mpi_baseline";
}

// The program's path: where the build put it, else next to this executable.
std::string program_path(mpi_program p) {
    const std::string built =
        p == mpi_program::rma ? AM_BENCH_MPI_RMA_BASELINE : AM_BENCH_MPI_BASELINE;
    if (built.empty()) return {};
    if (is_file(built)) return built;
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return {};
    std::string dir(self, static_cast<std::size_t>(n));
    dir.resize(dir.rfind('/') + 1);
    const std::string next_to_us = dir + program_name(p);
    return is_file(next_to_us) ? next_to_us : std::string{};
}

[[noreturn]] void exec_child(int out_fd, std::vector<std::string>& argv) {
    dup2(out_fd, STDOUT_FILENO);
    close(out_fd);
    if (geteuid() == 0) {  // Open MPI refuses root unless told twice
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    std::vector<char*> args;
    for (std::string& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    std::fprintf(stderr, "bench: cannot run %s: %s\n", args[0], std::strerror(errno));
    _exit(127);
}

// Reads the child's stdout: result lines go to the reporter, anything else to stderr.
int read_results(int fd, reporter& rep) {
    std::FILE* in = fdopen(fd, "r");
    int count = 0;
    char line[4096];
    while (std::fgets(line, sizeof line, in) != nullptr) {
        if (const std::optional<result> r = from_json(line)) {
            rep.add(*r);
            ++count;
        } else {
            std::fputs(line, stderr);
        }
    }
    std::fclose(in);
    return count;
}

}  // namespace

std::vector<std::string> forwarded_options(const options& o) {
    std::vector<std::string> a = {"--reps", std::to_string(o.reps), "--window",
                                  std::to_string(o.window)};
    if (o.iters != 0) a.insert(a.end(), {"--iters", std::to_string(o.iters)});
    if (o.warmup != 0) a.insert(a.end(), {"--warmup", std::to_string(o.warmup)});
    return a;
}

bool run_mpi_baseline(const options& o, const std::string& mode,
                      const std::vector<std::string>& args, reporter& rep) {
    return run_mpi_program(o, mpi_program::baseline, mode, args, rep);
}

bool run_mpi_program(const options& o, mpi_program program, const std::string& mode,
                     const std::vector<std::string>& args, reporter& rep) {
    const std::string exe = program_path(program);
    if (exe.empty()) {
        static bool said = false;  // once per process, not once per round
        if (!said) {
            std::fprintf(stderr,
                         "bench: NO MPI BASELINE: %s was not built (MPI not found at "
                         "configure time, or -DAM_WITH_MPI=OFF); am figures are not compared\n",
                         program_name(program));
        }
        said = true;
        return false;
    }
    const bool few_cores = usable_cores() < 2;
    std::vector<std::string> argv = {o.mpirun.empty() ? AM_BENCH_MPIEXEC : o.mpirun,
                                     "-n",
                                     "2",
                                     "--bind-to",
                                     few_cores ? "none" : "core",
                                     "--map-by",
                                     "core"};
    if (few_cores) argv.push_back("--oversubscribe");
    argv.push_back(exe);
    argv.push_back(mode);
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--json");

    std::fflush(nullptr);
    int fds[2];
    if (pipe(fds) != 0) {
        std::perror("bench: pipe");
        return false;
    }
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("bench: fork");
        return false;
    }
    if (pid == 0) {
        close(fds[0]);
        exec_child(fds[1], argv);
    }
    close(fds[1]);
    const int count = read_results(fds[0], rep);
    int status = 0;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || count == 0) {
        std::fprintf(stderr,
                     "bench: NO MPI BASELINE: '%s ... %s %s' failed (status %d, %d results); "
                     "am figures are not compared\n",
                     argv[0].c_str(), exe.c_str(), mode.c_str(),
                     WIFEXITED(status) ? WEXITSTATUS(status) : -1, count);
        return false;
    }
    return true;
}

}  // namespace am::bench
