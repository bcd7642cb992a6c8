// SPDX-License-Identifier: MIT
#include "windows.hpp"

#include <am/error.hpp>

#include <algorithm>
#include <array>
#include <charconv>
#include <optional>
#include <span>

namespace am::mpix {
namespace {

std::optional<std::string> info_value(MPI_Info info, const char* key) {
    if (info == MPI_INFO_NULL) return std::nullopt;
    int len = 0, flag = 0;
    MPI_Info_get_valuelen(info, key, &len, &flag);
    if (!flag) return std::nullopt;
    std::string v(static_cast<std::size_t>(len) + 1, '\0');
    MPI_Info_get(info, key, len + 1, v.data(), &flag);
    v.resize(static_cast<std::size_t>(len));
    return v;
}

std::size_t parse_count(const std::string& v, const char* key, const char* call) {
    std::size_t n = 0;
    const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
    if (ec != std::errc{} || end != v.data() + v.size() || v.empty()) {
        throw am::error(am::errc::invalid_argument, std::string(call) + ": rank " +
                                                        std::to_string(world_rank()) +
                                                        ": info key " + key + ": \"" + v +
                                                        "\" is not a non-negative decimal number");
    }
    return n;
}

// Whether `ok` holds on every process of `comm` (a local failure must not leave the others
// waiting in a collective creation).
bool all_agree(MPI_Comm comm, std::array<int, 2>& ok) {
    std::array<int, 2> all{};
    PMPI_Allreduce(ok.data(), all.data(), 2, MPI_INT, MPI_MIN, comm);
    const bool mine = ok[0] != 0;
    ok = all;
    return mine;
}

// The am side of a new MPI window `win` over `memory`: gathers the disp_units, creates the am
// window (collective) and records it.
void attach_am_window(MPI_Win win, std::span<std::byte> memory, int disp_unit,
                      const am::window_info& info, MPI_Comm comm,
                      std::optional<global_ptr<std::byte>> block) {
    am::context& ctx = state().ctx();
    auto e = std::make_shared<win_entry>();
    e->win = win;
    e->block = block;
    e->disp_units.resize(static_cast<std::size_t>(ctx.size()));
    PMPI_Allgather(&disp_unit, 1, MPI_INT, e->disp_units.data(), 1, MPI_INT, comm);
    e->locked = std::make_unique<std::atomic<bool>[]>(static_cast<std::size_t>(ctx.size()));
    e->window = std::make_unique<am::window>(ctx, memory, info);
    state().add_window(std::move(e));
}

std::string refused(const std::string& mine, const char* call) {
    if (!mine.empty()) return mine;
    return std::string(call) + ": rank " + std::to_string(world_rank()) +
           ": another process refused its am_* info keys (see its message)";
}

}  // namespace

bool congruent_to_world(MPI_Comm comm) {
    int result = MPI_UNEQUAL;
    if (comm == MPI_COMM_NULL) return false;
    MPI_Comm_compare(comm, MPI_COMM_WORLD, &result);
    return result == MPI_IDENT || result == MPI_CONGRUENT;
}

am::window_info parse_info(MPI_Info info, const char* call) {
    am::window_info w;
    if (auto v = info_value(info, "am_ordering")) {
        try {
            w.ordering = am::am_order::parse(*v);
        } catch (const am::error& e) {
            throw am::error(am::errc::invalid_argument, std::string(call) + ": rank " +
                                                            std::to_string(world_rank()) +
                                                            ": info key am_ordering: " + e.what());
        }
    }
    if (auto v = info_value(info, "am_internal_buffer")) {
        w.internal_buffer = parse_count(*v, "am_internal_buffer", call);
    }
    if (auto v = info_value(info, "am_pipeline_unit")) {
        w.pipeline_unit = parse_count(*v, "am_pipeline_unit", call);
    }
    return w;
}

int create_window(void* base, MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm,
                  MPI_Win* win) {
    const char* call = "MPI_Win_create";
    am::window_info wi;
    std::string why;
    try {
        wi = parse_info(info, call);
    } catch (const am::error& e) {
        why = e.what();
    }
    std::array<int, 2> ok = {why.empty() ? 1 : 0, 1};
    all_agree(comm, ok);
    if (ok[0] == 0) return fail({MPI_WIN_NULL, comm}, MPI_ERR_INFO_VALUE, call, refused(why, call));
    const int rc = PMPI_Win_create(base, size, disp_unit, info, comm, win);
    if (rc != MPI_SUCCESS) return rc;
    try {
        std::span<std::byte> memory(static_cast<std::byte*>(base),
                                    base == nullptr ? 0 : static_cast<std::size_t>(size));
        attach_am_window(*win, memory, disp_unit, wi, comm, std::nullopt);
    } catch (...) {
        PMPI_Win_free(win);
        return fail_current({MPI_WIN_NULL, comm}, call);
    }
    return MPI_SUCCESS;
}

int allocate_window(MPI_Aint size, int disp_unit, MPI_Info info, MPI_Comm comm, void* baseptr,
                    MPI_Win* win) {
    const char* call = "MPI_Win_allocate";
    am::window_info wi;
    std::string why;
    std::optional<global_ptr<std::byte>> block;
    try {
        state().ctx();  // collective: before anything that may fail on one process only
    } catch (...) {
        return fail_current({MPI_WIN_NULL, comm}, call);
    }
    try {
        wi = parse_info(info, call);
    } catch (const am::error& e) {
        why = e.what();
    }
    if (why.empty() && size >= 0) {
        try {
            block = state().ctx().allocate<std::byte>(
                std::max<std::size_t>(static_cast<std::size_t>(size), 1));
        } catch (const am::error&) {
            // No room in the segment: MPI's memory; AMs then always run at the target.
        }
    }
    std::array<int, 2> ok = {why.empty() ? 1 : 0, block ? 1 : 0};
    all_agree(comm, ok);
    if (block && (ok[0] == 0 || ok[1] == 0)) {
        state().ctx().deallocate(*block);
        block.reset();
    }
    if (ok[0] == 0) return fail({MPI_WIN_NULL, comm}, MPI_ERR_INFO_VALUE, call, refused(why, call));
    void* memory = nullptr;
    int rc = MPI_SUCCESS;
    if (block) {
        memory = state().ctx().local(*block);
        rc = PMPI_Win_create(memory, size, disp_unit, info, comm, win);
    } else {
        rc = PMPI_Win_allocate(size, disp_unit, info, comm, &memory, win);
    }
    if (rc != MPI_SUCCESS) {
        if (block) state().ctx().deallocate(*block);
        return rc;
    }
    *static_cast<void**>(baseptr) = memory;
    try {
        std::span<std::byte> bytes(static_cast<std::byte*>(memory), static_cast<std::size_t>(size));
        attach_am_window(*win, bytes, disp_unit, wi, comm, block);
    } catch (...) {
        PMPI_Win_free(win);
        if (block) state().ctx().deallocate(*block);
        return fail_current({MPI_WIN_NULL, comm}, call);
    }
    return MPI_SUCCESS;
}

int free_window(const std::shared_ptr<win_entry>& e, MPI_Win* win) {
    int rc = MPI_SUCCESS;
    try {
        e->window->free();
    } catch (...) {
        rc = fail_current({*win, MPI_COMM_WORLD}, "MPI_Win_free");
    }
    state().remove_window(e->win);
    e->window.reset();
    const int prc = PMPI_Win_free(win);
    if (e->block && state().session_open()) state().ctx().deallocate(*e->block);
    return rc != MPI_SUCCESS ? rc : prc;
}

}  // namespace am::mpix
