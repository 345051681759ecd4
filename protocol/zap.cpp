// SPDX-License-Identifier: MIT
#include "protocol/zap.hpp"

#include <algorithm>
#include <array>
#include <string>
#include <vector>
#include <boost/json.hpp>

#include "protocol/event_check.hpp"
#include "protocol/event_json.hpp"
#include "protocol/hex.hpp"
#include "protocol/host.hpp"

namespace comb::protocol {
namespace {

/// A Lightning invoice is a few hundred bytes; one with many route hints, a few KiB.
constexpr std::size_t max_bolt11_bytes = 4096;

/// A request signed a little ahead of the relay's clock is still the payer's.
constexpr std::int64_t zap_request_clock_skew_seconds = 300;

/// The zap request in the receipt's description, its signature not checked yet.
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
  if (!request.ok() || request->kind != zap_request_kind)
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

/// The values of every `name` tag, in order.
std::vector<std::string> values_of(const event& ev, std::string_view name) {
  std::vector<std::string> values;
  for (const auto& tag : ev.tags)
    if (tag.size() >= 2 && tag[0] == name)
      values.push_back(tag[1]);
  return values;
}

/// NIP-57's receipt, and nothing more: empty content, only its tags, naming what the request
/// names. Whoever holds a member's request (a Lightning service, any member) could otherwise
/// sign receipts of any content and tags (a room's `h`, other targets) and pass them off as it.
bool is_receipt_of(const event& receipt, const event& request) {
  constexpr std::array<std::string_view, 8> receipt_tags{"p", "P", "e", "a", "k", "bolt11", "description", "preimage"};
  if (!receipt.content.empty())
    return false;
  for (const auto& tag : receipt.tags)
    if (tag.empty() || std::find(receipt_tags.begin(), receipt_tags.end(), tag[0]) == receipt_tags.end())
      return false;
  // Each at most once (P: checked with the sender, below).
  auto bolt11 = values_of(receipt, "bolt11");
  auto preimage = values_of(receipt, "preimage");
  if (bolt11.size() > 1 || preimage.size() > 1 || values_of(receipt, "k").size() > 1)
    return false;
  if (!bolt11.empty() && bolt11.front().size() > max_bolt11_bytes)
    return false;
  if (!preimage.empty() && !array_from_hex<32>(preimage.front()))
    return false;
  auto zapped = values_of(request, "p");
  if (zapped.size() != 1 || values_of(receipt, "p") != zapped || values_of(receipt, "description").size() != 1)
    return false;
  if (values_of(receipt, "e") != values_of(request, "e") || values_of(receipt, "a") != values_of(request, "a"))
    return false;
  auto sender = values_of(receipt, "P");
  return sender.empty() || (sender.size() == 1 && sender.front() == to_hex(request.pubkey));
}

/// The sender of `receipt`, its request naming `host` and made around `now` when they are given.
std::optional<bytes32> sender_of(const event& receipt, std::optional<std::string_view> host,
                                 std::optional<std::int64_t> now) {
  if (receipt.kind != zap_receipt_kind)
    return std::nullopt;
  try {
    auto request = request_in(receipt);
    if (!request || (host && !names_relay(*request, *host)))
      return std::nullopt;
    if (now && (request->created_at < *now - max_zap_request_age_seconds
                || request->created_at > *now + zap_request_clock_skew_seconds))
      return std::nullopt;
    // The signature last: an unauthenticated client may send these, and the checks above are cheap.
    if (!is_receipt_of(receipt, *request) || verify_event(*request))
      return std::nullopt;
    return request->pubkey;
  } catch (const std::exception&) {
    return std::nullopt;
  }
}

} // namespace

std::optional<bytes32> zap_sender(const event& receipt, std::string_view host, std::int64_t now) {
  return sender_of(receipt, host, now);
}

std::optional<bytes32> archived_zap_sender(const event& receipt) {
  return sender_of(receipt, std::nullopt, std::nullopt);
}

} // namespace comb::protocol
