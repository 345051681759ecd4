// SPDX-License-Identifier: MIT
// Invites as users make them: minted by the relay (a REQ for 28935) or chosen by the caller
// (NIP-86 createclaim), under the same rules, and the chosen ones listed back (listclaims).
#include "storage/membership_store.hpp"

#include <array>
#include <exception>
#include <utility>

#include "protocol/claim_seal.hpp"
#include "protocol/hex.hpp"
#include "storage/membership_rules.hpp"
#include "storage/pg_array.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

/// Whether `requester` may mint invites in `community` (SQL placeholders): the owner or an
/// admin, or a member where the community lets members invite; the stored roles decide.
std::string may_invite_sql(const char* community, const char* requester) {
  return std::string("EXISTS (SELECT 1 FROM members m JOIN communities c ON c.id = m.community_id"
                     " WHERE m.community_id = ") + community + "::bigint AND m.pubkey = " + requester
         + "::bytea AND (m.role IN ('owner', 'admin') OR c.members_may_invite))";
}

/// Whether `community` (an SQL placeholder) is archived: its joins are refused, so no user mints
/// a code for it; the operator still may, for after the archive ends.
std::string archived_sql(const char* community) {
  return std::string("EXISTS (SELECT 1 FROM communities WHERE id = ") + community
         + "::bigint AND archived_at IS NOT NULL)";
}

/// Where an invite of `alias` is open at `now`: unexpired, unrevoked, not used up.
std::string open_invite_sql(const char* alias, const char* now) {
  std::string a(alias);
  return a + ".expires_at > " + now + "::bigint AND NOT " + a + ".revoked AND (" + a
         + ".max_uses = 0 OR " + a + ".use_count < " + a + ".max_uses)";
}

/// The open invites `requester` minted in `community` in the day before `now`.
std::string open_invites_sql(const char* community, const char* requester, const char* now) {
  return std::string("(SELECT count(*) FROM invites i WHERE i.community_id = ") + community
         + "::bigint AND i.created_by = " + requester + "::bytea AND " + open_invite_sql("i", now)
         + " AND i.created_at > to_timestamp(" + now + "::bigint) - interval '1 day')";
}

} // namespace

bool membership_store::insert_invite(std::int64_t community_id,
                                     const std::optional<protocol::bytes32>& requester,
                                     const new_invite& invite, std::int64_t now) {
  // A refusal is explained by a statement of its own: a code deleted in between (deleteclaim)
  // leaves no reason for it, and the insert is tried again, once.
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (insert_invite_once(community_id, requester, invite, now))
      return true;
    if (!last_error_.empty() || last_invite_refusal_ != invite_refusal::none)
      return false;
  }
  last_invite_refusal_ = invite_refusal::taken; // and gone again: a code in contention
  return false;
}

