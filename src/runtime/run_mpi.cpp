// SPDX-License-Identifier: MIT
// am::mpi_session and am::run on an MPI communicator (include/am/mpi.hpp). `run` is a session
// around the rank function: the set-up, the teardown and the failure path exist once.
#include "../transport/mpi/mpi_transport.hpp"
#include "rank_session.hpp"

#include <am/mpi.hpp>

#include <cstdio>
#include <cstdlib>
#include <exception>
#include <optional>
#include <string>

namespace am {

struct mpi_session::state {
    config cfg;
    transport::mpi::job job;
    std::optional<detail::rank_session> rank;

    state(MPI_Comm comm, const config& c) : cfg(c), job(comm, cfg) {}
};

namespace {

config mpi_config(const config& cfg) {
    config c = cfg;
    if (c.transport != transport_kind::ucx) c.transport = transport_kind::mpi;
    return c;
}

// Ends the MPI job when no am job is left to end (the session finished, or failed to fail).
[[noreturn]] void abort_world() noexcept {
    std::fflush(nullptr);
    int initialized = 0, finalized = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
}

}  // namespace

mpi_session::mpi_session(MPI_Comm comm, const config& cfg)
    : _s(std::make_unique<state>(comm, mpi_config(cfg))), _uncaught(std::uncaught_exceptions()) {
    // From here on the transport exists: a failure brings the job down, as in `run`.
    try {
        _s->rank.emplace(_s->job.tp(), _s->cfg);
    } catch (...) {
        fail(std::current_exception());
    }
}

mpi_session::mpi_session(MPI_Comm comm) : mpi_session(comm, config::from_env()) {}

mpi_session::~mpi_session() {
    if (_s == nullptr) return;
    if (std::uncaught_exceptions() > _uncaught) {
        fail("an exception left the scope of its am::mpi_session");
    }
    finish();
}

context& mpi_session::ctx() const {
    if (_s == nullptr || !_s->rank) {
        throw error(errc::bad_context, "am::mpi_session::ctx: the session has finished");
    }
    return _s->rank->ctx();
}

void mpi_session::finish() {
    if (_s == nullptr) return;
    try {
        _s->rank->finish();
        _s->rank.reset();
        _s->job.finish(0);  // aborts the job if it failed meanwhile
    } catch (...) {
        fail(std::current_exception());
    }
    _s.reset();
}

void mpi_session::fail(const std::exception_ptr& failure) noexcept {
    if (_s == nullptr) {  // finished: no job left to bring down
        try {
            std::rethrow_exception(failure);
        } catch (const std::exception& e) {
            std::fprintf(stderr, "am: %s\n", e.what());
        } catch (...) {
            std::fprintf(stderr, "am: unknown exception after am::mpi_session::finish\n");
        }
        abort_world();
    }
    detail::rank_failed(_s->job.tp(), failure);
    if (_s->rank) _s->rank->stop_progress();
    _s->job.finish(1);  // MPI_Abort: does not return
    std::_Exit(1);
}

void mpi_session::fail(std::string_view reason) noexcept {
    try {
        fail(std::make_exception_ptr(error(errc::invalid_argument, std::string(reason))));
    } catch (...) {
        std::fprintf(stderr, "am: %.*s\n", static_cast<int>(reason.size()), reason.data());
        abort_world();
    }
}

int run(MPI_Comm comm, const config& cfg, const rank_main& fn) {
    std::optional<mpi_session> session;
    try {
        session.emplace(comm, cfg);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "am: %s\n", e.what());
        return 1;
    }
    try {
        fn(session->ctx());
    } catch (...) {
        session->fail(std::current_exception());
    }
    session->finish();
    return 0;
}

int run(MPI_Comm comm, const rank_main& fn) {
    config cfg;
    try {
        cfg = config::from_env();
    } catch (const std::exception& e) {
        std::fprintf(stderr, "am: %s\n", e.what());
        return 1;
    }
    return run(comm, cfg, fn);
}

}  // namespace am
