// SPDX-License-Identifier: MIT
#include "protocol/relay_info.hpp"

#include <boost/json.hpp>

namespace comb::protocol {
namespace json = boost::json;

std::string render_relay_info(const relay_info& info) {
  json::array nips;
  for (int nip : info.supported_nips)
    nips.push_back(nip);
  const auto& l = info.limits;
  json::object limitation{
    {"max_message_length", l.max_message_bytes},
    {"max_subscriptions", l.max_subscriptions_per_connection},
    {"max_filters", l.max_filters_per_req},
    {"max_limit", l.max_limit},
    {"max_subid_length", l.max_subscription_id_bytes},
    {"max_event_tags", l.max_tags_per_event},
    // NIP-11 counts characters; the bound is in bytes, and a character is at most 4 of them:
    // what is published is what is always accepted.
    {"max_content_length", l.max_content_bytes / 4},
    // A filter without a limit gets this many (more only for ids and replaceable authors).
    {"default_limit", l.max_limit},
    {"created_at_upper_limit", info.created_at_upper_seconds},
    {"auth_required", info.auth_required},
    {"restricted_writes", info.restricted_writes},
    {"payment_required", false},
  };
  if (info.created_at_lower_seconds > 0)
    limitation["created_at_lower_limit"] = info.created_at_lower_seconds;
  json::object document{
    {"name", info.name},
    {"description", info.description},
    {"self", info.self_pubkey},
    {"contact", info.contact},
    {"software", info.software},
    {"version", info.version},
    {"supported_nips", std::move(nips)},
    {"limitation", std::move(limitation)},
  };
  if (!info.owner_pubkey.empty())
    document["pubkey"] = info.owner_pubkey;
  if (!info.icon.empty())
    document["icon"] = info.icon;
  return json::serialize(document);
}

} // namespace comb::protocol
