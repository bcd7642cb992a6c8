// SPDX-License-Identifier: MIT
// The toy layer: one handler, one counter per rank, built on <am/core/layer.hpp> and the public
// API only (docs/layers.md walks through it).
#include "tally.hpp"

#include <am/core/layer.hpp>

#include <atomic>
#include <string>

namespace tally {
namespace {

constexpr am::core::key key{"tally (example)"};

class layer final : public am::core::layer {
  public:
    // Runs on every rank before any message can arrive: the handler gets the same index
    // everywhere. Handlers run one at a time per rank, unless a progress thread shares the
    // context (then `total` is read concurrently: hence the atomic).
    layer(am::context& ctx, const am::config& /*cfg*/)
        : add_handler(ctx.handler([this](am::token&, std::uint64_t n) {
              total.fetch_add(n, std::memory_order_relaxed);
          })) {}
    [[nodiscard]] std::string report() const override {
        return "tally: total " + std::to_string(total.load()) + "\n";  // in the AM_STATS report
    }

    am::handler<am::category::short_am, std::uint64_t> add_handler;
    std::atomic<std::uint64_t> total{0};
};

layer& of(const am::context& ctx, const char* call) {
    return am::core::get<layer>(ctx, key, call);  // am::error if the layer is not attached
}

}  // namespace

void add(am::context& ctx, int owner, std::uint64_t n) {
    ctx.request(owner, of(ctx, "tally::add").add_handler, n);
}

std::uint64_t total(const am::context& ctx) {
    return of(ctx, "tally::total").total.load(std::memory_order_relaxed);
}

const am::runtime::layer_entry entry{&key, &am::runtime::make_layer<layer>};

}  // namespace tally
