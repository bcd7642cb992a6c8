// SPDX-License-Identifier: MIT
// The TAM scheduler of one rank under the two dispatch policies of the J-Machine study, its
// messages (inlet messages, frame allocation, I-structure fetch and store) and the end of a
// run (termination detection over all ranks).
#include "tam_machine.hpp"

#include "../util/error.hpp"

#include <algorithm>
#include <exception>
#include <functional>
#include <limits>
#include <string_view>
#include <utility>

namespace am::tam::detail {

using util::fail;

machine::machine(context& ctx, const config& cfg)
    : _ctx(ctx),
      _rank(ctx.rank()),
      _ranks(ctx.size()),
      _h(ctx.handler([this](token&, word head, word target, word a0, word a1, word a2, word a3) {
          on_arrival(message{head, target, {a0, a1, a2, a3}});
      })),
      _timeout(cfg.epoch_timeout) {
    _run = core::add_collective(ctx, key, 1, "am::tam::run");
}

std::string machine::report() const {
    if (_stats.threads == 0 && _stats.inlets == 0) return {};
    return "tam: threads " + std::to_string(_stats.threads) + ", quanta " +
           std::to_string(_stats.quanta) + ", inlets " + std::to_string(_stats.inlets) +
           ", messages " + std::to_string(_stats.messages) + " (" +
           std::to_string(_stats.remote_messages) + " remote), frames " +
           std::to_string(_stats.frames) + "\n";
}

// ------------------------------------------------------------------------------ frames

frame_ref machine::ref_of(std::uint32_t idx) const noexcept {
    return frame_ref{word(static_cast<std::uint16_t>(_rank)) << 48 | word{_frames[idx].gen} << 32 |
                     idx};
}

std::string machine::describe(frame_ref f) const {
    std::string s = "frame " + std::to_string(f.index()) + "." + std::to_string(f.generation());
    if (f.rank() == _rank && f.index() < _frames.size() && _frames[f.index()].cb != nullptr)
        s += " (codeblock '" + _frames[f.index()].cb->name + "')";
    return s + " on rank " + std::to_string(f.rank());
}

void machine::fail_frame(errc code, const char* call, frame_ref f, const std::string& what) const {
    fail(code, call, _rank, describe(f) + ": " + what);
}

frame_rec& machine::rec_of(frame_ref f, const char* call) {
    if (f.index() >= _frames.size()) fail_frame(errc::invalid_argument, call, f, "no such frame");
    frame_rec& r = _frames[f.index()];
    if (!r.live || r.gen != f.generation())
        fail_frame(errc::bad_context, call, f, "the frame has been released");
    return r;
}

void machine::bad_slot(const frame_rec& r, frame_ref self, unsigned i) const {
    fail_frame(errc::invalid_argument, "am::tam::frame::slot", self,
               "slot " + std::to_string(i) + " out of range (the codeblock has " +
                   std::to_string(r.slots.size()) + " slots)");
}

void machine::released(frame_ref self, const char* call) const {
    fail_frame(errc::bad_context, call, self, "the frame has been released");
}

void machine::bad_thread(const frame_rec& r, frame_ref self, thread_id t, const char* call) const {
    fail_frame(errc::invalid_argument, call, self,
               "thread " + std::to_string(t) + " out of range (the codeblock has " +
                   std::to_string(r.counts.size()) + " threads)");
}

void machine::enable(frame_rec& r, frame_ref self, thread_id t, bool from_inlet) {
    const char* call = from_inlet ? "am::tam::frame::post" : "am::tam::frame::fork";
    check_live(r, self, call);
    if (t >= r.counts.size()) [[unlikely]]
        bad_thread(r, self, t, call);
    // counts[t] is what is still needed: above 1, this fork/post only counts down.
    if (r.counts[t] > 1) {
        --r.counts[t];
        return;
    }
    r.counts[t] = r.cb->threads[t].entry;
    if (_opt.dispatch == policy::message_driven) {
        // The LCV holds threads of one frame: an inlet runs only when it is empty, and a thread
        // forks only in its own frame.
        if (_lcv.empty()) _md_frame = self.index();
        _lcv.push_back(t);
        return;
    }
    r.cv.push_back(t);
    if (self.index() != _active && !r.queued) {
        r.queued = true;
        _ready.push_back(self.index());
    }
}

void machine::set_count(frame_rec& r, frame_ref self, thread_id t, std::uint32_t n) {
    const char* call = "am::tam::frame::set_count";
    check_live(r, self, call);
    if (t >= r.counts.size())
        fail_frame(errc::invalid_argument, call, self,
                   "thread " + std::to_string(t) + " out of range");
    if (n == 0) fail_frame(errc::invalid_argument, call, self, "an entry count must be at least 1");
    r.counts[t] = n;
}

void machine::release(frame_rec& r, frame_ref self) {
    const char* call = "am::tam::frame::release";
    if (!r.live || r.gen != self.generation())
        fail_frame(errc::bad_context, call, self, "the frame is released twice");
    const bool pending = !r.cv.empty() || (_md_frame == self.index() && !_lcv.empty());
    if (pending)
        fail_frame(errc::bad_context, call, self,
                   "released while threads of it are enabled (they would run on a released frame)");
    r.live = false;
    ++_stats.released;
    // The generation is 16 bits of a frame_ref: rather than wrap around to a generation a stale
    // reference may still hold, the slot retires after its last one (one record per 65 536
    // frames of it) and its references stay refused.
    if (r.gen == std::numeric_limits<std::uint16_t>::max()) return;
    ++r.gen;
    _free[r.cbid].push_back(self.index());
}

// ---------------------------------------------------------------------------- messages

void machine::post_remote(int dest, const message& m) {
    if (dest < 0 || dest >= _ranks)
        fail(errc::bad_rank, "am::tam", _rank,
             "destination rank " + std::to_string(dest) + " out of range (the job has " +
                 std::to_string(_ranks) + " ranks)");
    ++_stats.remote_messages;
    _ctx.request(dest, _h, m.head, m.target, m.a[0], m.a[1], m.a[2], m.a[3]);
}

void machine::copy_args(message& m, std::initializer_list<word> args, const char* call,
                        frame_ref from) const {
    if (args.size() > max_args)
        fail_frame(errc::too_large, call, from,
                   std::to_string(args.size()) + " argument words (at most " +
                       std::to_string(max_args) + ")");
    std::copy(args.begin(), args.end(), m.a);
}

void machine::send(frame_ref from, frame_ref to, inlet_id in, std::initializer_list<word> args) {
    const char* call = "am::tam::frame::send";
    message m;
    copy_args(m, args, call, from);
    if (!to.valid()) fail_frame(errc::invalid_argument, call, from, "send to a null frame_ref");
    m.head = message::make_head(message::inlet, static_cast<unsigned>(args.size()), in, 0);
    m.target = to.as_word();
    post_message(to.rank(), m, false);
}

void machine::call(frame_ref from, codeblock_id cb, int rank, inlet_id in,
                   std::initializer_list<word> args) {
    const char* callname = "am::tam::frame::call";
    message m;
    copy_args(m, args, callname, from);
    if (cb >= _prog->size())
        fail_frame(errc::invalid_argument, callname, from,
                   "codeblock " + std::to_string(cb) + " out of range (the program has " +
                       std::to_string(_prog->size()) + ")");
    if (in >= _prog->at(cb).inlets.size())
        fail_frame(errc::invalid_argument, callname, from,
                   "inlet " + std::to_string(in) + " out of range (codeblock '" +
                       _prog->at(cb).name + "' has " + std::to_string(_prog->at(cb).inlets.size()) +
                       " inlets)");
    m.head = message::make_head(message::call, static_cast<unsigned>(args.size()), in, cb);
    post_message(rank, m, true);
}

void machine::ifetch(frame_ref from, istruct_ref a, std::uint32_t i, inlet_id in, word tag) {
    message m;
    m.head = message::make_head(message::fetch, 2, in, _frames[from.index()].cbid);
    m.target = word{i} << 32 | a.id();
    m.a[0] = from.as_word();
    m.a[1] = tag;
    post_message(a.rank(), m, true);
}

void machine::istore(frame_ref from, istruct_ref a, std::uint32_t i, word value) {
    message m;
    m.head = message::make_head(message::store, 2, 0, _frames[from.index()].cbid);
    m.target = word{i} << 32 | a.id();
    m.a[0] = value;
    m.a[1] = from.as_word();
    post_message(a.rank(), m, true);
}

istruct_ref machine::ialloc(std::uint32_t length) {
    istruct_rec s;
    s.values.assign(length, 0);
    s.full.assign(length, 0);
    _istructs.push_back(std::move(s));
    return istruct_ref{word(static_cast<std::uint16_t>(_rank)) << 48 | (_istructs.size() - 1)};
}

void machine::finish(frame_ref /*from*/, word value) {
    _result = value;
    ++_finished;
}

// ------------------------------------------------------------------ arrival and system work

void machine::on_arrival(const message& m) {
    // A handler: may run on a progress thread. Only the inbox is shared.
    const std::lock_guard<std::mutex> g(_inbox_lock);
    _inbox.push_back(m);
    _inbox_full.store(true, std::memory_order_release);
}

void machine::take_inbox() {
    if (!_inbox_full.load(std::memory_order_acquire)) return;
    {
        const std::lock_guard<std::mutex> g(_inbox_lock);
        _inbox_taken.swap(_inbox);
        _inbox_full.store(false, std::memory_order_relaxed);
    }
    for (const message& m : _inbox_taken) {
        if (m.what() != message::inlet) {
            system(m);
        } else if (_opt.dispatch == policy::message_driven) {
            _msgq.push_back(m);
        } else {
            deliver(m);
        }
    }
    _inbox_taken.clear();
}

void machine::system(const message& m) {
    switch (m.what()) {
        case message::call:
            allocate(m);
            break;
        case message::fetch:
            serve_fetch(m);
            break;
        case message::store:
            serve_store(m);
            break;
        default:
            fail(errc::invalid_argument, "am::tam", _rank,
                 "a message of unknown kind " + std::to_string(m.what()));
    }
}

void machine::allocate(const message& m) {
    const codeblock_id cb = m.codeblock();
    const codeblock_def& def = _prog->at(cb);
    std::uint32_t idx;
    std::vector<std::uint32_t>& free = _free[cb];  // same codeblock: the vectors fit already
    if (!free.empty()) {
        idx = free.back();
        free.pop_back();
    } else {
        idx = static_cast<std::uint32_t>(_frames.size());
        _frames.emplace_back();
    }
    frame_rec& r = _frames[idx];
    r.cb = &def;
    r.cbid = cb;
    r.live = true;
    r.queued = false;
    r.slots.assign(def.slots, 0);
    r.counts.resize(def.threads.size());
    for (std::size_t t = 0; t < def.threads.size(); ++t) r.counts[t] = def.threads[t].entry;
    r.cv.clear();
    ++_stats.frames;
    // The arguments go to the inlet as an inlet message: at once (AM), or queued (MD).
    message in = m;
    in.head = message::make_head(message::inlet, m.nargs(), m.inlet_index(), 0);
    in.target = ref_of(idx).as_word();
    if (_opt.dispatch == policy::message_driven) {
        _msgq.push_back(in);
    } else {
        deliver(in);
    }
}

void machine::bad_element(const message& m, const char* call) const {
    const auto id = static_cast<std::uint32_t>(m.target);
    const auto i = static_cast<std::uint32_t>(m.target >> 32);
    const bool fetch = m.what() == message::fetch;
    const frame_ref who = frame_ref::from(fetch ? m.a[0] : m.a[1]);
    const std::string size =
        id < _istructs.size() ? std::to_string(_istructs[id].values.size()) + " elements" : "none";
    fail(errc::invalid_argument, call, _rank,
         "element " + std::to_string(i) + " of I-structure " + std::to_string(id) +
             " out of range (it has " + size + "; " + (fetch ? "read" : "written") + " by frame " +
             std::to_string(who.index()) + "." + std::to_string(who.generation()) +
             " (codeblock '" + _prog->at(m.codeblock()).name + "') on rank " +
             std::to_string(who.rank()) + ")");
}

void machine::written_twice(const message& m) const {
    const auto id = static_cast<std::uint32_t>(m.target);
    const auto i = static_cast<std::uint32_t>(m.target >> 32);
    const frame_ref writer = frame_ref::from(m.a[1]);
    fail(errc::invalid_argument, "am::tam::frame::istore", _rank,
         "element " + std::to_string(i) + " of I-structure " + std::to_string(id) +
             " written twice (the second time by frame " + std::to_string(writer.index()) + "." +
             std::to_string(writer.generation()) + " (codeblock '" + _prog->at(m.codeblock()).name +
             "') on rank " + std::to_string(writer.rank()) + ")");
}

void machine::serve_fetch(const message& m) {
    const auto id = static_cast<std::uint32_t>(m.target);
    const auto i = static_cast<std::uint32_t>(m.target >> 32);
    const frame_ref reader_frame = frame_ref::from(m.a[0]);
    if (id >= _istructs.size() || i >= _istructs[id].values.size()) [[unlikely]]
        bad_element(m, "am::tam::frame::ifetch");
    istruct_rec& s = _istructs[id];
    ++_stats.fetches;
    ++_handled;
    if (s.full[i] != 0) {
        message reply;
        reply.head = message::make_head(message::inlet, 2, m.inlet_index(), 0);
        reply.target = m.a[0];
        reply.a[0] = s.values[i];
        reply.a[1] = m.a[1];
        post_message(reader_frame.rank(), reply, false);
        return;
    }
    ++_stats.deferred;
    s.waiting[i].push_back(reader{m.a[0], m.a[1], m.inlet_index(), m.codeblock()});
}

void machine::serve_store(const message& m) {
    const auto id = static_cast<std::uint32_t>(m.target);
    const auto i = static_cast<std::uint32_t>(m.target >> 32);
    if (id >= _istructs.size() || i >= _istructs[id].values.size()) [[unlikely]]
        bad_element(m, "am::tam::frame::istore");
    istruct_rec& s = _istructs[id];
    if (s.full[i] != 0) [[unlikely]]
        written_twice(m);
    ++_stats.stores;
    ++_handled;
    s.values[i] = m.a[0];
    s.full[i] = 1;
    const auto w = s.waiting.find(i);
    if (w == s.waiting.end()) return;
    const std::vector<reader> readers = std::move(w->second);
    s.waiting.erase(w);
    for (const reader& r : readers) {
        message reply;
        reply.head = message::make_head(message::inlet, 2, r.in, 0);
        reply.target = r.frame;
        reply.a[0] = m.a[0];
        reply.a[1] = r.tag;
        post_message(frame_ref::from(r.frame).rank(), reply, false);
    }
}

void machine::undeliverable(const message& m, const char* call) const {
    const frame_ref f = frame_ref::from(m.target);
    if (f.index() >= _frames.size() || !_frames[f.index()].live ||
        _frames[f.index()].gen != f.generation())
        fail_frame(errc::bad_context, call, f,
                   "a message for inlet " + std::to_string(m.inlet_index()) +
                       " arrived after the frame was released");
    fail_frame(errc::invalid_argument, call, f,
               "inlet " + std::to_string(m.inlet_index()) + " out of range (the codeblock has " +
                   std::to_string(_frames[f.index()].cb->inlets.size()) + " inlets)");
}

void machine::deliver(const message& m) {
    const char* call = "am::tam inlet";
    const frame_ref f = frame_ref::from(m.target);
    if (f.index() >= _frames.size() || !_frames[f.index()].live ||
        _frames[f.index()].gen != f.generation()) [[unlikely]]
        undeliverable(m, call);
    frame_rec& r = _frames[f.index()];
    const inlet_id in = m.inlet_index();
    if (in >= r.cb->inlets.size()) [[unlikely]]
        undeliverable(m, call);
    ++_stats.inlets;
    ++_handled;
    frame view = frame_access::make(this, &r, f, true);
    try {
        r.cb->inlets[in](view, std::span<const word>(m.a, m.nargs()));
    } catch (...) {
        threw(f, call, "inlet " + std::to_string(in));
    }
}

// The program's exception names only what its own code knew: the error says which inlet or
// thread of which frame threw, and keeps the original text (and code, for an am::error). The
// layer's own errors about this frame, and a job that aborted meanwhile, pass unchanged.
void machine::threw(frame_ref f, const char* call, const std::string& who) const {
    try {
        throw;
    } catch (const error& e) {
        const std::string_view what = e.what();
        // fail_frame writes describe(f) + ": ": with the colon, "on rank 1" is not found in
        // "on rank 10".
        if (e.code() == errc::aborted || what.find(describe(f) + ": ") != std::string_view::npos)
            throw;
        fail_frame(e.code(), call, f, who + " threw: " + e.what());
    } catch (const std::exception& e) {
        fail_frame(errc::invalid_argument, call, f, who + " threw: " + e.what());
    } catch (...) {
        fail_frame(errc::invalid_argument, call, f,
                   who + " threw an exception not derived from std::exception");
    }
}

// ---------------------------------------------------------------------------- scheduler

void machine::run_thread(std::uint32_t idx, thread_id t) {
    frame_rec& r = _frames[idx];
    const frame_ref f = ref_of(idx);
    ++_stats.threads;
    const bool new_quantum = f.as_word() != _last_frame;
    if (new_quantum) {
        ++_stats.quanta;
        _last_frame = f.as_word();
    }
    const bool traced = core::tracer(_ctx) != nullptr;
    if (traced) [[unlikely]]
        trace_thread_start(new_quantum, idx);
    frame view = frame_access::make(this, &r, f, false);
    try {
        r.cb->threads[t].fn(view);
    } catch (...) {
        const char* name = r.cb->threads[t].name;
        threw(f, "am::tam thread",
              "thread " + std::to_string(t) +
                  (name != nullptr && *name != 0 ? " ('" + std::string(name) + "')" : ""));
    }
    if (traced) [[unlikely]]
        trace_thread_end();
}

void machine::trace_thread_start(bool new_quantum, std::uint32_t idx) {
    if (!new_quantum) return;  // (a quantum begun before tracing started is not traced)
    trace_quantum_flush();
    _q_start = ::am::detail::trace_now();
    _q_end = _q_start;
    _q_threads = 0;
    _q_cb = _frames[idx].cbid;
    _q_frame = idx;
}

void machine::trace_thread_end() noexcept {
    if (_q_start == 0) return;
    ++_q_threads;
    _q_end = ::am::detail::trace_now();
}

void machine::trace_quantum_flush() noexcept {
    if (_q_start == 0) return;
    if (::am::detail::tracer* tr = core::tracer(_ctx)) {
        ::am::detail::trace_record(tr, ::am::detail::trace_kind::tam_quantum, _q_start, _q_end,
                                   _q_cb, _q_threads, _q_frame);
    }
    _q_start = 0;
}

void machine::poll_point() {
    if (_multi && ++_since_poll >= _opt.poll_every) {
        _since_poll = 0;
        core::poll(_ctx);
        take_inbox();
    }
    if (_opt.dispatch == policy::active_messages && !_opt.enabled && in_quantum()) return;
    while (!_hiq.empty()) {
        const message m = _hiq.front();
        _hiq.pop_front();
        system(m);
    }
    if (_opt.dispatch == policy::active_messages) {
        while (!_msgq.empty()) {
            const message m = _msgq.front();
            _msgq.pop_front();
            deliver(m);
            while (!_hiq.empty()) {
                const message s = _hiq.front();
                _hiq.pop_front();
                system(s);
            }
        }
    }
}

bool machine::step_am() {
    // A frame whose CV has emptied ends its quantum and leaves before messages are taken: what
    // they post to it then goes to its CV with the frame at the back of the ready queue.
    if (_active != ~0u && _frames[_active].cv.empty()) _active = ~0u;
    poll_point();
    if (_active != ~0u) {
        frame_rec& r = _frames[_active];
        if (!r.cv.empty()) {
            const thread_id t = r.cv.back();
            r.cv.pop_back();
            run_thread(_active, t);
            return true;
        }
        _active = ~0u;
    }
    if (_ready.empty()) return false;
    _active = _ready.front();
    _ready.pop_front();
    _frames[_active].queued = false;
    return true;
}

bool machine::step_md() {
    poll_point();
    if (!_lcv.empty()) {
        const thread_id t = _lcv.back();
        _lcv.pop_back();
        run_thread(_md_frame, t);
        return true;
    }
    if (_msgq.empty()) return false;
    // The LCV is empty: the next message's inlet runs. Inlets that post nothing are followed
    // by the next message at once, until one posts a thread or system work waits.
    do {
        const message m = _msgq.front();
        _msgq.pop_front();
        deliver(m);
    } while (_lcv.empty() && _hiq.empty() && !_msgq.empty());
    return true;
}

bool machine::step() {
    return _opt.dispatch == policy::active_messages ? step_am() : step_md();
}

void machine::work_until_idle() {
    while (step()) {
    }
}

}  // namespace am::tam::detail
