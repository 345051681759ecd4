// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <variant>

#include "actors/metrics.hpp"
#include "protocol/event.hpp"
#include "protocol/nip86.hpp"
#include "storage/membership.hpp"

namespace comb::actors {

/// One NIP-86 HTTP request, as the socket edge hands it over.
struct management_call {
  std::int64_t community_id = 0;
  std::string host; ///< the normalized host the request was made to (NIP-98 `u` must name it)
  std::string authorization;
  std::string content_type;
  std::string body;
};

/// The HTTP answer: a status and a JSON body, always (clients parse it whatever the status).
struct management_reply {
  int status = 200;
  std::string body;
  management_outcome outcome = management_outcome::ok;
};

using management_callback = std::function<void(management_reply)>;

/// `{"result": <result_json>}` with 200.
[[nodiscard]] management_reply management_success(std::string_view result_json);

/// `{"error": message}` with `status`.
[[nodiscard]] management_reply management_refusal(int status, management_outcome outcome,
                                                  std::string_view message);

/// Whether a Content-Type names NIP-86's `application/nostr+json+rpc` (parameters allowed).
[[nodiscard]] bool is_management_content_type(std::string_view content_type) noexcept;

/// NIP-98 suggests 60 s; comb takes NIP-42's 10 minutes. Flotilla decides who is an admin
/// from one supportedmethods call and keeps the answer for the session: a device clock a few
/// minutes off (which AUTH accepts) or a remote signer approved late hid the admin tools
/// without a word. Each auth event is single use (spend_http_auth: remembered as used for as
/// long as it could pass) and names its URL, method and payload.
inline constexpr std::int64_t management_auth_window_seconds = 600;

/// Counts a call's answer by its method (comb_management_calls_total; nothing: one that names
/// none this relay knows), wherever it was answered.
void count_management_call(relay_metrics& metrics, std::optional<protocol::management_method> method,
                           management_outcome outcome);

/// The same, for a call answered before its body was parsed: by the method the body names.
void count_management_call(relay_metrics& metrics, std::string_view body, management_outcome outcome);

/// A call's shape and its NIP-98 signature, in the order NIP-86 clients expect the refusals
/// (415, 413, 401): the verified auth event, or the refusal. No database: the socket edge runs
/// it before a call may wait for the management actor, which runs it again.
[[nodiscard]] std::variant<protocol::event, management_reply> check_call_auth(const management_call& call,
                                                                            std::int64_t now);

/// The answer to a signed call from someone who is not the community's owner or an admin: an
/// empty supportedmethods (NIP-86 answers it for the signer: newer Flotilla asks it of every
/// user, takes whoever gets a non-empty one for staff, and reads the result as an array, which a
/// 403's null is not), 403 for any other method.
[[nodiscard]] management_reply refusal_to_non_manager(std::string_view body);

/// The membership command a member or pubkey-ban method asks for, signed off by `caller` (the
/// role rules are checked again inside the transaction); nothing for the other methods.
[[nodiscard]] std::optional<storage::membership_command>
membership_command_for(const protocol::management_request& request,
                       const protocol::bytes32& caller);

/// The answer to a membership method once its write is done. A change that leaves things as
/// asked (already a member, not a member, already banned) succeeds; touching the owner, or an
/// admin without being the owner, is 403.
[[nodiscard]] management_reply management_reply_for(storage::membership_outcome outcome);

} // namespace comb::actors
