// SPDX-License-Identifier: MIT
// The public calls of <am/tam.hpp>: programs, policies, frame views, and a run from its start
// to the end found by termination detection.
#include "tam_machine.hpp"

#include "../util/error.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>

namespace am::tam {

using util::fail;

namespace {
constexpr std::size_t id_limit = 65535;
}  // namespace

codeblock_id program::add(codeblock_def cb) {
    const char* call = "am::tam::program::add";
    const auto bad = [&](const std::string& what) {
        throw error(errc::invalid_argument,
                    std::string(call) + ": codeblock '" + cb.name + "': " + what);
    };
    if (cb.name.empty()) bad("a codeblock needs a name");
    if (_codeblocks.size() >= id_limit) bad("more than 65535 codeblocks");
    if (cb.threads.size() > id_limit) bad("more than 65535 threads");
    if (cb.inlets.size() > id_limit) bad("more than 65535 inlets");
    for (std::size_t t = 0; t < cb.threads.size(); ++t) {
        if (cb.threads[t].fn == nullptr) bad("thread " + std::to_string(t) + " is null");
        if (cb.threads[t].entry == 0) bad("thread " + std::to_string(t) + " has entry count 0");
    }
    for (std::size_t i = 0; i < cb.inlets.size(); ++i)
        if (cb.inlets[i] == nullptr) bad("inlet " + std::to_string(i) + " is null");
    _codeblocks.push_back(std::move(cb));
    return static_cast<codeblock_id>(_codeblocks.size() - 1);
}

policy parse_policy(std::string_view text) {
    if (text == "am" || text == "active_messages") return policy::active_messages;
    if (text == "md" || text == "message_driven") return policy::message_driven;
    throw error(errc::invalid_argument, "am::tam::parse_policy: '" + std::string(text) +
                                            "' is not a policy (am, md, active_messages, "
                                            "message_driven)");
}

const char* to_string(policy p) noexcept {
    return p == policy::active_messages ? "am" : "md";
}

// --------------------------------------------------------------------------- frame views

namespace {
void thread_only(const frame& f, const char* call) {
    if (frame_access::is_inlet(f))
        frame_access::machine_of(f).fail_frame(
            errc::bad_context, call, f.self(),
            "an inlet only stores into slots and posts threads (this is for threads)");
}
}  // namespace

void frame::bad_slot(unsigned i) const {
    frame_access::machine_of(*this).bad_slot(frame_access::rec_of(*this), _ref, i);
}
void frame::fork(thread_id t) {
    frame_access::machine_of(*this).enable(frame_access::rec_of(*this), _ref, t, _inlet);
}
void frame::set_count(thread_id t, std::uint32_t n) {
    frame_access::machine_of(*this).set_count(frame_access::rec_of(*this), _ref, t, n);
}
void frame::send(frame_ref to, inlet_id in, std::initializer_list<word> args) {
    thread_only(*this, "am::tam::frame::send");
    frame_access::machine_of(*this).send(_ref, to, in, args);
}
void frame::call(codeblock_id cb, int rank, inlet_id in, std::initializer_list<word> args) {
    thread_only(*this, "am::tam::frame::call");
    frame_access::machine_of(*this).call(_ref, cb, rank, in, args);
}
void frame::ifetch(istruct_ref a, std::uint32_t i, inlet_id in, word tag) {
    thread_only(*this, "am::tam::frame::ifetch");
    frame_access::machine_of(*this).ifetch(_ref, a, i, in, tag);
}
void frame::istore(istruct_ref a, std::uint32_t i, word value) {
    thread_only(*this, "am::tam::frame::istore");
    frame_access::machine_of(*this).istore(_ref, a, i, value);
}
istruct_ref frame::ialloc(std::uint32_t length) {
    thread_only(*this, "am::tam::frame::ialloc");
    return frame_access::machine_of(*this).ialloc(length);
}
void frame::release() {
    thread_only(*this, "am::tam::frame::release");
    frame_access::machine_of(*this).release(frame_access::rec_of(*this), _ref);
}
void frame::finish(word value) {
    thread_only(*this, "am::tam::frame::finish");
    frame_access::machine_of(*this).finish(_ref, value);
}
int frame::rank() const noexcept {
    return frame_access::machine_of(*this).rank();
}
int frame::ranks() const noexcept {
    return frame_access::machine_of(*this).ranks();
}
const std::string& frame::codeblock_name() const noexcept {
    return frame_access::rec_of(*this).cb->name;
}

// ----------------------------------------------------------------------------------- run

result run(context& ctx, const program& prog, codeblock_id root, std::initializer_list<word> args,
           const options& opt) {
    const char* call = "am::tam::run";
    core::check_thread(ctx, call);
    core::check_wait(ctx, call);
    return core::get<detail::machine>(ctx, detail::machine::key, call).run(prog, root, args, opt);
}

namespace detail {

namespace {

std::uint64_t fnv(std::uint64_t h, std::uint64_t v) {
    for (int i = 0; i < 8; ++i) {
        h ^= (v >> (8 * i)) & 0xff;
        h *= 1099511628211ull;
    }
    return h;
}

std::uint64_t program_hash(const program& prog) {
    std::uint64_t h = 14695981039346656037ull;
    for (std::size_t c = 0; c < prog.size(); ++c) {
        const codeblock_def& cb = prog.at(static_cast<codeblock_id>(c));
        for (const char ch : cb.name) h = fnv(h, static_cast<unsigned char>(ch));
        h = fnv(h, cb.slots);
        h = fnv(h, cb.inlets.size());
        for (const thread_def& t : cb.threads) h = fnv(h, t.entry);
    }
    return h;
}

// The idle function of a collective that has nothing to do while it waits.
std::size_t nothing() {
    return 0;
}

// The words of the last allreduce: result, finish count, unsatisfied reads, then the stats.
constexpr std::size_t stat_words = 10;
void stats_to(const stats& s, std::uint64_t* w) {
    const std::uint64_t v[stat_words] = {s.messages, s.remote_messages, s.inlets,   s.threads,
                                         s.quanta,   s.frames,          s.released, s.fetches,
                                         s.deferred, s.stores};
    std::copy(v, v + stat_words, w);
}
stats stats_from(const std::uint64_t* w) {
    return stats{w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7], w[8], w[9]};
}

}  // namespace

void machine::begin(const program& prog, const options& opt) {
    if (opt.poll_every == 0)
        fail(errc::invalid_argument, "am::tam::run", _rank,
             "options::poll_every must be at least 1");
    _prog = &prog;
    _opt = opt;
    _multi = _ranks > 1;
    _since_poll = 0;
    _frames.clear();
    _frames.reserve(1024);
    _free.assign(prog.size(), {});
    _ready.clear();
    _active = ~0u;
    _lcv.clear();
    _md_frame = ~0u;
    _msgq.clear();
    _hiq.clear();
    _istructs.clear();
    _last_frame = ~word{0};
    _q_start = 0;
    _sent = _handled = 0;
    _wave = 0;
    _wave_sums[0] = _wave_sums[1] = 0;
    _result = 0;
    _finished = 0;
    _stats = stats{};
}

void machine::check_program(const program& prog) {
    const std::uint64_t mine[2] = {program_hash(prog), prog.size()};
    std::uint64_t sum[2];
    collective(mine, sum, 2, nothing, "the check that every rank runs the same program");
    if (sum[0] != mine[0] * static_cast<std::uint64_t>(_ranks) ||
        sum[1] != mine[1] * static_cast<std::uint64_t>(_ranks))
        fail(errc::handler_mismatch, "am::tam::run", _rank,
             "the ranks run different programs (codeblocks, slots, inlets or entry counts differ; "
             "this rank's has " +
                 std::to_string(prog.size()) + " codeblocks)");
}

void machine::start_root(codeblock_id root, std::initializer_list<word> args) {
    const char* call = "am::tam::run";
    if (root >= _prog->size())
        fail(errc::invalid_argument, call, _rank,
             "root codeblock " + std::to_string(root) + " out of range (the program has " +
                 std::to_string(_prog->size()) + ")");
    if (_prog->at(root).inlets.empty())
        fail(errc::invalid_argument, call, _rank,
             "root codeblock '" + _prog->at(root).name +
                 "' has no inlet 0 to receive the arguments");
    message m;
    if (args.size() > max_args)
        fail(errc::too_large, call, _rank,
             std::to_string(args.size()) + " argument words (at most " + std::to_string(max_args) +
                 ")");
    std::copy(args.begin(), args.end(), m.a);
    m.head = message::make_head(message::call, static_cast<unsigned>(args.size()), 0, root);
    if (_rank == 0) post_message(0, m, true);
}

// Termination: a wave sums every rank's (messages sent, messages handled), each taken when the
// rank had no work left; while a rank waits for a wave it keeps working. Two waves in a row with
// equal sums, and sent = handled, mean that nothing was sent or handled between them and nothing
// is in flight: every rank is idle for good.
void machine::terminate() {
    std::uint64_t previous[2] = {~0ull, ~0ull};
    // What the rank did while it waits, including serving other ranks' requests (which runs
    // no thread): reported as work, so that the collective does not back off meanwhile.
    const std::function<std::size_t()> idle = [this]() -> std::size_t {
        const std::uint64_t before = _sent + _handled;
        take_inbox();  // what the collective's polls received
        const bool stepped = step();
        return stepped || _sent + _handled != before ? 1 : 0;
    };
    for (std::uint32_t wave = 1;; ++wave) {
        work_until_idle();
        const std::uint64_t mine[2] = {_sent, _handled};
        std::uint64_t sum[2];
        {
            ::am::detail::trace_span span(core::tracer(_ctx), ::am::detail::trace_kind::tam_wave,
                                          wave);
            _wave = wave;
            collective(mine, sum, 2, idle, "termination detection");
            span.set(sum[0], sum[1]);
        }
        if (sum[0] == sum[1] && sum[0] == previous[0] && sum[1] == previous[1]) {
            trace_quantum_flush();  // the run's last quantum
            return;
        }
        previous[0] = _wave_sums[0] = sum[0];
        previous[1] = _wave_sums[1] = sum[1];
    }
}

std::string machine::unsatisfied_reads(std::uint64_t& count) const {
    std::string text;
    count = 0;
    for (std::size_t id = 0; id < _istructs.size(); ++id) {
        for (const auto& [i, readers] : _istructs[id].waiting) {
            for (const reader& r : readers) {
                if (++count > 8) continue;
                const frame_ref f = frame_ref::from(r.frame);
                text += "\n  element " + std::to_string(i) + " of I-structure " +
                        std::to_string(id) + " on rank " + std::to_string(_rank) +
                        ", read by frame " + std::to_string(f.index()) + "." +
                        std::to_string(f.generation()) + " (codeblock '" + _prog->at(r.cb).name +
                        "') on rank " + std::to_string(f.rank()) + " into inlet " +
                        std::to_string(r.in);
            }
        }
    }
    if (count > 8) text += "\n  ... and " + std::to_string(count - 8) + " more";
    return text;
}

result machine::finish_run() {
    std::uint64_t unsatisfied = 0;
    const std::string reads = unsatisfied_reads(unsatisfied);
    std::uint64_t mine[3 + stat_words] = {_result, _finished, unsatisfied};
    stats_to(_stats, mine + 3);
    std::uint64_t sum[3 + stat_words];
    collective(mine, sum, 3 + stat_words, nothing, "the sums at the end of the run");
    const char* call = "am::tam::run";
    if (sum[2] != 0)
        fail(errc::bad_context, call, _rank,
             "the program ended with " + std::to_string(sum[2]) +
                 " I-structure read(s) never satisfied (the elements were never written)" +
                 (reads.empty() ? std::string(" (none on this rank)") : ":" + reads));
    if (sum[1] > 1)
        fail(errc::bad_context, call, _rank,
             "frame::finish was called " + std::to_string(sum[1]) + " times (at most once)");
    result r;
    r.value = sum[0];
    r.finished = sum[1] == 1;
    r.local = _stats;
    r.total = stats_from(sum + 3);
    return r;
}

// Every collective of run is of its own kind (`_run`): a rank in an epoch's end, a barrier, quiesce
// or the end of am::run meanwhile fails the job naming both calls (with epoch_end, before, the two
// matched and each misread the other's sums).
void machine::collective(const std::uint64_t* in, std::uint64_t* out, std::size_t n,
                         const std::function<std::size_t()>& idle, const char* phase) {
    const char* call = "am::tam::run";
    if (_timeout <= 0) {
        core::allreduce_sum(_ctx, _run, in, out, n, idle, call);
        return;
    }
    // The clock runs only while the rank has nothing to do: a long program is not a hang, a
    // rank that stops polling or never reaches run is.
    auto since = std::chrono::steady_clock::now();
    const std::function<std::size_t()> timed = [&]() -> std::size_t {
        const std::size_t did = idle();
        const auto now = std::chrono::steady_clock::now();
        if (did != 0) {
            since = now;
        } else if (const double waited = std::chrono::duration<double>(now - since).count();
                   waited >= _timeout) {
            timed_out(phase, waited);
        }
        return did;
    };
    core::allreduce_sum(_ctx, _run, in, out, n, timed, call);
}

// As an epoch that does not end (typed_epoch.cpp): what this rank did on stderr, then an error
// naming the ranks that never joined (where the transport knows them), which fails the job.
void machine::timed_out(const char* phase, double waited) const {
    std::fprintf(stderr,
                 "am: rank %d: am::tam::run waited %.3f s with nothing to do in %s (wave %u; "
                 "this rank sent %llu and handled %llu TAM messages; last wave's sums: sent "
                 "%llu, handled %llu)\n",
                 _rank, waited, phase, static_cast<unsigned>(_wave),
                 static_cast<unsigned long long>(_sent), static_cast<unsigned long long>(_handled),
                 static_cast<unsigned long long>(_wave_sums[0]),
                 static_cast<unsigned long long>(_wave_sums[1]));
    char secs[32];
    std::snprintf(secs, sizeof secs, "%g", _timeout);
    const std::string missing = core::stragglers(_ctx);
    fail(errc::timeout, "am::tam::run", _rank,
         std::string("waited ") + secs + " s (AM_EPOCH_TIMEOUT) with nothing to do in " + phase +
             (missing.empty() ? "" : "; " + missing) + "; this rank's counts are printed above");
}

result machine::run(const program& prog, codeblock_id root, std::initializer_list<word> args,
                    const options& opt) {
    begin(prog, opt);
    check_program(prog);
    start_root(root, args);
    terminate();
    result r = finish_run();
    _prog = nullptr;
    return r;
}

}  // namespace detail
}  // namespace am::tam