bool membership_store::insert_invite_once(std::int64_t community_id,
                                          const std::optional<protocol::bytes32>& requester,
                                          const new_invite& invite, std::int64_t now) {
  last_invite_refusal_ = invite_refusal::none;
  const auto requester_param = requester ? std::optional(bytea_param(*requester)) : std::nullopt;
  // A user may invite only as the owner or an admin, or as a member where the community allows
  // it, and holds a bounded number of open invites; checked here, against the stored roles, not
  // against any cache.
  auto reply = connection_.exec(
    "INSERT INTO invites (community_id, code_hash, max_uses, expires_at, created_by, claim)"
    " SELECT $1::bigint, $2::text, $3::int, $4::bigint, $5::bytea, $8::text"
    " WHERE ($5::bytea IS NULL OR (" + may_invite_sql("$1", "$5") + " AND NOT " + archived_sql("$1")
      + " AND " + open_invites_sql("$1", "$5", "$6") + " < $7::bigint))"
    " AND NOT EXISTS (SELECT 1 FROM invites WHERE community_id = $1::bigint AND code_hash = $9::text)"
    " ON CONFLICT (community_id, code_hash) DO NOTHING",
    {std::to_string(community_id), invite.hash, std::to_string(invite.max_uses),
     std::to_string(invite.expires_at), requester_param, std::to_string(now),
     std::to_string(max_open_invites_per_user), invite.sealed, invite.also_taken_by});
  if (!reply.ok()) {
    last_error_ = reply.error();
    return false;
  }
  if (reply.affected_rows() != 0)
    return true;
  // Refused, or the code is there already: the caller's own open claim (a retried createclaim)
  // is as good as stored now.
  auto why = connection_.exec(
    "SELECT EXISTS (SELECT 1 FROM invites i WHERE i.community_id = $1::bigint AND i.code_hash IN ($5::text, $6::text)"
    "  AND i.created_by = $2::bytea AND i.claim IS NOT NULL AND " + open_invite_sql("i", "$3")
      + " AND " + may_invite_sql("$1", "$2") + "),"
    " EXISTS (SELECT 1 FROM invites WHERE community_id = $1::bigint AND code_hash IN ($5::text, $6::text)),"
    " $2::bytea IS NOT NULL AND " + may_invite_sql("$1", "$2") + " AND "
      + open_invites_sql("$1", "$2", "$3") + " >= $4::bigint,"
    " $2::bytea IS NOT NULL AND " + archived_sql("$1") + ","
    " $2::bytea IS NULL OR " + may_invite_sql("$1", "$2"),
    {std::to_string(community_id), requester_param, std::to_string(now),
     std::to_string(max_open_invites_per_user), invite.hash, invite.also_taken_by});
  if (!why.ok()) {
    last_error_ = why.error();
    return false;
  }
  if (why.text(0, 0) == "t")
    return true;
  last_invite_refusal_ = why.text(0, 3) == "t"   ? invite_refusal::archived
                         : why.text(0, 1) == "t" ? invite_refusal::taken
                         : why.text(0, 2) == "t" ? invite_refusal::too_many // may retry tomorrow
                         : why.text(0, 4) != "t" ? invite_refusal::not_allowed
                                                 : invite_refusal::none;
  return false;
}

std::optional<minted_invite> membership_store::mint_invite(
  std::int64_t community_id, const std::optional<protocol::bytes32>& requester,
  std::int64_t max_uses, std::int64_t ttl_seconds, std::int64_t now) {
  last_error_.clear();
  std::array<std::uint8_t, 16> secret{};
  protocol::fill_random(secret);
  minted_invite invite{protocol::to_hex(secret), now + ttl_seconds, max_uses};
  // 128 random bits: a plain hash is safe, and the operator's CLI finds the code by it.
  if (!insert_invite(community_id, requester,
                     {invite_code_hash(invite.code), std::nullopt, std::nullopt, max_uses, invite.expires_at}, now))
    return std::nullopt;
  return invite;
}

bool membership_store::create_claim(std::int64_t community_id, const protocol::bytes32& requester,
                                    std::string_view claim, std::int64_t max_uses,
                                    std::int64_t ttl_seconds, std::int64_t now) {
  last_error_.clear();
  try {
    // Stored under the keyed hash, and refused when the community has it under the plain one.
    auto hashes = invite_hashes(keys_.relay_key(), community_id, claim);
    return insert_invite(community_id, requester,
                         {std::move(hashes.chosen), std::move(hashes.minted),
                          protocol::seal_claim(keys_.relay_key(), community_id, claim), max_uses,
                          now + ttl_seconds},
                         now);
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return false;
  }
}

