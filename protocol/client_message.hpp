// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/filter.hpp"
#include "protocol/limits.hpp"
#include "protocol/result.hpp"

namespace comb::protocol {

struct event_message {
  event ev;
};

struct req_message {
  std::string subscription_id;
  std::vector<filter> filters;
};

struct count_message {
  std::string subscription_id;
  std::vector<filter> filters;
};

struct close_message {
  std::string subscription_id;
};

struct auth_message {
  event ev;
};

using client_message =
  std::variant<event_message, req_message, count_message, close_message, auth_message>;

/// How a refused frame must be answered: OK for an event whose id could be read, CLOSED for a
/// subscription whose id could be read, NOTICE otherwise.
enum class reply_kind { notice, ok, closed };

struct frame_rejection {
  reply_kind reply = reply_kind::notice;
  /// The event id (hex) for OK, the subscription id for CLOSED; empty for NOTICE.
  std::string reference;
  rejection why;
};

/// How to refuse a frame that is not parsed (refused for its size before it is read): OK false
/// when it is an EVENT or AUTH whose id can be read, CLOSED when it is a REQ or COUNT whose
/// subscription id opens it, NOTICE otherwise. A scan, never a parse.
[[nodiscard]] frame_rejection refusal_of_unread(std::string_view frame, rejection why,
                                                const protocol_limits& limits);

/// One text frame from a client into a message. Never throws; every malformed frame (bad JSON,
/// wrong shape, too large, too deep) becomes a `frame_rejection`. Signatures are not checked here.
[[nodiscard]] result<client_message, frame_rejection>
parse_client_message(std::string_view frame, const protocol_limits& limits);

} // namespace comb::protocol
