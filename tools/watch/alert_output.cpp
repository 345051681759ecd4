// SPDX-License-Identifier: MIT
#include "tools/watch/alert_output.hpp"

#include <boost/json.hpp>

#include "protocol/nip19.hpp"

namespace comb::watch {
namespace {

/// Summaries name this many members and count the rest, so a line stays readable.
constexpr std::size_t named_in_summary = 3;

std::string npub_of(const pubkey_hex& key) {
  auto bytes = protocol::array_from_hex<32>(key);
  return bytes ? protocol::encode_nip19("npub", *bytes) : key;
}

} // namespace

std::string render_alert_text(const alert& a, std::string_view community) {
  if (!a.summary && a.members.size() == 1)
    return "new member in " + std::string(community) + ": " + npub_of(a.members.front());
  std::string line = std::to_string(a.members.size()) + " new members in " + std::string(community)
                     + ": ";
  for (std::size_t i = 0; i < a.members.size() && i < named_in_summary; ++i)
    line += (i ? ", " : "") + npub_of(a.members[i]);
  if (a.members.size() > named_in_summary)
    line += " and " + std::to_string(a.members.size() - named_in_summary) + " more";
  return line;
}

std::string render_alert_json(const alert& a, std::string_view community, std::int64_t at) {
  boost::json::array members;
  for (const auto& key : a.members)
    members.emplace_back(key);
  boost::json::object out;
  out["community"] = community;
  out["members"] = std::move(members);
  out["summary"] = a.summary;
  out["at"] = at;
  return boost::json::serialize(out);
}

std::vector<std::string> alert_environment(const alert& a, std::string_view community,
                                           std::string_view json) {
  std::string keys;
  for (std::size_t i = 0; i < a.members.size() && i < members_in_environment; ++i)
    keys += (keys.empty() ? "" : " ") + a.members[i];
  std::vector<std::string> environment{
    "COMB_ALERT_COMMUNITY=" + std::string(community),
    "COMB_ALERT_MEMBERS=" + keys,
    "COMB_ALERT_COUNT=" + std::to_string(a.members.size()),
  };
  // Empty past the bound, not left out: one inherited from comb-watch's own environment would
  // pass through.
  environment.push_back("COMB_ALERT_JSON=" + std::string(json.size() <= json_in_environment ? json : ""));
  return environment;
}

} // namespace comb::watch
