// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <cstdint>

namespace comb::protocol {

/// Bounds on what a client may send, passed explicitly to every parser (never read from a
/// global). Defaults sit between strfry's and Buzz's.
struct protocol_limits {
  /// Largest text frame accepted; larger frames close the connection. Room for a REQ naming
  /// 10,000 authors (a members page's profile load: about 670 KB).
  std::size_t max_message_bytes = 1024 * 1024;
  /// JSON nesting; an event needs 4 (frame, event, tags, tag).
  std::size_t max_json_depth = 16;
  /// NIP-01 says subscription ids are at most 64 characters.
  std::size_t max_subscription_id_bytes = 64;
  /// Flotilla opens three REQs per room the user joined in a space, and 17 for the space, all
  /// before any is closed: a member of 150 rooms holds 467. Each holds at least one filter,
  /// whose budget (connection_policy::max_filters, 500) bounds what they cost.
  std::size_t max_subscriptions_per_connection = 500;
  std::size_t max_filters_per_req = 20;
  /// Values in one filter field (ids, authors, kinds or one tag). As many as a connection's
  /// whole budget (max_open_filter_values): welshman merges a members page's profile loads into
  /// one `authors` list as long as the community (Flotilla's SpaceMembers).
  std::size_t max_values_per_filter_field = 10000;
  /// A requested `limit` above this is lowered to it; an absent one becomes it, or up to twice
  /// it for a filter that cannot match more (protocol::effective_limit).
  std::uint32_t max_limit = 5000;
  /// A follow list of 5,000 people (Flotilla publishes the user's to each space it joins).
  std::size_t max_tags_per_event = 5000;
  std::size_t max_tag_value_bytes = 1024 * 64;
  /// Strings in all of an event's tags together. Each costs a string of its own once parsed
  /// (32 bytes here), however short on the wire ("" is 3 bytes): without this bound a frame of
  /// empty strings would parse to eleven times its size. A follow list of 5,000 people with
  /// relay and petname is 20,000.
  std::size_t max_tag_elements_per_event = 20000;
  std::size_t max_content_bytes = 256 * 1024;
};

} // namespace comb::protocol
