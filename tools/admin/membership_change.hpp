// SPDX-License-Identifier: MIT
#pragma once

#include "admin/output.hpp"
#include "admin/session.hpp"
#include "storage/membership.hpp"

namespace comb::admin {

/// The exit code for a membership outcome (see README.md: no-ops are conflicts).
[[nodiscard]] exit_code exit_code_of(storage::membership_outcome outcome) noexcept;

/// Applies one operator command through membership_store::apply (the relay's own write path:
/// the list and delta are written in the same transaction), reports the outcome, then pushes
/// what was written live. Returns the exit code.
[[nodiscard]] int apply_and_report(const admin_options& options, admin_session& session,
                                   const storage::community_row& community,
                                   const storage::membership_command& command, reporter& out);

/// Reports a committed write (outcome and members) and pushes its list and deltas live; for
/// writes made elsewhere, such as community creation. Returns the exit code.
[[nodiscard]] int report_write(const admin_options& options,
                               const storage::community_row& community,
                               const storage::membership_command& command,
                               const storage::membership_write& write, reporter& out);

} // namespace comb::admin
