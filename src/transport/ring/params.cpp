// SPDX-License-Identifier: MIT
#include "params.hpp"

#include <am/error.hpp>

#include <string>

namespace am::transport::ring {
namespace {

std::size_t pow2_at_least(std::size_t v) {
    std::size_t p = 1;
    while (p < v) p <<= 1;
    return p;
}

}  // namespace

region_params params_for(const config& cfg) {
    if (cfg.ranks < 1 || cfg.ranks > 4096) {
        throw error(errc::invalid_argument,
                    "am::run: " + std::to_string(cfg.ranks) + " ranks is outside [1, 4096]");
    }
    constexpr std::size_t min_ring = 1024, max_ring = std::size_t{1} << 30;
    std::size_t ring = cfg.ring_bytes;
    if (ring == 0) {  // 256 KiB up to 16 ranks, then shrinking to keep n² rings affordable
        ring = cfg.ranks <= 16 ? (std::size_t{256} << 10)
                               : pow2_at_least((std::size_t{4} << 20) / cfg.ranks);
        if (ring < (std::size_t{16} << 10)) ring = std::size_t{16} << 10;
    }
    if (ring > max_ring) {
        throw error(errc::invalid_argument, "am::run: ring of " + std::to_string(ring) +
                                                " bytes exceeds the limit of 1 GiB");
    }
    region_params p;
    p.ranks = cfg.ranks;
    p.ring_bytes = pow2_at_least(ring < min_ring ? min_ring : ring);
    p.segment_bytes = (cfg.segment_bytes + 4095) / 4096 * 4096;
    return p;
}

}  // namespace am::transport::ring
