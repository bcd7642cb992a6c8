// SPDX-License-Identifier: MIT
// The typed layer's C API (include/am/am_typed.h). A C message type is registered, sent,
// counted and delivered through the same entry points as `am::message_type<T>`
// (detail::typed_register / typed_send / typed_deliver), with `item_size` in place of
// sizeof(T) and a runner that calls the C function on the batch. The C++ coalescing, dedup and
// combining layers are templates over T (their buffers and caches hold T, their keys use
// operator== and std::hash): here they have byte-sized counterparts, typed_members like them,
// which the epoch's end flushes in the same order.
#include "capi_common.hpp"

#include <am/am.h>
#include <am/am_typed.h>
#include <am/context.hpp>
#include <am/core/layer.hpp>
#include <am/typed.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

/// A C message type: the runner object the typed layer owns (until the job ends).
struct am_typed {
    std::shared_ptr<am_context> ctx;
    am::detail::typed_layer* layer;
    std::uint32_t id;
    std::size_t item_size;
    am_typed_fn_t fn;
    void* user;
};

/// A C sending layer; see the implementations below.
struct am_typed_layer : am::detail::typed_member {
    am_typed_layer(am_typed* t, am_typed_layer* n, const char* c) : type(t), next(n), call(c) {}
    am_typed_layer(const am_typed_layer&) = delete;
    am_typed_layer& operator=(const am_typed_layer&) = delete;
    virtual ~am_typed_layer() = default;
    /// Sends (or holds) one item in the epoch and level of `tag`, already checked by the caller
    /// or by typed_check_tag on first use.
    virtual void send_tagged(const std::byte* item, int dest, std::uint64_t tag) = 0;
    [[nodiscard]] virtual std::uint64_t count() const { return 0; }
    [[nodiscard]] virtual bool coalescing() const { return false; }

    am_typed* type;
    am_typed_layer* next;  // the layer below, or null: the message type itself
    const char* call;
};

