// SPDX-License-Identifier: MIT
#include "actors/community/stored_events.hpp"

#include <boost/json.hpp>
#include <memory>

#include "protocol/event_json.hpp"

namespace comb::actors {
namespace {

/// Relay-written lists of large communities are large; they come from our own database.
protocol::protocol_limits stored_event_limits() {
  protocol::protocol_limits limits;
  limits.max_tags_per_event = 10'000'000;
  limits.max_tag_elements_per_event = 40'000'000;
  limits.max_content_bytes = 1 << 30;
  return limits;
}

} // namespace

std::optional<live_event> live_from_stored(std::string raw) {
  boost::system::error_code ec;
  auto json = boost::json::parse(raw, ec);
  if (ec)
    return std::nullopt;
  auto ev = protocol::event_from_json(json, stored_event_limits());
  if (!ev)
    return std::nullopt;
  return live_event{std::make_shared<const protocol::event>(std::move(ev).value()),
                    std::make_shared<const std::string>(std::move(raw))};
}

} // namespace comb::actors
