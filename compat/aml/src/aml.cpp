// SPDX-License-Identifier: MIT
// AML on am (docs/aml.md). One `am::mpi_session` on MPI_COMM_WORLD per process and one am
// medium handler: `aml_send` appends a record [u32 length, u32 type, payload, padding to 8
// bytes] to the destination's buffer; a full buffer (at most `ctx.max_medium()` bytes), and
// every buffer at `aml_barrier`, leaves as one medium message whose handler runs the AML
// handler of each record in order.
//
// The AML API has no handle, so its state is one per process (a global here, in compat/aml
// only; the am core keeps none). Every entry point catches what am throws: no exception may
// unwind through the program's C frames, and any failure brings the job down naming the rank.
#include "aml.h"

#include <am/context.hpp>
#include <am/error.hpp>
#include <am/mpi.hpp>

#include <sched.h>

#include <array>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <span>
#include <string>
#include <thread>
#include <vector>

namespace {

using aml_handler = void (*)(int, void*, int);

struct record_header {
    std::uint32_t length;
    std::uint32_t type;
};
constexpr std::size_t header_bytes = sizeof(record_header);
static_assert(header_bytes == 8);

constexpr std::size_t padded(std::size_t n) noexcept {
    return (n + 7) & ~std::size_t{7};
}

/// Messages waiting for one destination.
struct out_buffer {
    std::unique_ptr<std::byte[]> data;  // allocated on the first send to the destination
    std::size_t used = 0;
};

class aml_state {
  public:
    explicit aml_state(const am::config& cfg);
    ~aml_state() {
        if (_comm != MPI_COMM_NULL) MPI_Comm_free(&_comm);
    }
    aml_state(const aml_state&) = delete;
    aml_state& operator=(const aml_state&) = delete;

    [[nodiscard]] int rank() const noexcept { return _me; }
    [[nodiscard]] int size() const noexcept { return _n; }

    void send(const void* src, int type, int length, int node);
    void barrier();
    void register_handler(aml_handler f, int n);
    void finish();
    /// Runs the AML handler of every record of a batch that arrived from `from`.
    void deliver(int from, std::span<const std::byte> batch);

    /// Brings the job down naming `call` and this rank.
    [[noreturn]] void misuse(const char* call, const std::string& what) noexcept;

  private:
    void run_handler(std::uint32_t type, int from, void* data, int length) {
        ++_depth;
        _handlers[type](from, data, length);
        --_depth;
    }
    void make_room(int node, std::size_t need);
    void flush(int node);
    void flush_all();
    [[nodiscard]] bool any_buffered() const noexcept;
    std::unique_ptr<std::byte[]> take_buffer();
    void check_collective(const char* call);
    void wait_quietly(MPI_Request& r);
    [[noreturn]] void bad_send(const void* src, int type, int length, int node);

    am::mpi_session _session;
    am::context& _ctx;
    MPI_Comm _comm = MPI_COMM_NULL;  // the barrier's "anything left?" reduction
    int _me;
    int _n;
    std::size_t _capacity;  // bytes per buffer: one medium message
    am::handler<am::category::medium> _wire;
    std::array<aml_handler, AML_MAX_HANDLERS> _handlers{};
    std::vector<out_buffer> _out;
    std::vector<std::unique_ptr<std::byte[]>> _spare;
    int _depth = 0;  // handlers running (they nest: a self-send runs its handler at once)
};

aml_state* state = nullptr;

// A failure with no AML job to bring down (called before aml_init, or after aml_finalize).
[[noreturn]] void abort_world(const char* call, const char* what) noexcept {
    int initialized = 0, finalized = 0, rank = -1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    std::fprintf(stderr, "aml: %s: rank %d: %s\n", call, rank, what);
    std::fflush(nullptr);
    if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);
}

// The am handler of every AML batch (named, so AM_STATS=1 reports it by name).
void aml_batch(am::token& t, std::span<const std::byte> batch) {
    state->deliver(t.source(), batch);
}

aml_state& current(const char* call) {
    if (state == nullptr) [[unlikely]]
        abort_world(call, "AML is not initialised (call aml_init first)");
    return *state;
}

aml_state::aml_state(const am::config& cfg)
    : _session(MPI_COMM_WORLD, cfg),
      _ctx(_session.ctx()),
      _me(_ctx.rank()),
      _n(_ctx.size()),
      _capacity(_ctx.max_medium()),
      _out(static_cast<std::size_t>(_n)) {
    try {
        if (_capacity < header_bytes + AML_MAX_PAYLOAD) {
            const std::string have = std::to_string(_capacity);
            const std::string need = std::to_string(header_bytes + AML_MAX_PAYLOAD);
            throw am::error(am::errc::too_large,
                            "aml_init: rank " + std::to_string(_me) + ": am's largest medium " +
                                "message is " + have + " bytes, an AML message of " +
                                std::to_string(AML_MAX_PAYLOAD) + " bytes needs " + need +
                                " (raise AM_MAX_MEDIUM or AM_RING_BYTES)");
        }
        state = this;  // aml_batch finds the state from here on
        _wire = _ctx.handler<&aml_batch>();
        MPI_Comm_dup(MPI_COMM_WORLD, &_comm);
        _ctx.barrier();  // every rank has the handler before anyone sends
    } catch (...) {
        _session.fail(std::current_exception());
    }
}

