// SPDX-License-Identifier: MIT
// The typed layer of one rank (AM++): message-type registry, per-epoch message counts, the
// termination detectors, hang diagnosis and epoch statistics. Built on the core's public
// interface plus its reduction and poll; the header-inline parts (message_type, coalesced,
// dedup, reducer, epoch) live in include/am/typed.hpp and call in here once per batch.
#pragma once

#include <am/config.hpp>
#include <am/context.hpp>
#include <am/core/layer.hpp>
#include <am/typed.hpp>

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

namespace am::detail {

class typed_layer final : public core::layer {
  public:
    static constexpr core::key key{"typed (AM++)"};

    /// Levels counted separately (the depth-limited detector needs one pair per level).
    static constexpr unsigned max_levels = 8;
    static constexpr int max_depth = static_cast<int>(max_levels) - 2;
    static constexpr std::uint32_t max_types = 1024;

    typed_layer(context& ctx, const config& cfg);
    ~typed_layer();

    typed_hot hot;

    std::uint32_t add_type(std::string_view name, std::size_t item_size, const type_runner& r);
    void deliver(std::uint32_t type, int source, std::span<const std::byte> p, std::uint64_t tag);
    void set_handler(std::uint32_t type, std::uint32_t handler);
    void run_inline(std::uint32_t type, int source, std::span<const std::byte> p);
    std::uint64_t send_tag(const char* call);
    void check_tag(std::uint64_t tag, const char* call);
    void send(std::uint32_t type, int dest, std::uint64_t tag, const void* data, std::size_t items,
              const char* call);
    std::uint64_t batch_begin(std::uint64_t msg_tag) noexcept;
    void batch_end(std::uint64_t saved, std::uint32_t type, int source, std::uint64_t msg_tag,
                   std::size_t items) noexcept;
    [[nodiscard]] std::size_t max_batch_bytes() const noexcept { return _max_batch; }
    void attach(typed_member* m);
    void detach(typed_member* m) noexcept;
    [[noreturn]] void fail(errc code, const char* call, const std::string& what) const;
    [[nodiscard]] int rank() const noexcept { return _rank; }
    [[nodiscard]] int size() const noexcept { return _size; }

    void begin(const epoch_options& opt);
    std::uint64_t end(std::uint64_t value, epoch_stats& out);
    void abandon() noexcept;
    /// Bytes held for the layer's own bookkeeping (`am::typed_memory_bytes`).
    [[nodiscard]] std::size_t memory_bytes() const;
    /// The AM_STATS text: totals and a line per epoch (the last ones).
    [[nodiscard]] std::string report() const override;

  private:
    using counter = std::atomic<std::uint64_t>;
    struct slot_counts {
        std::array<counter, max_levels> sent{}, handled{};
        counter batches{0}, bytes{0};
    };
    // Per type and per epoch slot: what went to and came from each peer (for the diagnosis).
    struct peer_counts {
        explicit peer_counts(int ranks)
            : sent(new counter[ranks]()),
              batches(new counter[ranks]()),
              handled(new counter[ranks]()),
              base(new std::uint64_t[3 * static_cast<std::size_t>(ranks)]()) {}
        std::unique_ptr<counter[]> sent, batches, handled;
        std::unique_ptr<std::uint64_t[]> base;  // sent, batches, handled at the slot's last end
    };
    struct type_info {
        type_runner runner{};
        std::string name;
        std::size_t item_size = 0;
        std::uint32_t handler = 0;
        std::unique_ptr<peer_counts> peers[2];
    };
    struct totals {
        std::uint64_t sent = 0, handled = 0, batches = 0, bytes = 0, dedup = 0, combined = 0;
    };
    struct wave_state {
        std::uint64_t waves = 0;
        std::uint64_t last_sent = ~0ull, last_handled = ~0ull;
        std::uint64_t sum_sent = 0, sum_handled = 0;
    };

    [[nodiscard]] static unsigned slot_of(std::uint64_t tag) noexcept { return (tag >> 8) & 1u; }
    [[nodiscard]] static unsigned level_of(std::uint64_t tag) noexcept {
        const unsigned l = static_cast<unsigned>(tag & 0xff);
        return l < max_levels ? l : max_levels - 1;
    }
    struct deferred_batch {
        std::uint32_t type;
        int source;
        std::uint64_t tag;
        std::vector<std::byte> bytes;
    };
    void run_batch(std::uint32_t type, int source, std::span<const std::byte> p, std::uint64_t tag);
    std::size_t run_deferred();
    std::size_t run_parallel();
    [[nodiscard]] totals read_totals(unsigned slot) const noexcept;
    std::size_t flush_members();
    [[nodiscard]] bool members_hold() const;
    std::size_t progress();
    std::size_t contribution(unsigned slot, std::uint64_t value, std::uint64_t* words,
                             const wave_state& w);
    bool detect(const std::uint64_t* sum, std::size_t n, wave_state& w) const;
    void check_timeout(const wave_state& w) const;
    void print_diagnosis(const wave_state& w, const char* why) const;
    void record_end(unsigned slot, epoch_stats& out);

    context& _ctx;
    core::collective _epoch_end{};  // the kind of am::epoch::end's rounds
    int _rank;
    int _size;
    std::size_t _max_batch;
    double _timeout;
    bool _locking;

    std::array<std::unique_ptr<type_info>, max_types> _types{};
    std::atomic<std::uint32_t> _ntypes{0};
    slot_counts _slots[2];

    std::atomic<std::uint64_t> _open_tag{no_epoch_tag};
    std::atomic<int> _open_depth{-1};  // _depth, for checks on other threads
    // The last epoch this rank has begun. Batches of a later epoch (a peer already began it)
    // wait in `_deferred` until this rank begins it too: the program may still be creating
    // what their handlers use.
    std::atomic<std::uint64_t> _begun{0};
    mutable std::mutex _deferred_mutex;
    std::vector<deferred_batch> _deferred;
    // thread_multiple: received batches wait here for whichever polling thread takes them, so
    // several threads of the rank run handlers at once.
    bool _parallel = false;
    std::mutex _work_mutex;
    std::deque<deferred_batch> _work;
    std::uint64_t _epoch = 0;  // number of the open (or last) epoch
    int _depth = -1;
    bool _ending = false;
    std::chrono::steady_clock::time_point _began, _end_began;
    std::uint64_t _trace_began = 0;  // trace_now() at begin while tracing
    totals _base[2];                 // the slot's totals when its previous epoch ended here
    totals _begin_totals;            // dedup and combined counts at begin
    std::vector<epoch_stats> _history;
    std::uint64_t _history_dropped = 0;

    mutable std::mutex _members_mutex;
    std::vector<typed_member*> _members;
    std::uint64_t _departed_dedup = 0, _departed_combined = 0;  // of members since destroyed
    std::vector<typed_member*> _scratch;  // flush_members' copy (only the rank's thread ends)
};

}  // namespace am::detail
