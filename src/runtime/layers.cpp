// SPDX-License-Identifier: MIT
// The one list of the library's layers. To add a layer: its folder and library (docs/layers.md),
// and one line below.
#include "layers.hpp"

#include "../coll/coll_layer.hpp"
#include "../dist/dist_layer.hpp"
#include "../msg/msg_layer.hpp"
#include "../oam/oam_sched.hpp"
#include "../rma/rma_layer.hpp"
#include "../tam/tam_machine.hpp"
#include "../typed/typed_layer.hpp"
#include "../window/window_layer.hpp"

namespace am::runtime {
namespace {

// The optimistic-AM layer first: every RPC and optimistic handler finds it (a scan of this list).
constexpr layer_entry library_layers[] = {
    {&detail::oam_sched::key, &make_layer<detail::oam_sched>},
    {&detail::rma_layer::key, &make_layer<detail::rma_layer>},
    {&detail::msg_layer::key, &make_layer<detail::msg_layer>},
    {&detail::typed_layer::key, &make_layer<detail::typed_layer>},
    {&detail::window_layer::key, &make_layer<detail::window_layer>},
    {&tam::detail::machine::key, &make_layer<tam::detail::machine>},
    {&coll::detail::coll_layer::key, &make_layer<coll::detail::coll_layer>},
    {&detail::dist_layer::key, &make_layer<detail::dist_layer>},
};

}  // namespace

layer_stack::layer_stack(context& ctx, const config& cfg, std::span<const layer_entry> extra) {
    for (const layer_entry& e : library_layers) add(ctx, cfg, e);
    for (const layer_entry& e : extra) add(ctx, cfg, e);
}

layer_stack::~layer_stack() {
    while (!_layers.empty()) _layers.pop_back();
}

void layer_stack::add(context& ctx, const config& cfg, const layer_entry& e) {
    _layers.push_back(e.make(ctx, cfg));
    core::attach(ctx, *e.key, *_layers.back());
}

std::string layer_stack::report() const {
    std::string text;
    for (const auto& l : _layers) text += l->report();
    return text;
}

}  // namespace am::runtime
