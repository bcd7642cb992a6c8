// SPDX-License-Identifier: MIT
// How the runtime attaches layers to a rank (docs/layers.md). The library's own layers are
// listed in src/runtime/layers.cpp; a program that brings a layer of its own (the toy layer in
// examples/toy_layer) starts its ranks with `run_with_layers`, which attaches the library's
// layers and then the given ones, on every rank in the same order.
#pragma once

#include <am/context.hpp>
#include <am/core/layer.hpp>

#include <memory>
#include <span>

namespace am::runtime {

/// One kind of layer: its key and how to make its per-rank object. `make` runs on the rank's
/// thread right after the context exists, before any message can be dispatched; it may
/// register handlers (they get the same index on every rank).
struct layer_entry {
    const core::key* key;
    std::unique_ptr<core::layer> (*make)(context& ctx, const config& cfg);
};

/// `make` for a layer class constructible from (context&, const config&).
template <class L>
std::unique_ptr<core::layer> make_layer(context& ctx, const config& cfg) {
    return std::make_unique<L>(ctx, cfg);
}

/// am::run with `extra` layers after the library's own. The entries must be the same, in the
/// same order, on every rank.
int run_with_layers(const config& cfg, std::span<const layer_entry> extra, const rank_main& fn);

}  // namespace am::runtime