namespace {

using namespace am::capi;
using am::errc;

/// The typed layer's own messages in the words of this header: C calls instead of C++ ones.
std::string c_words(std::string what) {
    static constexpr std::pair<const char*, const char*> words[] = {
        {"inside an am::epoch", "inside an epoch (am_typed_epoch_begin)"},
        {"(epoch_options::depth)", "(am_typed_epoch_begin's depth)"},
        {" max_medium()", " am_max_medium()"},
        {" messages of ", " items of "},
    };
    for (const auto& [from, to] : words) {
        const std::string f = from;
        for (auto at = what.find(f); at != std::string::npos; at = what.find(f, at + 1)) {
            what.replace(at, f.size(), to);
        }
    }
    return what;
}

/// `guarded` for the calls of this file, with the library's messages in C words.
template <class F>
am_status_t c_guarded(const am_context* c, const char* call, F&& f) noexcept {
    return guarded(c, call, [&] {
        try {
            f();
        } catch (const am::error& e) {
            throw am::error(e.code(), c_words(e.what()));
        }
    });
}

am::detail::typed_layer* layer_of(am_context* c) {
    return am::detail::typed_of(*c->cxx);
}

// ------------------------------------------------------------------------- message types

void run_c(void* obj, int source, std::span<const std::byte> p) {
    auto* t = static_cast<am_typed*>(obj);
    const std::size_t n = p.size() / t->item_size;
    if (reinterpret_cast<std::uintptr_t>(p.data()) % 8 == 0) [[likely]] {
        t->fn(t->ctx.get(), source, p.data(), n, t->user);
        return;
    }
    // The header promises 8-byte alignment (a deferred batch's copy may not have it).
    std::vector<std::uint64_t> copy((p.size() + 7) / 8);
    std::memcpy(copy.data(), p.data(), p.size());
    t->fn(t->ctx.get(), source, copy.data(), n, t->user);
}

void destroy_c(void* obj) {
    delete static_cast<am_typed*>(obj);
}

/// The core handler of a C message type: hands the batch to the typed layer, as the
/// `deliver` lambda of am::message_type does.
struct c_deliver {
    am::detail::typed_layer* layer;
    std::uint32_t id;
};

void invoke_deliver(void* obj, am::token& t, const std::uint64_t* args, std::byte* payload,
                    std::size_t len) {
    const auto* d = static_cast<const c_deliver*>(obj);
    am::detail::typed_deliver(d->layer, d->id, t.source(), {payload, len}, args[0]);
}

void destroy_deliver(void* obj) {
    delete static_cast<c_deliver*>(obj);
}

am_typed* create_type(am_context* c, std::size_t item_size, am_typed_fn_t fn, void* user,
                      const std::string& name) {
    const char* call = "am_typed_create";
    const std::size_t room = c->cxx->max_medium();
    if (item_size == 0 || item_size > room) {
        fail(errc::too_large, call, c,
             "item size " + std::to_string(item_size) +
                 " outside [1, am_max_medium() = " + std::to_string(room) + "]");
    }
    am::detail::typed_layer* layer = layer_of(c);
    // The layer owns the runner from the call on, also when it throws.
    auto* t = new am_typed{c->shared_from_this(), layer, 0, item_size, fn, user};
    t->id = am::detail::typed_register(layer, name, item_size, {t, &run_c, &destroy_c});
    // The handler's name carries the type's name and item size: the barrier's handshake then
    // reports a rank that created another type at this point.
    const std::string label =
        "am_typed \"" + name + "\" (" + std::to_string(item_size) + "-byte items)";
    const std::uint32_t handler = am::detail::core_register(
        am::detail::access::impl(*c->cxx),
        am::detail::handler_desc{am::category::medium, 1, &invoke_deliver,
                                 new c_deliver{layer, t->id}, &destroy_deliver, label, nullptr});
    am::detail::typed_set_handler(layer, t->id, handler);
    c->cxx->barrier();
    return t;
}

// ---------------------------------------------------------------------------------- layers

/// Sends one item below `l`: to the next layer, or as its own message of the type.
void forward(am_typed_layer& l, const std::byte* item, int dest, std::uint64_t tag) {
    if (l.next != nullptr) {
        l.next->send_tagged(item, dest, tag);
        return;
    }
    am::detail::typed_check_tag(l.type->layer, tag, l.call);
    am::detail::typed_send(l.type->layer, l.type->id, dest, tag, item, 1, l.call);
}

void check_dest(const am_typed_layer& l, int dest) {
    const int ranks = am::detail::typed_size(l.type->layer);
    if (dest < 0 || dest >= ranks) {
        am::detail::typed_fail(l.type->layer, errc::bad_rank, l.call,
                               "destination " + std::to_string(dest) + " out of range [0, " +
                                   std::to_string(ranks) + ")");
    }
}

/// Per-destination coalescing (am::coalesced<T> with item_size bytes per value). A buffer is
/// moved out before it is sent: the send polls, and handlers run meanwhile append to a fresh
/// one.
class c_coalescer final : public am_typed_layer {
  public:
    c_coalescer(am_typed* t, std::size_t bytes)
        : am_typed_layer(t, nullptr, "am_typed_layer_send"),
          _bufs(static_cast<std::size_t>(am::detail::typed_size(t->layer))) {
        _cap = bytes / t->item_size * t->item_size;
        order = 1;
        am::detail::typed_attach(t->layer, this);
    }
    ~c_coalescer() override {
        am::detail::typed_detach(type->layer, this);
        am::detail::flush_on_destruction(*this, type->layer, "am_typed_coalesce layer");
    }
    void send_tagged(const std::byte* item, int dest, std::uint64_t tag) override {
        check_dest(*this, dest);
        const std::size_t size = type->item_size;
        buffer& b = _bufs[static_cast<std::size_t>(dest)];
        while (!b.data.empty() && (b.tag != tag || b.data.size() + size > _cap)) ship(dest);
        if (b.tag != tag) {
            am::detail::typed_check_tag(type->layer, tag, call);
            b.tag = tag;
        }
        if (b.data.capacity() < _cap) b.data.reserve(_cap);
        b.data.insert(b.data.end(), item, item + size);
    }
    std::size_t flush_held() override {
        std::size_t n = 0;
        for (std::size_t d = 0; d < _bufs.size(); ++d) {
            if (_bufs[d].data.empty()) continue;
            n += _bufs[d].data.size() / type->item_size;
            ship(static_cast<int>(d));
        }
        return n;
    }
    [[nodiscard]] bool holds() const override {
        for (const buffer& b : _bufs) {
            if (!b.data.empty()) return true;
        }
        return false;
    }
    [[nodiscard]] bool coalescing() const override { return true; }

