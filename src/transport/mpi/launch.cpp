// SPDX-License-Identifier: MIT
// An mpi job from start to end: creating it (communicators, node, transport), finishing it,
// and the ways it fails (a failed rank aborts the MPI job; exit() while it is open fails it).
#include "liveness_setup.hpp"
#include "mpi_transport.hpp"
#include "mpi_transport_impl.hpp"
#include "setup.hpp"
#ifdef AM_HAVE_UCX
#include "../ucx/ucx_transport.hpp"
#endif

#include <sys/types.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace am::transport::mpi {

// ------------------------------------------------------------------------- failing a job

void mpi_transport::fail_job(std::string_view reason) noexcept {
    const bool first = !job_failed();
    _ring.fail_job(reason);
    if (!first) return;
    try {
        tell_remote_peers(failure_reason());
    } catch (...) {
        // The peers then learn of the failure from MPI_Abort.
    }
}

void mpi_transport::tell_remote_peers(const std::string& text) noexcept {
    try {
        std::unique_lock<std::mutex> lock;
        if (!lock_within(lock, std::chrono::milliseconds(200))) return;
        for (int r = 0; r < size(); ++r) {
            if (_node.local_of[static_cast<std::size_t>(r)] >= 0) continue;
            buffer b = take_buffer(text.size());
            std::memcpy(b.get(), text.data(), text.size());
            isend(std::move(b), text.size(), r, tag_fail, _comm);
        }
    } catch (...) {
        // The peers then learn of the failure from MPI_Abort (or their own watchdogs).
    }
}

// A peer sent what the protocol does not allow (eager_format.hpp): a bug or memory corruption
// on its side, after which nothing it sends can be trusted. Called without `_mutex` held.
void mpi_transport::malformed(int source, const std::string& what) {
    const std::string reason = "rank " + std::to_string(rank()) +
                               ": malformed MPI message from rank " + std::to_string(source) +
                               " (" + what + ")";
    fail_job(reason);
    throw error(errc::aborted, reason);
}

