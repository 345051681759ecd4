// SPDX-License-Identifier: MIT
#include "storage/relay_identity.hpp"

#include "protocol/hex.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {

std::optional<std::string> check_relay_identity(pg_connection& connection, const protocol::key_pair& relay_key,
                                                const std::string& key_file) {
  const std::string mine = protocol::to_hex(relay_key.public_key());
  // Two statements: the second's snapshot sees a key another process recorded meanwhile.
  (void)connection.exec("INSERT INTO relay_identity (pubkey) VALUES ($1::bytea) ON CONFLICT DO NOTHING",
                        {"\\x" + mine});
  auto recorded = connection.exec("SELECT encode(pubkey, 'hex') FROM relay_identity");
  if (!recorded.ok() || recorded.rows() == 0)
    return std::nullopt;
  const std::string deployment(recorded.text(0, 0));
  if (deployment == mine)
    return std::nullopt;
  return "this database belongs to the relay key " + deployment + ", and " + key_file + " holds the key "
         + mine + ": give every pod and comb-admin the deployment's key file (COMB_RELAY_KEY_FILE). To"
         " change the deployment's key on purpose, run DELETE FROM relay_identity first.";
}

} // namespace comb::storage
