// SPDX-License-Identifier: MIT
/// @file
/// The typed layer (AM++): message types, per-destination coalescing, duplicate elimination,
/// key/value combining, and epochs that end only when every message sent in them — including
/// messages sent by handlers, to any depth — has been handled on every rank.
///
/// ```cpp
/// struct visit { std::uint64_t vertex; std::uint32_t level; };
/// am::message_type<visit> visits(ctx, [&](const visit& v) { ... });   // collective
/// auto sender = am::coalesce(visits, {.bytes = 16 << 10});
/// {
///     am::epoch epoch(ctx);             // collective
///     sender.send(visit{v, 1}, owner(v));
/// }                                     // every visit, nested ones too, has been handled
/// ```
///
/// Thread-safety: by default a rank's typed objects are used by the rank's thread (and its
/// handlers). With `config::thread_multiple` (or `progress_thread`) several threads of a rank
/// may send through one `message_type` or coalescing layer at once; `dedup` and
/// `reduce_by_key` layers are then used by one thread each.
#pragma once

#include <am/typed/coalesce.hpp>
#include <am/typed/dedup.hpp>
#include <am/typed/epoch.hpp>
#include <am/typed/message_type.hpp>
#include <am/typed/reduce.hpp>
#include <am/typed/route.hpp>