void aml_state::misuse(const char* call, const std::string& what) noexcept {
    try {
        _session.fail(std::make_exception_ptr(
            am::error(am::errc::invalid_argument,
                      std::string(call) + ": rank " + std::to_string(_me) + ": " + what)));
    } catch (...) {
        abort_world(call, what.c_str());
    }
}

void aml_state::bad_send(const void* src, int type, int length, int node) {
    if (type < 0 || type >= AML_MAX_HANDLERS) {
        misuse("aml_send", "message type " + std::to_string(type) + " outside 0.." +
                               std::to_string(AML_MAX_HANDLERS - 1));
    }
    if (node < 0 || node >= _n) {
        misuse("aml_send", "destination node " + std::to_string(node) + " outside 0.." +
                               std::to_string(_n - 1) + " (aml_n_pes() is " + std::to_string(_n) +
                               ")");
    }
    if (length < 0 || length > AML_MAX_PAYLOAD) {
        misuse("aml_send", "payload of " + std::to_string(length) + " bytes outside 0.." +
                               std::to_string(AML_MAX_PAYLOAD) + " (AML_MAX_PAYLOAD)");
    }
    if (src == nullptr) {
        misuse("aml_send", "null payload pointer for " + std::to_string(length) + " bytes");
    }
    misuse("aml_send", "no handler registered for message type " + std::to_string(type) +
                           " (aml_register_handler)");
}

void aml_state::send(const void* src, int type, int length, int node) {
    if (static_cast<unsigned>(type) >= AML_MAX_HANDLERS ||
        static_cast<unsigned>(node) >= static_cast<unsigned>(_n) ||
        static_cast<unsigned>(length) > AML_MAX_PAYLOAD || _handlers[type] == nullptr ||
        (src == nullptr && length != 0)) [[unlikely]] {
        bad_send(src, type, length, node);
    }
    if (node == _me) {
        // AML runs a message to oneself at once, on the caller's buffer.
        run_handler(static_cast<std::uint32_t>(type), _me, const_cast<void*>(src), length);
        return;
    }
    const auto len = static_cast<std::size_t>(length);
    const std::size_t need = header_bytes + padded(len);
    out_buffer* b = &_out[static_cast<std::size_t>(node)];
    if (b->used + need > _capacity || b->data == nullptr) [[unlikely]] {
        make_room(node, need);
    }
    std::byte* at = b->data.get() + b->used;
    const record_header h{static_cast<std::uint32_t>(length), static_cast<std::uint32_t>(type)};
    std::memcpy(at, &h, header_bytes);
    if (len != 0) std::memcpy(at + header_bytes, src, len);
    b->used += need;
}

// Sends the destination's buffer until `need` bytes fit: sending polls, and the handlers it
// runs may append to the fresh buffer.
void aml_state::make_room(int node, std::size_t need) {
    out_buffer& b = _out[static_cast<std::size_t>(node)];
    try {
        if (b.data == nullptr) b.data = take_buffer();
        while (b.used + need > _capacity) flush(node);
    } catch (...) {
        _session.fail(std::current_exception());
    }
}

std::unique_ptr<std::byte[]> aml_state::take_buffer() {
    if (_spare.empty()) return std::make_unique_for_overwrite<std::byte[]>(_capacity);
    auto b = std::move(_spare.back());
    _spare.pop_back();
    return b;
}

// The buffer is swapped out before the send: handlers that run while it leaves fill the
// fresh one.
void aml_state::flush(int node) {
    out_buffer& b = _out[static_cast<std::size_t>(node)];
    if (b.used == 0) return;
    std::unique_ptr<std::byte[]> full = std::move(b.data);
    const std::size_t used = b.used;
    b.data = take_buffer();
    b.used = 0;
    _ctx.request(node, _wire, std::span<const std::byte>(full.get(), used));
    _spare.push_back(std::move(full));
}

void aml_state::flush_all() {
    for (int i = 1; i < _n; ++i) flush((_me + i) % _n);
}

bool aml_state::any_buffered() const noexcept {
    for (const out_buffer& b : _out) {
        if (b.used != 0) return true;
    }
    return false;
}

void aml_state::deliver(int from, std::span<const std::byte> batch) {
    std::size_t at = 0;
    while (at < batch.size()) {
        record_header h{};
        if (batch.size() - at < header_bytes) [[unlikely]] {
            misuse("aml (handling a message)", "truncated batch from rank " + std::to_string(from));
        }
        std::memcpy(&h, batch.data() + at, header_bytes);
        at += header_bytes;
        if (h.type >= AML_MAX_HANDLERS || h.length > batch.size() - at ||
            _handlers[h.type] == nullptr) [[unlikely]] {
            misuse("aml (handling a message)", "message of type " + std::to_string(h.type) +
                                                   " and " + std::to_string(h.length) +
                                                   " bytes from rank " + std::to_string(from) +
                                                   " has no handler here");
        }
        // The payload lives in am's receive buffer for the duration of the handler.
        auto* data = const_cast<std::byte*>(batch.data() + at);
        run_handler(h.type, from, data, static_cast<int>(h.length));
        at += padded(h.length);
    }
}