std::optional<std::vector<std::string>> membership_store::open_claims(std::int64_t community_id,
                                                                      std::int64_t now) {
  last_error_.clear();
  try {
    // Page after page, since rows that do not open (below) take no place in the answer, but
    // only so many: a community holding thousands of such rows costs a bounded read.
    constexpr int pages_at_most = 8;
    std::vector<std::string> claims;
    std::optional<std::string> after_expiry; // none: from the start
    std::string after_hash;
    for (int page = 0; page < pages_at_most && std::cmp_less(claims.size(), max_listed_claims); ++page) {
      // A code whose creator lost the right to invite admits no one (minter_may_invite): not shown.
      auto reply = connection_.exec(
        "SELECT i.claim, i.code_hash, i.expires_at FROM invites i WHERE i.community_id = $1::bigint"
        " AND i.claim IS NOT NULL AND " + open_invite_sql("i", "$2") + " AND " + may_invite_sql("$1", "i.created_by")
          + " AND ($4::bigint IS NULL OR (i.expires_at, i.code_hash) < ($4::bigint, $5::text))"
          + " ORDER BY i.expires_at DESC, i.code_hash DESC LIMIT $3::bigint",
        {std::to_string(community_id), std::to_string(now), std::to_string(max_listed_claims), after_expiry,
         after_hash});
      if (!reply.ok()) {
        last_error_ = reply.error();
        return std::nullopt;
      }
      // A code sealed under another relay key (a relay key changed by hand) does not open, and
      // is not shown; nor is one moved onto another row (a hand edit), which would show that
      // row's state.
      for (int row = 0; row < reply.rows() && std::cmp_less(claims.size(), max_listed_claims); ++row)
        if (auto claim = protocol::open_claim(keys_.relay_key(), community_id, reply.text(row, 0))) {
          auto hashes = invite_hashes(keys_.relay_key(), community_id, *claim);
          if (hashes.chosen == reply.text(row, 1) || hashes.minted == reply.text(row, 1))
            claims.push_back(std::move(*claim));
        }
      if (std::cmp_less(reply.rows(), max_listed_claims))
        break;
      after_expiry = std::string(reply.text(reply.rows() - 1, 2));
      after_hash = std::string(reply.text(reply.rows() - 1, 1));
    }
    return claims;
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

std::optional<std::int64_t> membership_store::key_plain_claims() {
  last_error_.clear();
  constexpr int page_rows = 1000;
  try {
    std::int64_t keyed = 0;
    std::string after_community = "0", after_hash;
    for (;;) {
      auto page = connection_.exec(
        "SELECT community_id, code_hash, claim FROM invites WHERE claim IS NOT NULL"
        " AND (community_id, code_hash) > ($1::bigint, $2::text) ORDER BY community_id, code_hash LIMIT $3::int",
        {after_community, after_hash, std::to_string(page_rows)});
      if (!page.ok()) {
        last_error_ = page.error();
        return std::nullopt;
      }
      for (int row = 0; row < page.rows(); ++row) {
        after_community = page.text(row, 0);
        after_hash = page.text(row, 1);
        auto claim = protocol::open_claim(keys_.relay_key(), page.integer(row, 0), page.text(row, 2));
        if (!claim)
          continue; // sealed under another key: its hash is plain already, and stays
        auto hashes = invite_hashes(keys_.relay_key(), page.integer(row, 0), *claim);
        if (hashes.minted != after_hash)
          continue;
        // Another pod starting at once re-keys it first, or the code is there under both keys
        // (a hand edit): then this row stays as it is.
        auto moved = connection_.exec(
          "UPDATE invites SET code_hash = $3::text WHERE community_id = $1::bigint AND code_hash = $2::text"
          " AND NOT EXISTS (SELECT 1 FROM invites WHERE community_id = $1::bigint AND code_hash = $3::text)",
          {after_community, after_hash, hashes.chosen});
        if (!moved.ok()) {
          last_error_ = moved.error();
          return std::nullopt;
        }
        keyed += moved.affected_rows();
      }
      if (page.rows() < page_rows)
        return keyed;
    }
  } catch (const std::exception& e) {
    last_error_ = e.what();
    return std::nullopt;
  }
}

} // namespace comb::storage
