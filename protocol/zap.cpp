// SPDX-License-Identifier: MIT
#include "protocol/zap.hpp"

#include <algorithm>
#include <boost/json.hpp>

#include "protocol/event_check.hpp"
#include "protocol/event_json.hpp"
#include "protocol/host.hpp"

namespace comb::protocol {
namespace {

/// A request signed a little ahead of the relay's clock is still the payer's.
constexpr std::int64_t zap_request_clock_skew_seconds = 300;

std::optional<event> request_in(const event& receipt) {
  const std::string* description = first_tag_value(receipt, "description");
  if (!description)
    return std::nullopt;
  boost::system::error_code ec;
  boost::json::parse_options options;
  options.max_depth = 8;
  auto json = boost::json::parse(*description, ec, {}, options);
  if (ec)
    return std::nullopt;
  auto request = event_from_json(json, protocol_limits{});
  if (!request.ok() || request->kind != zap_request_kind || verify_event(request.value()))
    return std::nullopt;
  return std::move(request.value());
}

bool names_relay(const event& request, std::string_view host) {
  for (const auto& tag : request.tags) {
    if (tag.empty() || tag[0] != "relays")
      continue;
    for (std::size_t i = 1; i < tag.size(); ++i)
      if (host_of_relay_url(tag[i]) == host)
        return true;
  }
  return false;
}

} // namespace

std::optional<bytes32> zap_sender(const event& receipt, std::string_view host, std::int64_t now) {
  if (receipt.kind != zap_receipt_kind)
    return std::nullopt;
  try {
    auto request = request_in(receipt);
    if (!request || !names_relay(*request, host))
      return std::nullopt;
    if (request->created_at < now - max_zap_request_age_seconds
        || request->created_at > now + zap_request_clock_skew_seconds)
      return std::nullopt;
    const std::string* zapped = first_tag_value(*request, "p");
    const std::string* receipt_zapped = first_tag_value(receipt, "p");
    if (!zapped || !receipt_zapped || *zapped != *receipt_zapped)
      return std::nullopt;
    return request->pubkey;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

} // namespace comb::protocol
