// SPDX-License-Identifier: MIT
// The Split-C layer on the one-sided network (core::remote_put / remote_get, the ucx transport):
// put and get to ranks whose segment is not mapped here, one network operation per row, and the
// completions of network operations (atomics too), which the network reports from inside a poll
// and the layer finishes in its deferred work, where sends never block.
#include "rma_common.hpp"

#include <atomic>
#include <cstring>
#include <utility>

namespace am::detail {

using namespace rma_internal;

// A put on the network: its rows count down; the last one sends the flag message (after the
// data is visible at the target: the network's `done` is remote completion) and counts `done`.
struct rma_layer::net_put final : net_record {
    std::vector<std::byte> copy;  // the source of a split-phase put (reusable at return)
    std::atomic<std::size_t> remaining{0};
    int target = 0;
    std::uint64_t flagword = 0;
    counter* done = nullptr;

    void finish(std::uint64_t /*value*/) override {
        if (remaining.fetch_sub(1, std::memory_order_acq_rel) == 1) layer->put_arrived(*this);
    }
};

struct rma_layer::net_get final : net_record {
    std::atomic<std::size_t> remaining{0};
    counter* flag = nullptr;

    void finish(std::uint64_t /*value*/) override {
        if (remaining.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
        counter* f = flag;
        delete this;
        f->add();
    }
};

void rma_layer::put_net(const rma_shape& s, std::uint64_t flagword, counter* done) {
    const bool blocking = flagword == 0 && done == nullptr;
    counter arrived(_ctx, unregistered_t{});
    auto* rec = new net_put;
    rec->layer = this;
    rec->target = s.rank;
    rec->flagword = flagword;
    rec->done = blocking ? &arrived : done;
    rec->remaining.store(s.rows, std::memory_order_relaxed);
    if (!blocking) {
        rec->copy.resize(s.rows * s.width);
        for (std::size_t i = 0; i < s.rows; ++i) {
            std::memcpy(rec->copy.data() + i * s.width, local_block(s, i), s.width);
        }
    }
    // Counted before the first starts: quiescence waits for every row's completion.
    core::add_pending(_ctx, static_cast<std::int64_t>(s.rows));
    for (std::size_t i = 0; i < s.rows; ++i) {
        const std::byte* src = blocking ? local_block(s, i) : rec->copy.data() + i * s.width;
        core::remote_put(_ctx, s.rank, remote_offset(s, i), src, s.width, &rma_layer::net_done,
                         rec);
    }
    if (!blocking) return;
    const detail::trace_span waiting(core::tracer(_ctx), detail::trace_kind::wait,
                                     static_cast<std::uint32_t>(detail::trace_cause::reply),
                                     static_cast<std::uint64_t>(s.rank));
    arrived.wait(1);
}

void rma_layer::put_arrived(net_put& rec) {
    if (rec.flagword != 0) {
        _ctx.request(rec.target, _h_flag, static_cast<std::uint32_t>(rec.flagword - 1));
    }
    counter* done = rec.done;
    delete &rec;
    if (done != nullptr) done->add();
}

void rma_layer::get_net(const rma_shape& s, counter* flag) {
    counter arrived(_ctx, unregistered_t{});
    auto* rec = new net_get;
    rec->layer = this;
    rec->flag = flag != nullptr ? flag : &arrived;
    rec->remaining.store(s.rows, std::memory_order_relaxed);
    core::add_pending(_ctx, static_cast<std::int64_t>(s.rows));
    for (std::size_t i = 0; i < s.rows; ++i) {
        core::remote_get(_ctx, s.rank, remote_offset(s, i), local_block(s, i), s.width,
                         &rma_layer::net_done, rec);
    }
    if (flag != nullptr) return;
    const detail::trace_span waiting(core::tracer(_ctx), detail::trace_kind::wait,
                                     static_cast<std::uint32_t>(detail::trace_cause::reply),
                                     static_cast<std::uint64_t>(s.rank));
    arrived.wait(1);
}

// The network's completion runs inside the transport's poll, where a send (a put's flag) or a
// future's continuation must not start: it is queued and finished by run_net_done, the layer's
// deferred work, which the same poll runs next as a handler.
void rma_layer::net_done(void* arg, std::uint64_t value) {
    auto* rec = static_cast<net_record*>(arg);
    rma_layer& self = *rec->layer;
    {
        const std::scoped_lock lock(self._net_mutex);
        self._net_finished.emplace_back(rec, value);
    }
    core::signal_deferred(self._ctx);
}

std::size_t rma_layer::run_net_done() {
    std::vector<std::pair<net_record*, std::uint64_t>> ready;
    {
        const std::scoped_lock lock(_net_mutex);
        ready.swap(_net_finished);
    }
    for (const auto& [rec, value] : ready) {
        rec->finish(value);
        core::add_pending(_ctx, -1);  // after finish: a put's flag message is counted by now
    }
    return ready.size();
}

}  // namespace am::detail
