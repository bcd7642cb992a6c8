// SPDX-License-Identifier: MIT
/// @file
/// Machinery of <am/msg.hpp>, not part of the API: the entry points of the message layer,
/// implemented in src/msg/msg_layer.cpp. `call` names the API call in errors.
#pragma once

#include <cstddef>
#include <span>

namespace am {

class context;
class request;
struct message_status;

namespace msg::detail {

struct msg_op;

void msg_send(context& c, int dest, int tag, std::span<const std::byte> data);
message_status msg_recv(context& c, int source, int tag, std::span<std::byte> buffer);
request msg_isend(context& c, int dest, int tag, std::span<const std::byte> data, const char* call);
request msg_irecv(context& c, int source, int tag, std::span<std::byte> buffer, const char* call);

}  // namespace msg::detail

// The names src/msg uses (it predates the layer namespaces): kept until it moves.
namespace detail {
using msg::detail::msg_irecv;
using msg::detail::msg_isend;
using msg::detail::msg_op;
using msg::detail::msg_recv;
using msg::detail::msg_send;
}  // namespace detail

}  // namespace am
