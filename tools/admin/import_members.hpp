// SPDX-License-Identifier: MIT
#pragma once

#include <cstdio>
#include <optional>

#include "admin/import_rules.hpp"
#include "admin/session.hpp"

namespace comb::admin {

/// NIP-01 order for versions of one replaceable key: newest, then lowest id.
[[nodiscard]] bool newer_version(const protocol::event& candidate, const protocol::event& kept);

/// The newest well-formed, correctly signed (unless the policy trusts the file) 13534 in the
/// file, if any: the list of the relay that wrote it. Reads from where the file is.
[[nodiscard]] std::optional<protocol::event> newest_list(std::FILE* file, const import_policy& policy);

/// --members-from-list: reads the whole file once for the newest 13534 (any relay's, checked
/// like any line), then adds every pubkey its `member` tags name as a member of `community`
/// through the add-member write path, in one transaction with the new list and deltas.
/// Rewinds the file. Returns how many were added, or nothing with the failure reported.
[[nodiscard]] std::optional<std::size_t>
members_from_list(std::FILE* file, const import_policy& policy, const admin_options& options,
                  admin_session& session, const storage::community_row& community,
                  reporter& out);

} // namespace comb::admin
