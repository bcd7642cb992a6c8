// SPDX-License-Identifier: MIT
// The MPIX_AM functions: ops, their registration on windows, the trigger, attached buffers.
#include "datatype.hpp"
#include "pmpi.hpp"
#include "state.hpp"

#include <am/error.hpp>

#include <dlfcn.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <thread>

namespace am::mpix {
namespace {

// The MPI_User_function of an MPIX op: such an op stands for an AM user function and is not a
// reduction.
void not_a_reduction(void*, void*, int*, MPI_Datatype*) {
    std::fprintf(stderr,
                 "MPIX_Am: rank %d: an MPI_Op made by MPIX_Am_op_create was used in a reduction "
                 "or accumulate; it stands for an active-message function and works only with "
                 "MPIX_Am\n",
                 world_rank());
    std::fflush(stderr);
    // Give the launcher time to forward the message: MPI_Abort kills the other processes (and,
    // with MPICH's Hydra, may cut this one's stderr) at once.
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

// A name of `fn` equal in every process of one program and different for different
// functions: its module's file name and its offset in the module (raw addresses differ between
// processes under ASLR), with the symbol's name when known.
std::string function_name(MPIX_Am_user_function* fn) {
    Dl_info info{};
    // dladdr takes a data pointer; POSIX guarantees the conversion for function pointers.
    if (dladdr(reinterpret_cast<void*>(fn), &info) == 0 || info.dli_fbase == nullptr) {
        throw am::error(am::errc::invalid_argument,
                        "MPIX_Am_win_op_register: rank " + std::to_string(world_rank()) +
                            ": the function of the op is in no loaded module (dladdr failed)");
    }
    std::string module = info.dli_fname != nullptr ? info.dli_fname : "";
    module = module.substr(module.find_last_of('/') + 1);
    const auto offset = reinterpret_cast<std::uintptr_t>(reinterpret_cast<void*>(fn)) -
                        reinterpret_cast<std::uintptr_t>(info.dli_fbase);
    char hex[32];
    std::snprintf(hex, sizeof hex, "+0x%zx", static_cast<std::size_t>(offset));
    std::string name = "MPIX op " + module + hex;
    if (info.dli_sname != nullptr) name += std::string(" (") + info.dli_sname + ")";
    return name;
}

// The am tag of an AM: the codes of the target's input, persistent and output datatypes.
std::uint64_t make_tag(std::uint8_t in, std::uint8_t persistent, std::uint8_t out) noexcept {
    return std::uint64_t{in} | (std::uint64_t{persistent} << 8) | (std::uint64_t{out} << 16);
}

int count_of(std::size_t bytes, std::uint8_t code) noexcept {
    const std::size_t b = code_bytes(code);
    return b == 0 ? 0 : static_cast<int>(bytes / b);
}

// The am operation that calls `fn` with the target's MPI datatypes and element counts.
am::window_fn adapt(MPIX_Am_user_function* fn) {
    return [fn](const am::window_call& c) {
        const auto in = static_cast<std::uint8_t>(c.tag & 0xff);
        const auto p = static_cast<std::uint8_t>((c.tag >> 8) & 0xff);
        const auto out = static_cast<std::uint8_t>((c.tag >> 16) & 0xff);
        fn(const_cast<std::byte*>(c.input), count_of(c.input_segment_bytes, in), type_of_code(in),
           c.persistent, count_of(c.persistent_bytes, p), type_of_code(p), c.output,
           count_of(c.output_segment_bytes, out), type_of_code(out),
           static_cast<int>(c.num_segments), static_cast<int>(c.segment_offset));
    };
}

struct am_error {
    int error_class;
    std::string what;
};

[[noreturn]] void refuse(int error_class, const std::string& what) {
    throw am_error{error_class, what};
}

// The code of a target datatype, or refuse naming the argument.
std::uint8_t target_code(MPI_Datatype t, const char* arg) {
    const std::uint8_t code = type_code(t);
    if (code == 0) {
        refuse(MPI_ERR_TYPE, std::string(arg) + " is " + type_name(t) +
                                 ": target datatypes must be predefined, non-pair types (the "
                                 "target rebuilds the handle in its own process)");
    }
    return code;
}

// The byte layout of `count` x `type` per segment, checked against N x `target` elements;
// `base` moves to the lowest byte when the datatype has a negative lower bound.
am::detail::byte_layout origin_layout(const void*& base, int count, MPI_Datatype type,
                                      MPI_Datatype target, const char* what) {
    const flat_type flat = flatten(type, count);
    if (signature_multiple(flat, target) < 0) {
        refuse(MPI_ERR_TYPE, std::string("the type signature of origin_") + what +
                                 "_segment_count (" + std::to_string(count) + ") x origin_" + what +
                                 "_segment_datatype (" + type_name(type) +
                                 ") is not a whole number of target_" + what +
                                 "_segment_datatype (" + type_name(target) + ")");
    }
    if (flat.extent < 0) refuse(MPI_ERR_TYPE, std::string("origin ") + what + " extent < 0");
    const std::ptrdiff_t shift = flat.min_offset();
    base = static_cast<const std::byte*>(base) + shift;
    am::detail::byte_layout l;
    l.extent = static_cast<std::size_t>(flat.extent);
    for (const flat_type::block& b : flat.blocks) {
        l.blocks.push_back({static_cast<std::size_t>(b.offset - shift), b.bytes});
    }
    if (flat.size > 0 && l.extent == 0) l.extent = 1;  // one segment only is meaningful then
    return l;
}

struct am_args {
    const void* in;
    int in_count;
    MPI_Datatype in_type;
    void* out;
    int out_count;
    MPI_Datatype out_type;
    int num_segments, target;
    MPI_Datatype t_in;
    MPI_Aint disp;
    int p_count;
    MPI_Datatype t_p, t_out;
};

void check_counts(const am_args& a, const win_entry& e) {
    if (a.in_count < 0 || a.out_count < 0 || a.num_segments < 0 || a.p_count < 0) {
        refuse(MPI_ERR_COUNT, "negative count (input " + std::to_string(a.in_count) + ", output " +
                                  std::to_string(a.out_count) + ", segments " +
                                  std::to_string(a.num_segments) + ", persistent " +
                                  std::to_string(a.p_count) + ")");
    }
    if (a.disp < 0)
        refuse(MPI_ERR_DISP, "negative target_persistent_disp " + std::to_string(a.disp));
    const int n = static_cast<int>(e.disp_units.size());
    if (a.target < 0 || a.target >= n) {
        refuse(MPI_ERR_RANK, "target_rank " + std::to_string(a.target) + " outside [0, " +
                                 std::to_string(n) + ")");
    }
    if (!e.in_epoch(a.target)) {
        refuse(MPI_ERR_RMA_SYNC, "no access epoch to rank " + std::to_string(a.target) +
                                     " is open on this window (MPI_Win_fence, MPI_Win_lock or "
                                     "MPI_Win_lock_all first)");
    }
}

am::am_desc describe(const am_args& a, const win_entry& e, std::uint32_t op) {
    check_counts(a, e);
    const std::uint8_t in = target_code(a.t_in, "target_input_segment_datatype");
    const std::uint8_t p = target_code(a.t_p, "target_persistent_datatype");
    const std::uint8_t out = target_code(a.t_out, "target_output_segment_datatype");
    am::am_desc d;
    d.op = op;
    d.target = a.target;
    const void* in_base = a.in;
    d.input_layout = origin_layout(in_base, a.in_count, a.in_type, a.t_in, "input");
    d.input = static_cast<const std::byte*>(in_base);
    const void* out_base = a.out;
    d.output_layout = origin_layout(out_base, a.out_count, a.out_type, a.t_out, "output");
    d.output = static_cast<std::byte*>(const_cast<void*>(out_base));
    d.num_segments = static_cast<std::size_t>(a.num_segments);
    const auto unit = static_cast<std::size_t>(e.disp_units[static_cast<std::size_t>(a.target)]);
    d.persistent_disp = static_cast<std::size_t>(a.disp) * unit;
    d.persistent_bytes = static_cast<std::size_t>(a.p_count) * code_bytes(p);
    const std::size_t size = e.window->size_of(a.target);
    if (d.persistent_disp > size || d.persistent_bytes > size - d.persistent_disp) {
        refuse(MPI_ERR_RMA_RANGE, "persistent range [" + std::to_string(d.persistent_disp) + ", " +
                                      std::to_string(d.persistent_disp + d.persistent_bytes) +
                                      ") bytes is outside "
                                      "rank " +
                                      std::to_string(a.target) + "'s window of " +
                                      std::to_string(size) + " bytes");
    }
    d.tag = make_tag(in, p, out);
    d.input_elem = code_bytes(in);
    d.output_elem = code_bytes(out);
    return d;
}

std::shared_ptr<win_entry> am_window(MPI_Win win) {
    auto e = state().find_window(win);
    if (!e) {
        refuse(MPI_ERR_WIN,
               "not an AM window (only windows of MPI_Win_create and "
               "MPI_Win_allocate on a communicator congruent to MPI_COMM_WORLD are)");
    }
    return e;
}

// Runs `f` and turns what it throws into an MPI error class reported on `win`.
template <class F>
int guarded(MPI_Win win, const char* call, F&& f) {
    const inside guard;
    try {
        f();
        return MPI_SUCCESS;
    } catch (const am_error& e) {
        return fail({state().find_window(win) ? win : MPI_WIN_NULL, MPI_COMM_WORLD}, e.error_class,
                    call, e.what);
    } catch (...) {
        return fail_current({state().find_window(win) ? win : MPI_WIN_NULL, MPI_COMM_WORLD}, call);
    }
}

}  // namespace
}  // namespace am::mpix

using am::mpix::guarded;
using am::mpix::refuse;
using am::mpix::state;

extern "C" {

int MPIX_Am_op_create(MPIX_Am_user_function* fn, MPI_Op* op) {
    am::mpix::wrappers_anchor();
    return guarded(MPI_WIN_NULL, "MPIX_Am_op_create", [&] {
        if (fn == nullptr || op == nullptr) refuse(MPI_ERR_ARG, "fn or op is NULL");
        const int rc = MPI_Op_create(&am::mpix::not_a_reduction, 0, op);
        if (rc != MPI_SUCCESS) refuse(rc, "MPI_Op_create failed");
        state().add_op(*op, fn);
    });
}

int MPIX_Am_op_free(MPI_Op* op) {
    return guarded(MPI_WIN_NULL, "MPIX_Am_op_free", [&] {
        if (op == nullptr || !state().remove_op(*op)) {
            refuse(MPI_ERR_OP, "the op was not made by MPIX_Am_op_create");
        }
        MPI_Op_free(op);
    });
}

int MPIX_Am_win_op_register(MPI_Op op, MPI_Win win) {
    return guarded(win, "MPIX_Am_win_op_register", [&] {
        MPIX_Am_user_function* fn = state().find_op(op);
        if (fn == nullptr) refuse(MPI_ERR_OP, "the op was not made by MPIX_Am_op_create");
        auto e = am::mpix::am_window(win);
        if (e->op_index(op)) return;
        const std::uint32_t index = e->window->register_bytes(
            am::mpix::function_name(fn), "MPIX_Am_user_function", am::mpix::adapt(fn));
        e->ops.emplace_back(op, index);
        // No process returns before every process has the op: an AM sent at once must not
        // reach a process still inside the registration (where am does not know the op yet).
        // Registration is collective over MPI_COMM_WORLD's processes, so this barrier is in
        // the same order everywhere.
        PMPI_Barrier(MPI_COMM_WORLD);
    });
}

int MPIX_Am(const void* origin_input_addr, int origin_input_segment_count,
            MPI_Datatype origin_input_segment_datatype, void* origin_output_addr,
            int origin_output_segment_count, MPI_Datatype origin_output_segment_datatype,
            int num_segments, int target_rank, MPI_Datatype target_input_segment_datatype,
            MPI_Aint target_persistent_disp, int target_persistent_count,
            MPI_Datatype target_persistent_datatype, MPI_Datatype target_output_segment_datatype,
            MPI_Op am_op, MPI_Win win) {
    const am::mpix::am_args a{origin_input_addr,
                              origin_input_segment_count,
                              origin_input_segment_datatype,
                              origin_output_addr,
                              origin_output_segment_count,
                              origin_output_segment_datatype,
                              num_segments,
                              target_rank,
                              target_input_segment_datatype,
                              target_persistent_disp,
                              target_persistent_count,
                              target_persistent_datatype,
                              target_output_segment_datatype};
    return guarded(win, "MPIX_Am", [&] {
        auto e = am::mpix::am_window(win);
        const auto op = e->op_index(am_op);
        if (!op) {
            refuse(MPI_ERR_OP,
                   "the op is not registered on this window "
                   "(MPIX_Am_win_op_register)");
        }
        e->window->am_bytes(am::mpix::describe(a, *e, *op));
    });
}

int MPIX_Am_win_buffer_attach(MPI_Win win, void* buffer, MPI_Aint size) {
    return guarded(win, "MPIX_Am_win_buffer_attach", [&] {
        auto e = am::mpix::am_window(win);
        if (buffer == nullptr || size <= 0) refuse(MPI_ERR_ARG, "NULL or empty buffer");
        if (e->attached != nullptr) refuse(MPI_ERR_BUFFER, "a buffer is attached already");
        // am stages at 16-byte alignment: use the buffer from its first aligned byte.
        const auto addr = reinterpret_cast<std::uintptr_t>(buffer);
        const std::uintptr_t skip = (16 - addr % 16) % 16;
        if (static_cast<std::uintptr_t>(size) <= skip) {
            refuse(MPI_ERR_ARG,
                   "buffer of " + std::to_string(size) + " bytes has no 16-byte aligned byte");
        }
        e->window->attach(
            {static_cast<std::byte*>(buffer) + skip, static_cast<std::size_t>(size) - skip});
        e->attached = buffer;
        e->attached_size = size;
    });
}

int MPIX_Am_win_buffer_detach(MPI_Win win, void** buffer, MPI_Aint* size) {
    return guarded(win, "MPIX_Am_win_buffer_detach", [&] {
        auto e = am::mpix::am_window(win);
        if (buffer == nullptr || size == nullptr) refuse(MPI_ERR_ARG, "buffer or size is NULL");
        e->window->detach();
        *buffer = e->attached;
        *size = e->attached_size;
        e->attached = nullptr;
        e->attached_size = 0;
    });
}

}  // extern "C"
