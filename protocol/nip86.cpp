// SPDX-License-Identifier: MIT
#include "protocol/nip86.hpp"

#include <algorithm>
#include <array>
#include <boost/json.hpp>

namespace comb::protocol {
namespace json = boost::json;
namespace {

using method = management_method;

constexpr std::array<std::string_view, management_method_count> method_names{
  "supportedmethods",  "banpubkey",     "unbanpubkey",     "listbannedpubkeys",
  "allowpubkey",       "unallowpubkey", "listallowedpubkeys", "banevent",
  "allowevent",        "listbannedevents", "changerelayname", "changerelaydescription",
  "changerelayicon",   "listrooms",     "listroommembers", "listclaims",
  "createclaim",       "deleteclaim",   "listmethodassignees",
};

using parse_result = result<management_request, management_parse_error>;

parse_result bad_params(std::string_view name, std::string message) {
  return management_parse_error{false, std::move(message), std::string(name)};
}

bool takes_target(method m) {
  switch (m) {
    case method::ban_pubkey:
    case method::unban_pubkey:
    case method::allow_pubkey:
    case method::unallow_pubkey:
    case method::ban_event:
    case method::allow_event: return true;
    default: return false;
  }
}

bool takes_text(method m) {
  return m == method::change_relay_name || m == method::change_relay_description
         || m == method::change_relay_icon || m == method::list_room_members
         || m == method::create_claim || m == method::delete_claim;
}

/// Methods whose one string param may not be empty.
bool needs_text(method m) {
  return m == method::list_room_members || m == method::create_claim || m == method::delete_claim;
}

/// A new code must be hard to guess and survive a link and a tag unchanged (RFC 3986's
/// unreserved characters).
bool is_acceptable_chosen_claim(std::string_view claim) {
  auto unreserved = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-'
           || c == '.' || c == '_' || c == '~';
  };
  return claim.size() >= min_chosen_claim_bytes && std::all_of(claim.begin(), claim.end(), unreserved);
}

std::size_t text_bound(method m) {
  switch (m) {
    case method::change_relay_name: return max_relay_name_bytes;
    case method::change_relay_description: return max_relay_description_bytes;
    case method::change_relay_icon: return max_relay_icon_bytes;
    case method::list_room_members: return 64; // a room id
    case method::create_claim:
    case method::delete_claim: return max_claim_bytes;
    default: return max_reason_bytes;
  }
}

/// A string param at `index`, or "" when absent; nothing when present but not a string.
std::optional<std::string> string_param(const json::array& params, std::size_t index) {
  if (index >= params.size() || params[index].is_null())
    return std::string();
  if (!params[index].is_string())
    return std::nullopt;
  return std::string(params[index].get_string());
}

bool takes_pubkey(method m) {
  return takes_target(m) && m != method::ban_event && m != method::allow_event;
}

/// Flotilla bans from a report by spreading its `["p", <pubkey>]` tag into the params: the tag's
/// name first, then the key (and no reason). "p" is never a key, so the form is unambiguous.
bool leads_with_tag_name(method m, const json::array& params) {
  return takes_pubkey(m) && params.size() == 2 && params[0].is_string() && params[0].get_string() == "p";
}

parse_result params_of(method m, std::string_view name, const json::array& given) {
  management_request request;
  request.method = m;
  json::array spread_tag;
  if (leads_with_tag_name(m, given))
    spread_tag = json::array(given.begin() + 1, given.end());
  const json::array& params = spread_tag.empty() ? given : spread_tag;
  if (takes_target(m)) {
    auto hex = string_param(params, 0);
    auto target = hex ? array_from_hex<32>(*hex) : std::nullopt;
    if (!target)
      return bad_params(name, "the first param must be a 64-character lowercase hex "
                                + std::string(takes_pubkey(m) ? "pubkey" : "event id"));
    request.target = target;
  }
  std::size_t text_index = takes_target(m) ? 1 : 0;
  if (takes_target(m) || takes_text(m)) {
    auto text = string_param(params, text_index);
    if (!text)
      return bad_params(name, "params must be strings");
    if (takes_text(m) && text_index >= params.size())
      return bad_params(name, "a string param is required");
    // "" clears a name, description or icon: Flotilla sends it when a field is emptied.
    if (needs_text(m) && text->empty())
      return bad_params(name, m == method::list_room_members ? "a room id is required"
                                                             : "an invite code is required");
    if (text->size() > text_bound(m))
      return bad_params(name, "param is longer than " + std::to_string(text_bound(m)) + " bytes");
    // Postgres takes text params as C strings: a NUL would cut the text short without a word.
    if (text->find('\0') != std::string::npos)
      return bad_params(name, "params may not hold a NUL character");
    if (m == method::change_relay_icon && !text->empty() && !text->starts_with("https://")
        && !text->starts_with("http://"))
      return bad_params(name, "the icon must be an http(s) URL");
    if (m == method::create_claim && !is_acceptable_chosen_claim(*text))
      return bad_params(name, "an invite code must be at least " + std::to_string(min_chosen_claim_bytes)
                                + " characters, of letters, digits and -._~ only");
    request.text = std::move(*text);
  }
  if (params.size() > text_index + (takes_target(m) || takes_text(m) ? 1 : 0))
    return bad_params(name, "too many params");
  return request;
}

} // namespace

