// SPDX-License-Identifier: MIT
#include "baseline.hpp"

#include "sys.hpp"

#include <am/config.hpp>

#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <string_view>

#ifndef AM_BENCH_MPI_BASELINE
#define AM_BENCH_MPI_BASELINE ""
#endif
#ifndef AM_BENCH_MPI_RMA_BASELINE
#define AM_BENCH_MPI_RMA_BASELINE ""
#endif
#ifndef AM_BENCH_MPI_TYPED_BASELINE
#define AM_BENCH_MPI_TYPED_BASELINE ""
#endif
#ifndef AM_BENCH_MPIEXEC
#define AM_BENCH_MPIEXEC "mpirun"
#endif
#ifndef AM_BENCH_MPI_FLAVOR  // the build's MPI (cmake/am_mpi.cmake): openmpi, mpich or other
#define AM_BENCH_MPI_FLAVOR ""
#endif

namespace am::bench {
namespace {

bool is_file(const std::string& p) {
    return !p.empty() && access(p.c_str(), X_OK) == 0;
}

const char* program_name(mpi_program p) {
    switch (p) {
        case mpi_program::rma:
            return "mpi_rma_baseline";
        case mpi_program::typed:
            return "mpi_typed_baseline";
        default:
            return "mpi_baseline";
    }
}

// Where the build put the program ("" without MPI).
const char* built_path(mpi_program p) {
    switch (p) {
        case mpi_program::rma:
            return AM_BENCH_MPI_RMA_BASELINE;
        case mpi_program::typed:
            return AM_BENCH_MPI_TYPED_BASELINE;
        default:
            return AM_BENCH_MPI_BASELINE;
    }
}

// The program's path: where the build put it, else next to this executable.
std::string program_path(mpi_program p) {
    const std::string built = built_path(p);
    if (built.empty()) return {};
    if (is_file(built)) return built;
    std::string dir = self_path();
    if (dir.empty()) return {};
    dir.resize(dir.rfind('/') + 1);
    const std::string next_to_us = dir + program_name(p);
    return is_file(next_to_us) ? next_to_us : std::string{};
}

// True for the variables by which an MPI launcher tells a process about its job: a child that
// inherited them would take itself for a rank of that job instead of starting its own.
bool launcher_variable(std::string_view name) {
    for (std::string_view p :
         {"PMIX_", "PMI_", "OPAL_", "ORTE_", "HYDRA_", "HYDI_", "MPIR_", "MPI_LOCAL"}) {
        if (name.starts_with(p)) return true;
    }
    if (!name.starts_with("OMPI_")) return false;
    if (name.starts_with("OMPI_ALLOW_RUN_AS_ROOT")) return false;
    if (!name.starts_with("OMPI_MCA_")) return true;  // OMPI_COMM_WORLD_RANK, OMPI_FILE_...
    // MCA parameters: the user's own settings (e.g. btl_vader_*) are kept; these are mpirun's.
    const std::string_view mca = name.substr(9);
    for (std::string_view p : {"orte_", "ess", "pmix", "initial_wdir", "mpi_oversubscribe",
                               "mpi_yield_when_idle", "shmem_RUNTIME_QUERY_hint"}) {
        if (mca.starts_with(p)) return true;
    }
    return false;
}

// In a child of an MPI rank: forget the job and the rank's core binding.
void leave_mpi_job() {
    std::vector<std::string> drop;
    for (char** e = environ; *e != nullptr; ++e) {
        const std::string_view entry(*e);
        const std::string_view name = entry.substr(0, entry.find('='));
        if (launcher_variable(name)) drop.emplace_back(name);
    }
    for (const std::string& name : drop) unsetenv(name.c_str());
    cpu_set_t all;
    CPU_ZERO(&all);
    const long n = sysconf(_SC_NPROCESSORS_CONF);
    for (long c = 0; c < n && c < CPU_SETSIZE; ++c) CPU_SET(static_cast<int>(c), &all);
    sched_setaffinity(0, sizeof all, &all);  // the kernel keeps only the cores we may use
}

[[noreturn]] void exec_child(int out_fd, std::vector<std::string>& argv,
                             const std::vector<std::string>& env) {
    dup2(out_fd, STDOUT_FILENO);
    close(out_fd);
    if (am::launched_by_mpi()) leave_mpi_job();
    if (geteuid() == 0 && launcher_is_open_mpi()) {  // it refuses root unless told twice
        setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 1);
        setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 1);
    }
    exec_with_env(argv, env, "bench");
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
                     const std::vector<std::string>& args, reporter& rep, int ranks, bool bind) {
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
    std::vector<std::string> argv = mpirun_command(o, ranks, bind);
    argv.push_back(exe);
    argv.push_back(mode);
    argv.insert(argv.end(), args.begin(), args.end());
    argv.push_back("--json");
    const child_outcome c = run_collecting(argv, {}, rep);
    if (c.status != 0 || c.results == 0) {
        std::fprintf(stderr,
                     "bench: NO MPI BASELINE: '%s -n %d ... %s %s' failed (status %d, %d "
                     "results); am figures are not compared\n",
                     argv[0].c_str(), ranks, exe.c_str(), mode.c_str(), c.status, c.results);
        return false;
    }
    return true;
}

std::vector<std::string> mpirun_command(const options& o, int ranks, bool bind) {
    int cores = usable_cores();
    if (am::launched_by_mpi()) {  // this rank is bound; the child gets every core
        cores = static_cast<int>(sysconf(_SC_NPROCESSORS_ONLN));
    }
    std::vector<std::string> argv = {o.mpirun.empty() ? AM_BENCH_MPIEXEC : o.mpirun, "-n",
                                     std::to_string(ranks)};
    // Open MPI's mpirun and MPICH's Hydra both take these; only Open MPI needs to be told
    // that it may start more processes than cores.
    const bool one_each = bind && ranks <= cores;
    argv.insert(argv.end(), {"--bind-to", one_each ? "core" : "none", "--map-by", "core"});
    if (ranks > cores && launcher_is_open_mpi()) argv.push_back("--oversubscribe");
    return argv;
}

bool launcher_is_open_mpi() {
    return std::string_view(AM_BENCH_MPI_FLAVOR) == "openmpi";
}

child_outcome run_collecting(std::vector<std::string> argv, const std::vector<std::string>& env,
                             reporter& rep) {
    std::fflush(nullptr);
    int fds[2];
    if (pipe(fds) != 0) {
        std::perror("bench: pipe");
        return {-1, 0};
    }
    const pid_t pid = fork();
    if (pid < 0) {
        std::perror("bench: fork");
        close(fds[0]);
        close(fds[1]);
        return {-1, 0};
    }
    if (pid == 0) {
        close(fds[0]);
        exec_child(fds[1], argv, env);
    }
    close(fds[1]);
    const int count = read_results(fds[0], rep);
    int status = 0;
    waitpid(pid, &status, 0);
    return {WIFEXITED(status) ? WEXITSTATUS(status) : -1, count};
}

std::string self_path() {
    char self[4096];
    const ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (n <= 0) return {};
    return std::string(self, static_cast<std::size_t>(n));
}

}  // namespace am::bench