void mpi_transport::end_job(int status, bool progress) noexcept {
    // Let the failure messages leave (and the peers print what happened), then end the job:
    // an MPI job cannot go on with a rank missing, and MPI_Abort is bounded.
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(1500);
    while (progress && std::chrono::steady_clock::now() < until) {
        try {
            std::unique_lock<std::mutex> lock;
            if (lock_within(lock, std::chrono::milliseconds(10))) {
                progress_sends();
                if (_sreq.empty()) break;
            }
        } catch (...) {
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    std::fflush(nullptr);
    // On MPI_COMM_WORLD, not the job's communicator: Open MPI ends the whole job either way,
    // but MPICH, aborting another communicator, ends only this process and its launcher
    // leaves the others waiting for it.
    const int code = (status & 0xff) != 0 ? status : 1;  // exit(256) would end with 0
    MPI_Abort(MPI_COMM_WORLD, code);
    std::_Exit(code);
}

void mpi_transport::exit_job(int status) noexcept {
    char reason[128];
    std::snprintf(reason, sizeof reason, "rank %d called exit(%d) before finishing am::run", rank(),
                  status);
    std::fprintf(stderr, "am: %s\n", reason);
    // Below MPI_THREAD_SERIALIZED (no lock) only the job's thread may call MPI; another
    // thread raises the node's flag and goes straight to MPI_Abort, which has to do.
    const bool may_call_mpi = _locking || std::this_thread::get_id() == _owner;
    if (may_call_mpi) {
        fail_job(reason);
    } else {
        _ring.fail_job(reason);
    }
    end_job(status, may_call_mpi);
}

// ------------------------------------------------------------ exit() while a job is open
//
// A rank that calls exit() while its job is open (in the rank function, in a handler, on any
// thread) leaves its peers waiting in am for it, and itself in MPI_Finalize at exit
// (`finalize_at_exit` in setup.cpp, when am initialised MPI), which waits for them: the job
// would hang. A hook run by exit() fails the job instead, as a throw does. exit() ends the
// process and an exit handler cannot be withdrawn, so the hook is registered once per process
// and the record of open jobs it reads is process-wide: an MPI process is one rank, with one
// open job at a time (include/am/mpi.hpp; the list tolerates more). Constant-initialised and
// trivially destructible, the record outlives every exit handler.

namespace {

/// An entry of the record: an open job of this process.
struct open_job {
    mpi_transport* tp = nullptr;
    pid_t pid = 0;
    open_job* next = nullptr;
};

std::mutex g_open_mutex;     // exit() may be called from any thread
open_job* g_open = nullptr;  // newest first
std::once_flag g_hook_once;

extern "C" void fail_open_job_at_exit(int status, void* /*unused*/) {
    // Held until the process ends: the job's thread cannot tear the transport down meanwhile.
    // Nobody holds it for long: a job opening or closing, or another exit() ending the job.
    std::lock_guard<std::mutex> lock(g_open_mutex);
    // A process forked by a rank inherits the record, not the job.
    if (g_open == nullptr || g_open->pid != getpid()) return;
    for (const open_job* j = g_open->next; j != nullptr; j = j->next) {
        j->tp->fail_job("another am job of its process was ended by exit()");
    }
    g_open->tp->exit_job(status);
}

/// Records `tp` as open (in `entry`, which outlives the record) until `record_closed`. The
/// hook is registered after MPI_Init and `finalize_at_exit` (exit handlers run in reverse
/// order of registration), so exit() runs it before them.
void record_open(open_job& entry, mpi_transport& tp) {
    std::call_once(g_hook_once, [] {
        if (on_exit(fail_open_job_at_exit, nullptr) != 0) {
            throw error(errc::system, "am::run: mpi transport: on_exit failed");
        }
    });
    std::lock_guard<std::mutex> lock(g_open_mutex);
    entry = open_job{&tp, getpid(), g_open};
    g_open = &entry;
}

void record_closed(open_job& entry) noexcept {
    std::lock_guard<std::mutex> lock(g_open_mutex);
    for (open_job** p = &g_open; *p != nullptr; p = &(*p)->next) {
        if (*p == &entry) {
            *p = entry.next;
            break;
        }
    }
    entry.tp = nullptr;
}

}  // namespace

// --------------------------------------------------------------------------------- the job

struct job::state {
    MPI_Comm comm = MPI_COMM_NULL;
    MPI_Comm data = MPI_COMM_NULL;
    node nd;  // outlives the transport, which works in its region
    std::unique_ptr<mpi_transport> tp;
    std::unique_ptr<transport> ucx;  // the ucx transport over `tp`, when the job is ucx
    std::unique_ptr<liveness> live;  // heartbeats, when on; raises failures into `tp`
    open_job open;  // in the process's record from the transport's creation to `finish`

    state() = default;
    state(const state&) = delete;
    state& operator=(const state&) = delete;
    ~state() {
        if (open.tp != nullptr) record_closed(open);
        live.reset();  // its thread uses the transport
        ucx.reset();
        tp.reset();
        if (data != MPI_COMM_NULL) MPI_Comm_free(&data);
        if (comm != MPI_COMM_NULL) MPI_Comm_free(&comm);
    }
};

namespace {

// The ucx transport over the job's mpi transport: the peers off the node through UCX, which
// leaves MPI only failures and collectives, so it is polled rarely.
std::unique_ptr<transport> start_ucx(mpi_transport& tp, MPI_Comm comm,
                                     [[maybe_unused]] bool locking) {
#ifdef AM_HAVE_UCX
    constexpr unsigned mpi_every_under_ucx =
        4;  // as with node peers: a peer's failure notice is not late
    tp.set_mpi_every(mpi_every_under_ucx);
    return ucx::make(tp, comm, locking);
#else
    (void)tp;
    int rank = 0;
    MPI_Comm_rank(comm, &rank);
    throw error(errc::invalid_argument,
                "am::run: rank " + std::to_string(rank) +
                    ": AM_TRANSPORT=ucx, but am was built without UCX (libucx-dev, found by "
                    "pkg-config as ucx when the build is configured)");
#endif
}

}  // namespace

job::job(MPI_Comm user, const config& cfg) : _s(std::make_unique<state>()) {
    const bool locking = cfg.progress_thread || cfg.thread_multiple;
    ensure_initialized(locking);
    check(MPI_Comm_dup(user, &_s->comm), "MPI_Comm_dup");
    check(MPI_Comm_dup(user, &_s->data), "MPI_Comm_dup");
    MPI_Comm_set_errhandler(_s->comm, MPI_ERRORS_ARE_FATAL);
    MPI_Comm_set_errhandler(_s->data, MPI_ERRORS_ARE_FATAL);
    int rank = 0, size = 1;
    MPI_Comm_rank(_s->comm, &rank);
    MPI_Comm_size(_s->comm, &size);
    make_node(_s->comm, cfg, rank, size, _s->nd);
    _s->tp = std::make_unique<mpi_transport>(_s->comm, _s->data, rank, size, _s->nd, locking);
    // The largest message a peer may send, to check its announcements against: a medium one
    // (max_message(), which differs with node sizes) or a long one carrying a whole segment
    // inline (its header, arguments and trailer are far below max_message()).
    const std::uint64_t mine = _s->tp->max_message() + _s->tp->segment(rank).size();
    std::uint64_t largest = 0;
    check(MPI_Allreduce(&mine, &largest, 1, MPI_UINT64_T, MPI_MAX, _s->comm), "MPI_Allreduce");
    _s->tp->set_largest_message(largest);
    if (cfg.transport == transport_kind::ucx) _s->ucx = start_ucx(*_s->tp, _s->comm, locking);
    mpi_transport* tp = _s->tp.get();
    _s->live = start_liveness(
        _s->comm, cfg, rank, size, _s->nd,
        liveness_hooks{[tp](const std::string& why) { tp->fail_from_watchdog(why); },
                       [tp] { return tp->job_failed(); }, [tp] { return tp->failure_reason(); }});
    record_open(_s->open, *_s->tp);
}

job::~job() = default;

transport& job::tp() noexcept {
    if (_s->ucx) return *_s->ucx;
    return *_s->tp;
}

void job::finish(int status) {
    if (!_s) return;
    if (status != 0 || _s->tp->job_failed()) _s->tp->abort_job(status);
    try {
        if (_s->ucx) {
#ifdef AM_HAVE_UCX
            ucx::finish(*_s->ucx);
#endif
            _s->ucx.reset();
        }
        _s->tp->finish();
        // Stops the heartbeats with a "bye" to the neighbours: one still finishing must not
        // take the silence that follows for a loss.
        if (_s->live) _s->live->stop(true);
    } catch (const error& e) {
        if (!_s->tp->job_failed()) throw;
        // The drain met a malformed message (and failed the job): end it as any failed job.
        std::fprintf(stderr, "am: %s\n", e.what());
        _s->tp->abort_job(1);
    }
    record_closed(_s->open);  // exit() works as without am from here on
    _s.reset();               // the transport, the node's memory, then the communicators
}

int launch_on(MPI_Comm user, const config& cfg, const rank_body& body) {
    job j(user, cfg);
    const int status = body(j.tp());
    j.finish(status);
    return status;
}

int launch(const config& cfg, const rank_body& body) {
    return launch_on(MPI_COMM_WORLD, cfg, body);
}

}  // namespace am::transport::mpi