void aml_state::check_collective(const char* call) {
    if (_depth != 0) {
        misuse(call,
               "called from a handler (handlers may only call aml_send, aml_my_pe and "
               "aml_n_pes)");
    }
}

// Waits for a collective on `_comm` without polling am, so no handler runs meanwhile (see
// `barrier`); backs off to yields and short sleeps so oversubscribed ranks still progress.
void aml_state::wait_quietly(MPI_Request& r) {
    for (unsigned round = 0;; ++round) {
        int done = 0;
        if (MPI_Test(&r, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            throw am::error(am::errc::system, "aml: rank " + std::to_string(_me) +
                                                  ": MPI_Test failed in an AML collective");
        }
        if (done) return;
        if (round < 64) continue;
        if (round < 2048) {
            sched_yield();
        } else {
            std::this_thread::sleep_for(std::chrono::microseconds(20));
        }
    }
}

// Rounds of (flush every buffer, am quiescence) until no rank has anything buffered: the
// quiescence handles every message in flight, nested am sends included, but handlers that
// run during it append to AML's buffers, which only a further round sends.
//
// The closing reduction does not poll am: a rank that leaves the barrier first cannot have
// its next messages handled by a rank still inside it (whose handlers would then see the next
// phase's messages before the program reset its state after the barrier, as the Graph500
// kernels do). No rank can be sending to one waiting there: every rank has quiesced.
void aml_state::barrier() {
    check_collective("aml_barrier");
    try {
        for (;;) {
            flush_all();
            _ctx.quiesce();
            int mine = any_buffered() ? 1 : 0, any = 0;
            MPI_Request r = MPI_REQUEST_NULL;
            MPI_Iallreduce(&mine, &any, 1, MPI_INT, MPI_LOR, _comm, &r);
            wait_quietly(r);
            if (any == 0) return;
        }
    } catch (...) {
        _session.fail(std::current_exception());
    }
}

void aml_state::register_handler(aml_handler f, int n) {
    check_collective("aml_register_handler");
    if (n < 0 || n >= AML_MAX_HANDLERS) {
        misuse("aml_register_handler", "handler id " + std::to_string(n) + " outside 0.." +
                                           std::to_string(AML_MAX_HANDLERS - 1));
    }
    barrier();  // messages sent before reach the previous handler
    _handlers[static_cast<std::size_t>(n)] = f;
    // Nobody sends with the new handler before every rank has it; not polling, so no message
    // of the new phase is handled before this call returns (see `barrier`).
    try {
        MPI_Request r = MPI_REQUEST_NULL;
        MPI_Ibarrier(_comm, &r);
        wait_quietly(r);
    } catch (...) {
        _session.fail(std::current_exception());
    }
}

void aml_state::finish() {
    check_collective("aml_finalize");
    barrier();
    _session.finish();
}

}  // namespace

extern "C" {

int aml_init(int* argc, char*** argv) {
    if (state != nullptr) abort_world("aml_init", "called twice");
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
        const int rc = MPI_Init(argc, argv);
        if (rc != MPI_SUCCESS) return rc;
    }
    try {
        am::config cfg = am::config::from_env();
        // AML handlers run only inside AML calls of the program's thread: no progress thread.
        cfg.progress_thread = false;
        cfg.thread_multiple = false;
        state = new aml_state(cfg);  // (the constructor set it already, for aml_batch)
    } catch (const std::exception& e) {
        abort_world("aml_init", e.what());
    }
    return 0;
}

void aml_finalize(void) {
    aml_state& s = current("aml_finalize");
    s.finish();
    delete state;
    state = nullptr;
    MPI_Barrier(MPI_COMM_WORLD);
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Finalize();
}

void aml_barrier(void) {
    current("aml_barrier").barrier();
}

void aml_register_handler(void (*f)(int from, void* data, int nbytes), int n) {
    current("aml_register_handler").register_handler(f, n);
}

void aml_send(void* src, int type, int length, int node) {
    current("aml_send").send(src, type, length, node);
}

int aml_my_pe(void) {
    if (state != nullptr) return state->rank();
    int initialized = 0, finalized = 0, rank = 0;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    return rank;
}

int aml_n_pes(void) {
    if (state != nullptr) return state->size();
    int initialized = 0, finalized = 0, size = 1;
    MPI_Initialized(&initialized);
    MPI_Finalized(&finalized);
    if (initialized && !finalized) MPI_Comm_size(MPI_COMM_WORLD, &size);
    return size;
}

}  // extern "C"
