// SPDX-License-Identifier: MIT
#include <am/config.hpp>
#include <am/error.hpp>

#include "trace.hpp"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

namespace am {
namespace {

std::size_t parse_size(const char* name, const char* text) {
    // Accepts a decimal count with an optional K, M or G suffix (powers of two).
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(text, &end, 10);
    std::size_t shift = 0;
    if (end != text && *end != '\0') {
        switch (*end) {
            case 'k':
            case 'K':
                shift = 10;
                break;
            case 'm':
            case 'M':
                shift = 20;
                break;
            case 'g':
            case 'G':
                shift = 30;
                break;
            default:
                shift = 64;
        }
        if (shift != 64 && end[1] != '\0' && !(end[1] == 'i' || end[1] == 'B')) shift = 64;
    }
    if (end == text || errno != 0 || shift == 64 || text[0] == '-') {
        throw error(errc::invalid_argument, std::string("am::config::from_env: ") + name + "=\"" +
                                                text + "\" is not a size (e.g. 4096, 64K, 1M)");
    }
    return static_cast<std::size_t>(v) << shift;
}

bool parse_bool(const char* name, const char* text) {
    const std::string t = text;
    if (t == "1" || t == "yes" || t == "true" || t == "on") return true;
    if (t == "0" || t == "no" || t == "false" || t == "off" || t.empty()) return false;
    throw error(errc::invalid_argument, std::string("am::config::from_env: ") + name + "=\"" +
                                            text + "\" is not a boolean (0 or 1)");
}

double parse_heartbeat(const char* text) {
    const std::string t = text;
    if (t == "auto") return -1;
    if (t == "off" || t == "0") return 0;
    char* end = nullptr;
    const double s = std::strtod(text, &end);
    if (end == text || *end != '\0' || !(s >= 1) || s > 3600) {
        throw error(errc::invalid_argument,
                    "am::config::from_env: AM_HEARTBEAT=\"" + t +
                        "\" is not auto, off, 0 or a number of seconds in [1, 3600]");
    }
    return s;
}

}  // namespace

std::size_t detail::trace_max_events_from_env() {
    const char* v = std::getenv("AM_TRACE_MAX_EVENTS");
    if (v == nullptr) return default_trace_max_events;
    const std::size_t n = parse_size("AM_TRACE_MAX_EVENTS", v);
    if (n == 0) {
        throw error(errc::invalid_argument,
                    "am::config::from_env: AM_TRACE_MAX_EVENTS=0: the cap on trace events per "
                    "rank is at least 1");
    }
    return n;
}

bool launched_by_mpi() noexcept {
    // Open MPI, MPICH/Hydra and Slurm (PMI-1/2), PMIx (Open MPI 5, srun --mpi=pmix).
    for (const char* v : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK", "MPI_LOCALNRANKS"}) {
        if (std::getenv(v) != nullptr) return true;
    }
    return false;
}

config config::from_env() {
    config c;
    if (const char* v = std::getenv("AM_RANKS")) {
        const std::size_t n = parse_size("AM_RANKS", v);
        if (n < 1 || n > 4096) {
            throw error(errc::invalid_argument, std::string("am::config::from_env: AM_RANKS=") + v +
                                                    " is outside [1, 4096]");
        }
        c.ranks = static_cast<int>(n);
    }
    if (const char* v = std::getenv("AM_TRANSPORT")) {
        const std::string t = v;
        if (t == "threads") {
            c.transport = transport_kind::threads;
        } else if (t == "shm") {
            c.transport = transport_kind::shm;
        } else if (t == "mpi") {
            c.transport = transport_kind::mpi;
        } else if (t == "ucx") {
            c.transport = transport_kind::ucx;
        } else {
            throw error(errc::invalid_argument, "am::config::from_env: AM_TRANSPORT=\"" + t +
                                                    "\" is not one of threads, shm, mpi, ucx");
        }
    } else if (launched_by_mpi()) {
        c.transport = transport_kind::mpi;
    }
    if (const char* v = std::getenv("AM_NODE_SIZE")) {
        const std::size_t n = parse_size("AM_NODE_SIZE", v);
        if (n > 1u << 20) {
            throw error(errc::invalid_argument,
                        std::string("am::config::from_env: AM_NODE_SIZE=") + v + " is too large");
        }
        c.node_size = static_cast<int>(n);
    }
    if (const char* v = std::getenv("AM_HEARTBEAT")) c.heartbeat = parse_heartbeat(v);
    if (const char* v = std::getenv("AM_HEARTBEAT_IF")) c.heartbeat_if = v;
    if (const char* v = std::getenv("AM_RING_BYTES")) c.ring_bytes = parse_size("AM_RING_BYTES", v);
    if (const char* v = std::getenv("AM_SEGMENT_BYTES")) {
        c.segment_bytes = parse_size("AM_SEGMENT_BYTES", v);
    }
    if (const char* v = std::getenv("AM_MAX_MEDIUM")) c.max_medium = parse_size("AM_MAX_MEDIUM", v);
    if (const char* v = std::getenv("AM_MAX_PAYLOAD")) {
        c.max_payload = parse_size("AM_MAX_PAYLOAD", v);
    }
    if (const char* v = std::getenv("AM_PROGRESS_THREAD")) {
        c.progress_thread = parse_bool("AM_PROGRESS_THREAD", v);
    }
    if (const char* v = std::getenv("AM_STATS")) c.print_stats = parse_bool("AM_STATS", v);
    if (const char* v = std::getenv("AM_TRACE")) c.trace_path = v;
    if (std::getenv("AM_TRACE_MAX_EVENTS") != nullptr) {
        c.trace_max_events = detail::trace_max_events_from_env();
    }
    if (const char* v = std::getenv("AM_RMA")) {
        const std::string t = v;
        if (t == "auto") {
            c.rma = rma_path::automatic;
        } else if (t == "am") {
            c.rma = rma_path::am;
        } else {
            throw error(errc::invalid_argument,
                        "am::config::from_env: AM_RMA=\"" + t + "\" is not one of auto, am");
        }
    }
    if (const char* v = std::getenv("AM_THREAD_MULTIPLE")) {
        c.thread_multiple = parse_bool("AM_THREAD_MULTIPLE", v);
    }
    if (const char* v = std::getenv("AM_EPOCH_TIMEOUT")) {
        char* end = nullptr;
        const double s = std::strtod(v, &end);
        if (end == v || *end != '\0' || !(s >= 0) || s > 1e9) {
            throw error(errc::invalid_argument,
                        std::string("am::config::from_env: AM_EPOCH_TIMEOUT=\"") + v +
                            "\" is not a number of seconds >= 0");
        }
        c.epoch_timeout = s;
    }
    if (const char* v = std::getenv("AM_FAULTS")) c.faults = parse_size("AM_FAULTS", v);
    if (const char* v = std::getenv("AM_EAGER_BYTES")) {
        c.eager_bytes = parse_size("AM_EAGER_BYTES", v);
    }
    if (const char* v = std::getenv("AM_OAM_STACK_BYTES")) {
        c.oam_stack_bytes = parse_size("AM_OAM_STACK_BYTES", v);
    }
    if (const char* v = std::getenv("AM_OAM_HANG_SECONDS")) {
        char* end = nullptr;
        const double s = std::strtod(v, &end);
        if (end == v || *end != '\0' || !(s >= 0) || s > 1e9) {
            throw error(errc::invalid_argument,
                        std::string("am::config::from_env: AM_OAM_HANG_SECONDS=\"") + v +
                            "\" is not a number of seconds >= 0");
        }
        c.oam_hang_seconds = s;
    }
    if (const char* v = std::getenv("AM_OAM_MAX_THREADS")) {
        c.oam_max_threads = parse_size("AM_OAM_MAX_THREADS", v);
    }
    return c;
}

}  // namespace am
