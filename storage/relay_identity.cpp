// SPDX-License-Identifier: MIT
#include "storage/relay_identity.hpp"

#include "protocol/community_key.hpp"
#include "protocol/hex.hpp"
#include "storage/member_list.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

/// Before a key is recorded for a database that already holds member lists (one written before
/// the record existed): at least one community's newest list must be signed by this key or by
/// the key it gives that community, or this is not the key that wrote them. Nothing when it is
/// (or there is nothing to compare); otherwise the signer found.
std::optional<std::string> stored_lists_signed_by_another(pg_connection& connection, const protocol::key_pair& relay_key) {
  const std::string own = protocol::to_hex(relay_key.public_key());
  auto lists = connection.exec("SELECT c.host, (SELECT encode(e.pubkey, 'hex') FROM events e"
                               " WHERE e.community_id = c.id AND e.kind = $1::integer"
                               " ORDER BY e.created_at DESC LIMIT 1) FROM communities c",
                               {std::to_string(member_list_kind)});
  if (!lists.ok())
    return std::nullopt;
  std::optional<std::string> other;
  for (int row = 0; row < lists.rows(); ++row) {
    if (lists.is_null(row, 1))
      continue;
    const std::string signer(lists.text(row, 1));
    const std::string host(lists.text(row, 0));
    if (signer == own
        || signer == protocol::to_hex(protocol::derive_community_key(relay_key, host).public_key()))
      return std::nullopt;
    other = signer + " (the list of " + host + ")";
  }
  return other;
}

std::string by_hand(const std::string& key) {
  return "To make this key the deployment's on purpose (the old one is lost; every community's"
         " key changes with it), record it by hand: DELETE FROM relay_identity; INSERT INTO"
         " relay_identity (pubkey) VALUES ('\\x" + key + "')";
}

} // namespace

std::optional<std::string> check_relay_identity(pg_connection& connection, const protocol::key_pair& relay_key,
                                                const std::string& key_file) {
  const std::string mine = protocol::to_hex(relay_key.public_key());
  auto recorded = connection.exec("SELECT encode(pubkey, 'hex') FROM relay_identity");
  if (recorded.ok() && recorded.rows() == 0) {
    if (auto signer = stored_lists_signed_by_another(connection, relay_key))
      return "the member lists stored here were signed by " + *signer + ", which neither the key in "
             + key_file + " (" + mine + ") nor any key derived from it is: give this process the"
             " deployment's key file (COMB_RELAY_KEY_FILE). " + by_hand(mine);
    // Two statements: the second's snapshot sees a key another process recorded meanwhile.
    (void)connection.exec("INSERT INTO relay_identity (pubkey) VALUES ($1::bytea) ON CONFLICT DO NOTHING",
                          {"\\x" + mine});
    recorded = connection.exec("SELECT encode(pubkey, 'hex') FROM relay_identity");
  }
  if (!recorded.ok() || recorded.rows() == 0)
    return std::nullopt;
  const std::string deployment(recorded.text(0, 0));
  if (deployment == mine)
    return std::nullopt;
  return "this database belongs to the relay key " + deployment + ", and " + key_file + " holds the key "
         + mine + ": give every pod and comb-admin the deployment's key file (COMB_RELAY_KEY_FILE). "
         + by_hand(mine);
}

} // namespace comb::storage