  private:
    struct buffer {
        std::vector<std::byte> data;
        std::uint64_t tag = am::detail::unset_tag;
    };
    void ship(int dest) {
        buffer& b = _bufs[static_cast<std::size_t>(dest)];
        std::vector<std::byte> out;
        out.swap(b.data);
        try {
            am::detail::typed_send(type->layer, type->id, dest, b.tag, out.data(),
                                   out.size() / type->item_size, call);
        } catch (...) {
            // Refused (the job going down): kept, unless handlers refilled the buffer meanwhile.
            if (b.data.empty()) b.data.swap(out);
            throw;
        }
    }

    std::vector<buffer> _bufs;
    std::size_t _cap = 0;  // bytes per buffer, a multiple of the item size
};

/// The bytes of a cache key: destination, then the given bytes (and the tag, for combining).
std::string cache_key(int dest, const std::byte* bytes, std::size_t n, std::uint64_t tag) {
    std::string k(sizeof dest + sizeof tag + n, '\0');
    std::memcpy(k.data(), &dest, sizeof dest);
    std::memcpy(k.data() + sizeof dest, &tag, sizeof tag);
    std::memcpy(k.data() + sizeof dest + sizeof tag, bytes, n);
    return k;
}

/// Exact duplicate elimination by an item's bytes (am::dedup_layer with am::hash_cache).
class c_dedup final : public am_typed_layer {
  public:
    c_dedup(am_typed* t, am_typed_layer* n, std::size_t max)
        : am_typed_layer(t, n, "am_typed_layer_send"), _max(max) {
        am::detail::typed_attach(t->layer, this);
    }
    ~c_dedup() override { am::detail::typed_detach(type->layer, this); }
    void send_tagged(const std::byte* item, int dest, std::uint64_t tag) override {
        check_dest(*this, dest);
        std::string k = cache_key(dest, item, type->item_size, 0);
        if (_seen.count(k) != 0) {
            ++_hits;
            return;
        }
        // Remembered before it is sent: handlers run by the send may send the same item here.
        if (_seen.size() >= _max) _seen.clear();
        const auto it = _seen.insert(std::move(k)).first;
        try {
            forward(*this, item, dest, tag);
        } catch (...) {
            _seen.erase(it);
            throw;
        }
    }
    std::size_t flush_held() override { return 0; }
    void add_counts(std::uint64_t& dedup_hits, std::uint64_t&) const override {
        dedup_hits += _hits;
    }
    [[nodiscard]] std::uint64_t count() const override { return _hits; }

  private:
    std::size_t _max;
    std::unordered_set<std::string> _seen;
    std::uint64_t _hits = 0;
};

/// Key/value combining with a C function (am::reducer with am::hash_cache): one held item per
/// destination, tag and key bytes.
class c_reducer final : public am_typed_layer {
  public:
    c_reducer(am_typed* t, am_typed_layer* n, std::size_t off, std::size_t size,
              am_typed_combine_fn_t fn, void* user, std::size_t max)
        : am_typed_layer(t, n, "am_typed_layer_send"),
          _off(off),
          _size(size),
          _fn(fn),
          _user(user),
          _max(max) {
        order = 2;
        am::detail::typed_attach(t->layer, this);
    }
    ~c_reducer() override {
        am::detail::typed_detach(type->layer, this);
        am::detail::flush_on_destruction(*this, type->layer, "am_typed_reduce layer");
    }
    void send_tagged(const std::byte* item, int dest, std::uint64_t tag) override {
        check_dest(*this, dest);
        if (tag != _checked) {  // the epoch and depth rules, once per tag
            am::detail::typed_check_tag(type->layer, tag, call);
            _checked = tag;
        }
        auto [it, fresh] = _held.try_emplace(cache_key(dest, item + _off, _size, tag));
        held& h = it->second;
        if (!fresh) {
            // An 8-aligned copy of the item, as the header promises the combine function.
            std::vector<std::uint64_t> copy(words());
            std::memcpy(copy.data(), item, type->item_size);
            _fn(h.item.data(), copy.data(), _user);
            ++_combined;
            return;
        }
        h.item.resize(words());
        std::memcpy(h.item.data(), item, type->item_size);
        h.dest = dest;
        h.tag = tag;
        if (_held.size() >= _max) (void)flush_held();
    }
    // Takes everything first (the sends poll, and handlers may hold new items meanwhile);
    // what could not be sent is held again.
    std::size_t flush_held() override {
        std::vector<held> out;
        out.reserve(_held.size());
        for (auto& [k, h] : _held) out.push_back(std::move(h));
        _held.clear();
        std::size_t i = 0;
        try {
            for (; i < out.size(); ++i) {
                forward(*this, reinterpret_cast<const std::byte*>(out[i].item.data()), out[i].dest,
                        out[i].tag);
            }
        } catch (...) {
            for (; i < out.size(); ++i) {
                const auto* b = reinterpret_cast<const std::byte*>(out[i].item.data());
                _held.try_emplace(cache_key(out[i].dest, b + _off, _size, out[i].tag),
                                  std::move(out[i]));
            }
            throw;
        }
        return out.size();
    }
    [[nodiscard]] bool holds() const override { return !_held.empty(); }
    void add_counts(std::uint64_t&, std::uint64_t& combined) const override {
        combined += _combined;
    }
    [[nodiscard]] std::uint64_t count() const override { return _combined; }

