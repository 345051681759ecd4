// SPDX-License-Identifier: MIT
#pragma once

#include <cstdio>
#include <optional>

#include "admin/import_rules.hpp"
#include "admin/session.hpp"

namespace comb::admin {

/// NIP-01 order for versions of one replaceable key: newest, then lowest id.
[[nodiscard]] bool newer_version(const protocol::event& candidate, const protocol::event& kept);

/// The newest well-formed, correctly signed (unless the policy trusts the file) 13534 of
/// `author`, the relay that wrote the file, dated no further ahead than the relay's window.
/// Nothing, with the failure reported naming the authors of the lists the file holds, when
/// there is no such list or no `author` (`option` names the flag that asked): anyone may
/// publish a 13534 to a relay that keeps any kind, and whoever signs the newest must not choose
/// the community's members. Reads from where the file is.
[[nodiscard]] std::optional<protocol::event> relay_list(std::FILE* file, const import_policy& policy,
                                                        const std::optional<protocol::bytes32>& author,
                                                        std::string_view option, reporter& out);

/// --members-from-list: reads the whole file once for the list of `list_author` (relay_list),
/// then adds every pubkey its `member` tags name as a member of
/// `community` through the add-member write path, in one transaction with the new list and
/// deltas. Rewinds the file. Returns how many were added, or nothing with the failure reported.
[[nodiscard]] std::optional<std::size_t>
members_from_list(std::FILE* file, const import_policy& policy,
                  const std::optional<protocol::bytes32>& list_author, const admin_options& options,
                  admin_session& session, const storage::community_row& community, reporter& out);

} // namespace comb::admin