std::string_view method_name(management_method m) noexcept {
  auto index = static_cast<std::size_t>(m);
  return index < method_names.size() ? method_names[index] : "unknown";
}

bool is_read_only(management_method m) noexcept {
  switch (m) {
    case method::supported_methods:
    case method::list_banned_pubkeys:
    case method::list_allowed_pubkeys:
    case method::list_banned_events:
    case method::list_rooms:
    case method::list_room_members:
    case method::list_claims:
    case method::list_method_assignees: return true;
    default: return false;
  }
}

bool may_reuse_auth(management_method m) noexcept {
  return is_read_only(m) && m != method::list_claims;
}

std::optional<management_method> parse_method_name(std::string_view name) noexcept {
  for (std::size_t i = 0; i < method_names.size(); ++i)
    if (method_names[i] == name)
      return static_cast<management_method>(i);
  return std::nullopt;
}

result<management_request, management_parse_error>
parse_management_request(std::string_view body) {
  if (body.size() > max_management_body_bytes)
    return management_parse_error{true, "request body is too large", ""};
  boost::system::error_code ec;
  json::parse_options options;
  options.max_depth = 8;
  auto parsed = json::parse(body, ec, {}, options);
  if (ec || !parsed.is_object())
    return management_parse_error{true, "the body must be a JSON-RPC object", ""};
  const auto& object = parsed.get_object();
  const auto* name = object.if_contains("method");
  if (!name || !name->is_string())
    return management_parse_error{true, "method must be a string", ""};
  std::string_view method_text = name->get_string();
  auto m = parse_method_name(method_text);
  if (!m)
    return management_parse_error{false, "unsupported method: " + std::string(method_text),
                                  std::string(method_text)};
  const auto* params = object.if_contains("params");
  static const json::array none;
  if (params && !params->is_null() && !params->is_array())
    return bad_params(method_text, "params must be an array");
  return params_of(*m, method_text, params && params->is_array() ? params->get_array() : none);
}

std::string render_management_result(std::string_view result_json) {
  return "{\"result\":" + std::string(result_json) + "}";
}

std::string render_management_error(std::string_view message) {
  // No `result` beside the error: newer Flotilla reads `({result = []})`, a default `null` does
  // not take, and go-nostr's relays (khatru, zooid) leave it out the same way.
  return json::serialize(json::object{{"error", message}});
}

std::string render_management_entries(const std::vector<management_entry>& entries,
                                      std::string_view key_field) {
  json::array out;
  out.reserve(entries.size());
  for (const auto& entry : entries) {
    json::object row{{key_field, to_hex(entry.key)}};
    if (!entry.reason.empty())
      row["reason"] = entry.reason;
    out.push_back(std::move(row));
  }
  return json::serialize(out);
}

namespace {

json::array every_method_but_supported() {
  json::array out;
  for (std::size_t i = 1; i < method_names.size(); ++i)
    out.emplace_back(method_names[i]);
  return out;
}

} // namespace

std::string render_supported_methods() {
  return json::serialize(every_method_but_supported());
}

std::string render_method_assignees(const std::vector<bytes32>& managers) {
  const json::array methods = every_method_but_supported();
  json::array out;
  out.reserve(managers.size());
  for (const auto& pubkey : managers)
    out.push_back(json::object{{"pubkey", to_hex(pubkey)}, {"methods", methods}});
  return json::serialize(out);
}

} // namespace comb::protocol