  private:
    struct held {
        std::vector<std::uint64_t> item;  // 8-aligned
        int dest = -1;
        std::uint64_t tag = 0;
    };
    [[nodiscard]] std::size_t words() const { return (type->item_size + 7) / 8; }

    std::size_t _off, _size;
    am_typed_combine_fn_t _fn;
    void* _user;
    std::size_t _max;
    std::unordered_map<std::string, held> _held;
    std::uint64_t _combined = 0;
    std::uint64_t _checked = am::detail::unset_tag;
};

/// What every layer constructor checks: the type, the layer below, the output pointer, and
/// that only the rank's thread sends through it.
void check_layer_args(const char* call, am_typed* t, am_typed_layer* next, am_typed_layer** out) {
    check_pointer(call, t->ctx.get(), out, true, "output pointer");
    if (next != nullptr && (next->type != t || !next->coalescing())) {
        fail(errc::invalid_argument, call, t->ctx.get(),
             "the next layer must be a coalescing layer (am_typed_coalesce) of the same message "
             "type");
    }
    if (am::detail::typed_hot_of(t->layer)->threaded) {
        fail(errc::bad_context, call, t->ctx.get(),
             "a C typed layer is used by the rank's thread only (not with thread_multiple or a "
             "progress thread); send through the message type (am_typed_send) instead");
    }
}

template <class F>
am_status_t make_layer(am_typed* t, am_typed_layer* next, am_typed_layer** out, const char* call,
                       F&& make) noexcept {
    if (t == nullptr) return AM_ERR_INVALID_ARGUMENT;
    if (out != nullptr) *out = nullptr;
    return c_guarded(t->ctx.get(), call, [&] {
        check_layer_args(call, t, next, out);
        *out = make();
    });
}

}  // namespace

// =============================================================================== the C API

