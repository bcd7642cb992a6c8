// SPDX-License-Identifier: MIT
// Every incoming header is validated before dispatch: forged messages written straight into
// the transport (bypassing the checks of the send path) are counted as bad headers, reported,
// and never run; good messages around them are handled in order. White-box: this test uses
// the core's wire format (src/core/wire.hpp) and the transport behind a context.
#include "support/spmd.hpp"

#include "core/context_impl.hpp"
#include "core/wire.hpp"

namespace {

using am_test::spmd_test;
namespace detail = am::detail;

class validation : public spmd_test {};

// Writes one raw message to `dest` on the request lane, polling while the ring is full.
void inject(am::context& ctx, int dest, const std::vector<std::byte>& msg) {
    am::transport::transport& tp = detail::access::impl(ctx)->transport();
    for (;;) {
        std::byte* p = tp.try_reserve(dest, 0, msg.size());
        if (p != nullptr) {
            if (!msg.empty()) std::memcpy(p, msg.data(), msg.size());
            tp.commit(dest, 0, p, msg.size());
            return;
        }
        (void)ctx.poll();
    }
}

std::vector<std::byte> message(std::uint32_t handler, am::category kind, unsigned nargs,
                               std::uint32_t source, std::size_t extra) {
    const detail::wire_header h{static_cast<std::uint16_t>(handler),
                                static_cast<std::uint8_t>(kind), static_cast<std::uint8_t>(nargs),
                                source};
    std::vector<std::byte> m(detail::fixed_bytes(nargs) + extra);
    std::memcpy(m.data(), &h, sizeof h);
    return m;
}

TEST_P(validation, forged_headers_are_dropped) {
    const int rc = run([](am::context& ctx) {
        const int n = ctx.size(), me = ctx.rank();
        const auto src = static_cast<std::uint32_t>(me);
        am::counter good(ctx), forged_ran(ctx);
        std::uint64_t next = 0;
        auto s = ctx.handler([&](am::token&, std::uint64_t v) {
            if (v >= 1000) {
                forged_ran.add();
                return;
            }
            EXPECT_EQ(v, next) << "good messages out of order";
            next = v + 1;
            good.add();
        });
        auto m = ctx.handler([&](am::token&, std::span<const std::byte>) { forged_ran.add(); });
        auto l = ctx.handler([&](am::token&, std::span<std::byte>) { forged_ran.add(); });
        ctx.barrier();
        const int right = (me + 1) % n;
        const std::size_t seg = ctx.segment().size();
        const auto with_arg = [](std::vector<std::byte> msg, std::uint64_t v) {
            std::memcpy(msg.data() + sizeof(detail::wire_header), &v, 8);
            return msg;
        };
        const auto with_trailer = [](std::vector<std::byte> msg, std::uint64_t off,
                                     std::uint64_t len) {
            const std::uint64_t t[2] = {off, len};
            std::memcpy(msg.data() + msg.size() - sizeof t, t, sizeof t);
            return msg;
        };
        const auto resized = [](std::vector<std::byte> msg, std::size_t len) {
            msg.resize(len);
            return msg;
        };
        using am::category;
        std::vector<std::vector<std::byte>> forged = {
            std::vector<std::byte>(4),                           // shorter than a header
            message(999, category::short_am, 1, src, 0),         // unknown handler
            message(UINT16_MAX, category::short_am, 1, src, 0),  // unknown handler
            with_arg(message(s.index, category::short_am, 1, src + 1, 0), 1000),  // wrong source
            with_arg(message(s.index, category::medium, 1, src, 0), 1001),        // wrong category
            message(s.index, category::short_am, 3, src, 0),  // wrong argument count
            with_arg(message(s.index, category::short_am, 1, src, 8), 1002),  // short + payload
            resized(message(s.index, category::short_am, 1, src, 0), 12),     // truncated arguments
            message(m.index, category::medium, 0, src, ctx.max_medium() + 1),  // medium too big
            message(l.index, category::long_am, 0, src, 8),                    // bad long length
            with_trailer(message(l.index, category::long_am, 0, src, detail::long_trailer), seg,
                         1),  // long payload past the segment
            with_trailer(message(l.index, category::long_am, 0, src, detail::long_trailer), 8,
                         UINT64_MAX - 4),  // long length that wraps
        };
        std::uint64_t v = 0;
        for (const auto& msg : forged) {
            ctx.request(right, s, v++);  // good messages between the forged ones
            inject(ctx, right, msg);
        }
        ctx.request(right, s, v++);
        good.wait(v);
        const am::stats st = ctx.stats();
        EXPECT_EQ(st.bad_headers, forged.size());
        EXPECT_EQ(forged_ran.value(), 0u) << "a forged message ran a handler";
        EXPECT_EQ(st.handlers[s.index].received, v);
        EXPECT_EQ(st.handlers[m.index].received, 0u);
        EXPECT_EQ(st.handlers[l.index].received, 0u);
        ctx.barrier();
    });
    ASSERT_EQ(rc, 0);
}

AM_INSTANTIATE(validation, am_test::make_params({1, 2, 4}, {1, 2, 4}));

}  // namespace
