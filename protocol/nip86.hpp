// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "protocol/hex.hpp"
#include "protocol/result.hpp"

namespace comb::protocol {

/// The NIP-86 methods comb serves.
enum class management_method {
  supported_methods,
  ban_pubkey,
  unban_pubkey,
  list_banned_pubkeys,
  allow_pubkey,
  unallow_pubkey,
  list_allowed_pubkeys,
  ban_event,
  allow_event,
  list_banned_events,
  change_relay_name,
  change_relay_description,
  change_relay_icon,
  list_rooms,        ///< comb's: the community's NIP-29 rooms
  list_room_members, ///< comb's: one room's members and their room roles
  list_claims,       ///< NIP-43 invite codes (nips PR #2408, which newer Flotilla calls)
  create_claim,      ///< an invite code the caller chose
  delete_claim,
  /// Who holds which methods (nips PR #2439, which newer Flotilla lists a space's admins with):
  /// here the owner and the admins, every method; granting single methods is not served.
  list_method_assignees,
};

inline constexpr std::size_t management_method_count = 19;
static_assert(static_cast<std::size_t>(management_method::list_method_assignees) + 1
              == management_method_count);

/// Request bodies larger than this are refused before they are parsed.
inline constexpr std::size_t max_management_body_bytes = 16 * 1024;
inline constexpr std::size_t max_reason_bytes = 1024;
inline constexpr std::size_t max_relay_name_bytes = 256;
inline constexpr std::size_t max_relay_description_bytes = 4096;
inline constexpr std::size_t max_relay_icon_bytes = 2048;
/// A claim (invite code) as joins carry it: at most this long (a longer one never admits).
inline constexpr std::size_t max_claim_bytes = 256;
/// A code chosen with createclaim: at least this long, of letters, digits and `-._~` only (it
/// travels in a link unescaped). Newer Flotilla picks 16-17 random digits; a short code would be
/// guessed, and it may admit any number of people for days.
inline constexpr std::size_t min_chosen_claim_bytes = 12;

/// The wire name, e.g. "banpubkey".
[[nodiscard]] std::string_view method_name(management_method method) noexcept;

[[nodiscard]] std::optional<management_method> parse_method_name(std::string_view name) noexcept;

/// Methods that only read (supportedmethods, list*): the same call repeated changes nothing.
[[nodiscard]] bool is_read_only(management_method method) noexcept;

/// Reads whose auth event may be used again within its window (apps ask the same list twice in
/// a second): every read but listclaims, whose answer admits people to the community.
[[nodiscard]] bool may_reuse_auth(management_method method) noexcept;

/// One parsed call: `target` is the pubkey or event id of the methods that take one, `text` the
/// reason, the new name, description or icon URL, the room id or the claim.
struct management_request {
  management_method method = management_method::supported_methods;
  std::optional<bytes32> target;
  std::string text;
};

/// Why a body is not a call comb can run. `malformed`: not a JSON-RPC object at all (HTTP 400);
/// otherwise an unknown method or bad params (HTTP 200 with `error`, as NIP-86 answers).
struct management_parse_error {
  bool malformed = false;
  std::string message;
  /// The method named, when it was a string (for counters); "" otherwise.
  std::string method;
};

/// Parses `{"method": "...", "params": [...]}` and checks the params of the method.
[[nodiscard]] result<management_request, management_parse_error>
parse_management_request(std::string_view body);

/// `{"result": <result_json>}`; `result_json` must be valid JSON.
[[nodiscard]] std::string render_management_result(std::string_view result_json);

/// `{"error": "<message>"}`: no `result` (newer Flotilla reads `({result = []})`).
[[nodiscard]] std::string render_management_error(std::string_view message);

/// One row of a listbanned*/listallowed* answer.
struct management_entry {
  bytes32 key{};
  std::string reason; ///< omitted from the JSON when empty
};

/// `[{"<key_field>": "<hex>", "reason": "..."}, ...]`; key_field is "pubkey" or "id".
[[nodiscard]] std::string render_management_entries(const std::vector<management_entry>& entries,
                                                    std::string_view key_field);

/// `["banpubkey", ...]`: every method but supportedmethods itself.
[[nodiscard]] std::string render_supported_methods();

/// `[{"pubkey": "<hex>", "methods": [...]}, ...]`: each of `managers` holding every method
/// render_supported_methods lists (listmethodassignees).
[[nodiscard]] std::string render_method_assignees(const std::vector<bytes32>& managers);

} // namespace comb::protocol