extern "C" {

am_status_t am_typed_create(am_context_t* ctx, size_t item_size, am_typed_fn_t fn, void* user,
                            const char* name, am_typed_t** out) noexcept {
    const char* call = "am_typed_create";
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    if (out != nullptr) *out = nullptr;
    return c_guarded(ctx, call, [&] {
        check_pointer(call, ctx, reinterpret_cast<void*>(fn), true, "handler function");
        check_pointer(call, ctx, out, true, "output pointer");
        *out = create_type(ctx, item_size, fn, user, name != nullptr ? name : "am_typed");
    });
}

am_status_t am_typed_send(am_typed_t* type, const void* items, size_t count, int dest) noexcept {
    const char* call = "am_typed_send";
    if (type == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return c_guarded(type->ctx.get(), call, [&] {
        check_pointer(call, type->ctx.get(), items, count != 0, "items pointer");
        const std::uint64_t tag = am::detail::typed_send_tag(type->layer, call);
        am::detail::typed_send(type->layer, type->id, dest, tag, items, count, call);
    });
}

size_t am_typed_max_batch(const am_typed_t* type) noexcept {
    return type == nullptr ? 0 : am::detail::typed_max_batch_bytes(type->layer) / type->item_size;
}

size_t am_typed_item_size(const am_typed_t* type) noexcept {
    return type == nullptr ? 0 : type->item_size;
}

am_context_t* am_typed_context(const am_typed_t* type) noexcept {
    return type == nullptr ? nullptr : type->ctx.get();
}

am_status_t am_typed_coalesce(am_typed_t* type, size_t bytes, am_typed_layer_t** out) noexcept {
    const char* call = "am_typed_coalesce";
    return make_layer(type, nullptr, out, call, [&]() -> am_typed_layer* {
        const std::size_t room = am::detail::typed_max_batch_bytes(type->layer);
        if (bytes == 0) {
            bytes = am::detail::default_coalesce_bytes(am::detail::typed_size(type->layer), room);
        }
        if (bytes < type->item_size || bytes > room) {
            fail(errc::too_large, call, type->ctx.get(),
                 "buffer of " + std::to_string(bytes) + " bytes: it must hold one item of " +
                     std::to_string(type->item_size) +
                     " bytes and at most am_max_medium() = " + std::to_string(room) + " bytes");
        }
        return new c_coalescer(type, bytes);
    });
}

am_status_t am_typed_dedup(am_typed_t* type, am_typed_layer_t* next, size_t max_entries,
                           am_typed_layer_t** out) noexcept {
    return make_layer(type, next, out, "am_typed_dedup", [&]() -> am_typed_layer* {
        return new c_dedup(type, next, max_entries == 0 ? std::size_t{1} << 20 : max_entries);
    });
}

am_status_t am_typed_reduce(am_typed_t* type, am_typed_layer_t* next, size_t key_offset,
                            size_t key_size, am_typed_combine_fn_t combine, void* user,
                            size_t max_entries, am_typed_layer_t** out) noexcept {
    const char* call = "am_typed_reduce";
    return make_layer(type, next, out, call, [&]() -> am_typed_layer* {
        check_pointer(call, type->ctx.get(), reinterpret_cast<void*>(combine), true,
                      "combine function");
        if (key_size == 0 || key_offset > type->item_size ||
            key_size > type->item_size - key_offset) {
            fail(errc::invalid_argument, call, type->ctx.get(),
                 "key of " + std::to_string(key_size) + " bytes at offset " +
                     std::to_string(key_offset) + " outside the item of " +
                     std::to_string(type->item_size) + " bytes (or empty)");
        }
        return new c_reducer(type, next, key_offset, key_size, combine, user,
                             max_entries == 0 ? std::size_t{1} << 20 : max_entries);
    });
}

am_status_t am_typed_layer_send(am_typed_layer_t* layer, const void* item, int dest) noexcept {
    const char* call = "am_typed_layer_send";
    if (layer == nullptr) return AM_ERR_INVALID_ARGUMENT;
    am_context* c = layer->type->ctx.get();
    return c_guarded(c, call, [&] {
        check_pointer(call, c, item, true, "item pointer");
        const std::uint64_t tag = am::detail::typed_send_tag(layer->type->layer, call);
        layer->send_tagged(static_cast<const std::byte*>(item), dest, tag);
    });
}

am_status_t am_typed_layer_flush(am_typed_layer_t* layer) noexcept {
    const char* call = "am_typed_layer_flush";
    if (layer == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return c_guarded(layer->type->ctx.get(), call, [&] {
        if (layer->holds()) (void)am::detail::typed_send_tag(layer->type->layer, call);
        (void)layer->flush_held();
    });
}

uint64_t am_typed_layer_count(const am_typed_layer_t* layer) noexcept {
    return layer == nullptr ? 0 : layer->count();
}

void am_typed_layer_free(am_typed_layer_t* layer) noexcept {
    delete layer;
}

am_status_t am_typed_epoch_begin(am_context_t* ctx, int depth) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return c_guarded(ctx, "am_typed_epoch_begin",
                     [&] { am::detail::epoch_begin(layer_of(ctx), am::epoch_options{depth}); });
}

am_status_t am_typed_epoch_end(am_context_t* ctx, uint64_t value, uint64_t* sum,
                               am_typed_epoch_stats_t* stats) noexcept {
    if (ctx == nullptr) return AM_ERR_INVALID_ARGUMENT;
    return c_guarded(ctx, "am_typed_epoch_end", [&] {
        am::epoch_stats s;
        const std::uint64_t total = am::detail::epoch_end(layer_of(ctx), value, s);
        if (sum != nullptr) *sum = total;
        if (stats != nullptr) {
            *stats = am_typed_epoch_stats_t{s.epoch,        s.messages_sent, s.messages_handled,
                                            s.batches_sent, s.bytes_sent,    s.dedup_hits,
                                            s.combined,     s.waves,         s.seconds};
        }
    });
}

}  // extern "C"
