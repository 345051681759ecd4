// SPDX-License-Identifier: MIT
#include "storage/invite_store.hpp"

#include <algorithm>
#include <exception>

#include "storage/membership_rules.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

bool is_lower_hex(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char c) {
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
  });
}

/// SQL: the requester ($3) may delete the invite row `row`: they are the owner, or an admin and
/// the row is neither the owner's nor the operator's (created_by NULL), by the stored roles.
std::string requester_may_delete(std::string_view row) {
  const std::string r(row);
  return "EXISTS (SELECT 1 FROM members m WHERE m.community_id = $1::bigint AND m.pubkey = $3::bytea"
         " AND (m.role = 'owner' OR (m.role = 'admin' AND " + r + ".created_by IS NOT NULL"
         " AND NOT EXISTS (SELECT 1 FROM members o WHERE o.community_id = $1::bigint"
         "                 AND o.pubkey = " + r + ".created_by AND o.role = 'owner'))))";
}

} // namespace

invite_store::invite_store(pg_connection& connection) : connection_(connection) {}

std::uint64_t invite_store::purge_expired(std::int64_t now) {
  constexpr std::int64_t chunk = 1000;
  std::uint64_t total = 0;
  try {
    last_error_.clear();
    for (;;) {
      auto reply = connection_.exec(
        "DELETE FROM invites WHERE (community_id, code_hash) IN (SELECT community_id, code_hash"
        " FROM invites WHERE expires_at <= LEAST($1::bigint, extract(epoch FROM now())::bigint)"
        " LIMIT $2::bigint)", // never past the database's clock, whatever the pod's says
        {std::to_string(now), std::to_string(chunk)});
      if (!reply.ok()) {
        last_error_ = reply.error();
        return total;
      }
      total += reply.affected_rows();
      if (static_cast<std::int64_t>(reply.affected_rows()) < chunk)
        return total;
    }
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return total;
  }
}

std::optional<std::vector<invite_summary>> invite_store::list(std::int64_t community_id) {
  try {
    last_error_.clear();
    auto reply = connection_.exec(
      "SELECT code_hash, max_uses, use_count, expires_at, revoked,"
      " COALESCE(encode(created_by, 'hex'), ''), claim IS NOT NULL FROM invites WHERE community_id = $1::bigint"
      " ORDER BY created_at DESC, code_hash",
      {std::to_string(community_id)});
    if (!reply.ok()) {
      last_error_ = reply.error();
      return std::nullopt;
    }
    std::vector<invite_summary> out;
    for (int row = 0; row < reply.rows(); ++row)
      out.push_back({std::string(reply.text(row, 0)), reply.integer(row, 1), reply.integer(row, 2),
                     reply.integer(row, 3), reply.text(row, 4) == "t",
                     std::string(reply.text(row, 5)), reply.text(row, 6) == "t"});
    return out;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

revoke_result invite_store::revoke(std::int64_t community_id, std::string_view hash_prefix) {
  try {
    last_error_.clear();
    // Validated hex, so the prefix cannot carry LIKE wildcards.
    if (hash_prefix.empty() || !is_lower_hex(hash_prefix))
      return revoke_result::not_found;
    auto matches = connection_.exec(
      "SELECT code_hash, revoked FROM invites WHERE community_id = $1::bigint"
      " AND code_hash LIKE $2::text || '%' LIMIT 2",
      {std::to_string(community_id), std::string(hash_prefix)});
    if (!matches.ok()) {
      last_error_ = matches.error();
      return revoke_result::failed;
    }
    if (matches.rows() == 0)
      return revoke_result::not_found;
    if (matches.rows() > 1)
      return revoke_result::ambiguous;
    if (matches.text(0, 1) == "t")
      return revoke_result::already_revoked;
    auto updated = connection_.exec(
      "UPDATE invites SET revoked = true, claim = NULL WHERE community_id = $1::bigint"
      " AND code_hash = $2::text AND NOT revoked",
      {std::to_string(community_id), std::string(matches.text(0, 0))});
    if (!updated.ok()) {
      last_error_ = updated.error();
      return revoke_result::failed;
    }
    return updated.affected_rows() > 0 ? revoke_result::revoked : revoke_result::already_revoked;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return revoke_result::failed;
  }
}

code_deletion invite_store::delete_code(std::int64_t community_id, std::string_view claim,
                                        const protocol::key_pair& relay_key,
                                        const protocol::bytes32& requester) {
  try {
    last_error_.clear();
    const auto code = invite_hashes(relay_key, community_id, claim);
    const pg_params params{std::to_string(community_id), code.chosen, bytea_param(requester), code.minted};
    // All of the code's rows or none: a code stored under both hashes (a rolling upgrade, a hand
    // edit) may be the owner's under one, and deleting only the admin's row would answer true
    // while the code still admits.
    auto deleted = connection_.exec(
      "DELETE FROM invites i WHERE i.community_id = $1::bigint AND i.code_hash IN ($2::text, $4::text)"
      " AND NOT EXISTS (SELECT 1 FROM invites k WHERE k.community_id = $1::bigint"
      "                 AND k.code_hash IN ($2::text, $4::text) AND NOT " + requester_may_delete("k") + ")",
      params);
    if (!deleted.ok()) {
      last_error_ = deleted.error();
      return code_deletion::failed;
    }
    if (deleted.affected_rows() > 0)
      return code_deletion::deleted;
    auto held = connection_.exec(
      "SELECT EXISTS (SELECT 1 FROM invites WHERE community_id = $1::bigint AND code_hash IN ($2::text, $4::text)),"
      " EXISTS (SELECT 1 FROM members WHERE community_id = $1::bigint AND pubkey = $3::bytea"
      "         AND role IN ('owner', 'admin'))",
      params);
    if (!held.ok()) {
      last_error_ = held.error();
      return code_deletion::failed;
    }
    if (held.text(0, 1) != "t")
      return code_deletion::not_manager; // demoted while the call waited
    return held.text(0, 0) == "t" ? code_deletion::not_allowed : code_deletion::not_found;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return code_deletion::failed;
  }
}

} // namespace comb::storage
