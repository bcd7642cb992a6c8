// SPDX-License-Identifier: MIT
// The Split-C layer's active-message path (the reference implementation, used where a segment
// is not mapped here): puts as long or packed medium requests, gets as requests answered by
// the data, and the handlers of both.
#include "rma_common.hpp"

#include <algorithm>
#include <cstring>
#include <string>

namespace am::detail {

using namespace rma_internal;

// A put on active messages: large blocks as long requests (one copy, into the segment), small
// ones packed into medium requests. The messages of one put travel on one (destination, lane)
// and arrive in order, so the last one, which carries the flag and the origin's `done`, runs
// after all the data is in place.
void rma_layer::put_am(const rma_shape& s, std::uint64_t flagword, counter* done) {
    const std::size_t long_min = std::min<std::size_t>(2048, _max_medium / 2);
    struct held_msg {
        bool is_long = false;
        std::uint64_t offset = 0;
        const std::byte* data = nullptr;
        std::size_t len = 0;
    } held;
    std::vector<std::byte> packed;
    bool holding = false;
    auto emit = [&](bool last) {
        const std::uint64_t fw = last ? flagword : 0;
        const std::uint64_t dn = last ? to_wire(done) : 0;
        if (held.is_long) {
            _ctx.request(s.rank, _h_put_long, std::span(held.data, held.len), held.offset, fw, dn);
        } else {
            _ctx.request(s.rank, _h_put_packed, std::span<const std::byte>(packed), fw, dn);
            packed.clear();
        }
        holding = false;
    };
    for (std::size_t i = 0; i < s.rows; ++i) {
        const std::uint64_t off = remote_offset(s, i);
        const std::byte* src = local_block(s, i);
        if (s.width >= long_min || s.width + record_bytes > _max_medium) {
            if (holding) emit(false);
            held = held_msg{true, off, src, s.width};
            holding = true;
            continue;
        }
        if (holding && (held.is_long || packed.size() + record_bytes + s.width > _max_medium)) {
            emit(false);
        }
        if (!holding) {
            held = held_msg{};
            holding = true;
        }
        put_record(packed, off, static_cast<std::uint32_t>(s.width));
        packed.insert(packed.end(), src, src + s.width);
    }
    if (!holding) {
        if (flagword == 0 && done == nullptr) return;
        held = held_msg{};  // an empty put still counts its flag
    }
    emit(true);
}

void rma_layer::get_am(const rma_shape& s, counter* flag) {
    if (s.rows == 0) {
        flag->add();
        return;
    }
    if (s.rows == 1 && s.width <= _max_medium) {
        _ctx.request(s.rank, _h_get, remote_offset(s, 0), std::uint64_t{s.width}, to_wire(s.local),
                     to_wire(flag));
        return;
    }
    const auto own = reinterpret_cast<std::uintptr_t>(_bases[static_cast<std::size_t>(_rank)]);
    const auto dst = reinterpret_cast<std::uintptr_t>(s.local);
    if (s.rows == 1 && dst >= own && dst - own <= _segment_bytes - s.width) {
        // The destination is in this rank's segment: one long reply writes it in place.
        _ctx.request(s.rank, _h_get_long, remote_offset(s, 0), std::uint64_t{s.width},
                     std::uint64_t{dst - own}, to_wire(flag));
        return;
    }
    std::vector<rma_piece> pieces;
    for (std::size_t i = 0; i < s.rows; ++i) {
        const std::uint64_t off = remote_offset(s, i);
        std::byte* dst_block = local_block(s, i);
        for (std::size_t done = 0; done < s.width; done += _max_medium) {
            const std::size_t len = std::min(_max_medium, s.width - done);
            pieces.push_back(rma_piece{off + done, dst_block + done, len});
        }
    }
    getv_am(s.rank, std::move(pieces), flag);
}

struct rma_layer::getv_record {
    std::vector<rma_piece> pieces;
    std::size_t remaining;  // replies still to come
    counter* flag;
};

// A general get: requests list {offset, length} records, each reply carries the bytes of its
// records back. The record of the whole operation stays here; replies name it by address.
void rma_layer::getv_am(int rank, std::vector<rma_piece> pieces, counter* flag) {
    struct group {
        std::size_t first, count;
    };
    std::vector<group> groups;
    const std::size_t max_records = _max_medium / record_bytes;
    std::size_t bytes = 0;
    for (std::size_t i = 0; i < pieces.size(); ++i) {
        if (groups.empty() || bytes + pieces[i].len > _max_medium ||
            groups.back().count == max_records) {
            groups.push_back(group{i, 0});
            bytes = 0;
        }
        ++groups.back().count;
        bytes += pieces[i].len;
    }
    // Every request is counted before the first is sent: a send polls and replies may run.
    auto* rec = new getv_record{std::move(pieces), groups.size(), flag};
    std::vector<std::byte> desc;
    for (const group& g : groups) {
        desc.clear();
        for (std::size_t i = g.first; i < g.first + g.count; ++i) {
            put_record(desc, rec->pieces[i].remote, static_cast<std::uint32_t>(rec->pieces[i].len));
        }
        _ctx.request(rank, _h_getv, std::span<const std::byte>(desc), to_wire(rec),
                     std::uint64_t{g.first});
    }
}

// ----------------------------------------------------------------------------------- handlers

void rma_layer::finish_put(token& t, std::uint64_t flagword, std::uint64_t done) {
    if ((flagword & flag_mask) != 0) {
        on_flag(t, static_cast<std::uint32_t>((flagword & flag_mask) - 1));
    }
    if (done != 0) t.reply(_h_ack, done);
}

void rma_layer::on_flag(token& t, std::uint32_t id) {
    counter* k = _counters.find(id);
    if (k == nullptr) {
        fail(errc::invalid_argument, "am::context::put", _rank,
             "the flag of a put from rank " + std::to_string(t.source()) + " is counter #" +
                 std::to_string(id) +
                 ", which does not exist on this rank: create the counters used as remote "
                 "flags in the same order on every rank, before the puts that name them");
    }
    k->add();
}

void rma_layer::on_put_done(token& t, std::uint64_t flagword, std::uint64_t done) {
    finish_put(t, flagword, done);
}

void rma_layer::on_put_packed(token& t, std::span<const std::byte> payload, std::uint64_t flagword,
                              std::uint64_t done) {
    std::byte* base = _bases[static_cast<std::size_t>(_rank)];
    std::size_t pos = 0;
    while (pos < payload.size()) {
        std::uint64_t off = 0;
        std::uint32_t len = 0;
        if (payload.size() - pos < record_bytes) {
            check_remote(t.source(), 0, ~std::uint64_t{0}, "a truncated put record");
        }
        get_record(payload.data() + pos, off, len);
        pos += record_bytes;
        if (payload.size() - pos < len) {
            check_remote(t.source(), off, ~std::uint64_t{0},
                         "a put record longer than its message");
        }
        check_remote(t.source(), off, len, "a put");
        std::memcpy(base + off, payload.data() + pos, len);
        pos += len;
    }
    finish_put(t, flagword, done);
}

void rma_layer::on_get(token& t, std::uint64_t offset, std::uint64_t len, std::uint64_t dst,
                       std::uint64_t flag) {
    check_remote(t.source(), offset, len, "a get");
    const std::byte* base = _bases[static_cast<std::size_t>(_rank)];
    t.reply(_h_get_data, std::span(base + offset, len), dst, flag);
}

void rma_layer::on_get_long(token& t, std::uint64_t offset, std::uint64_t len,
                            std::uint64_t dst_offset, std::uint64_t flag) {
    check_remote(t.source(), offset, len, "a get");
    const std::byte* base = _bases[static_cast<std::size_t>(_rank)];
    t.reply(_h_get_long_data, std::span(base + offset, len), dst_offset, flag);
}

void rma_layer::on_getv(token& t, std::span<const std::byte> desc, std::uint64_t record,
                        std::uint64_t first) {
    if (desc.size() % record_bytes != 0) {
        check_remote(t.source(), 0, ~std::uint64_t{0}, "a truncated get record");
    }
    const std::byte* base = _bases[static_cast<std::size_t>(_rank)];
    _scratch.clear();
    for (std::size_t pos = 0; pos < desc.size(); pos += record_bytes) {
        std::uint64_t off = 0;
        std::uint32_t len = 0;
        get_record(desc.data() + pos, off, len);
        check_remote(t.source(), off, len, "a get");
        _scratch.insert(_scratch.end(), base + off, base + off + len);
    }
    t.reply(_h_getv_data, std::span<const std::byte>(_scratch), record, first,
            std::uint64_t{desc.size() / record_bytes});
}

void rma_layer::on_getv_data(token& /*t*/, std::span<const std::byte> data, std::uint64_t record,
                             std::uint64_t first, std::uint64_t count) {
    auto* rec = reinterpret_cast<getv_record*>(static_cast<std::uintptr_t>(record));
    std::size_t pos = 0;
    for (std::size_t i = first; i < first + count && i < rec->pieces.size(); ++i) {
        const rma_piece& p = rec->pieces[i];
        if (data.size() - pos < p.len) break;
        std::memcpy(p.local, data.data() + pos, p.len);
        pos += p.len;
    }
    if (pos != data.size() || first + count > rec->pieces.size()) {
        fail(errc::invalid_argument, "am::rma", _rank, "a get reply does not match its request");
    }
    if (--rec->remaining == 0) {
        rec->flag->add();
        delete rec;
    }
}

}  // namespace am::detail
