// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <memory>
#include <string>

#include "actors/messages.hpp"
#include "protocol/signature.hpp"
#include "storage/membership_store.hpp"
#include "storage/room_store.hpp"
#include "storage/pg_connection.hpp"

namespace comb::actors {

struct membership_writer_args {
  std::string database_url;
  protocol::key_pair relay_key;
  std::int64_t invite_max_uses = 1;
  std::int64_t invite_ttl_seconds = 24 * 3600;
};

struct membership_writer_state {
  std::unique_ptr<membership_writer_args> args; // stable address: the store keeps the key by reference
  std::unique_ptr<storage::pg_connection> connection;
  std::unique_ptr<storage::membership_store> store;
  std::unique_ptr<storage::room_store> rooms;
  static inline const char* name = "membership-writer";
};

/// Runs membership transactions (detached: libpq blocks). Community actors send it batches of
/// commands, one batch per community at a time, and get the whole write back; the same for room
/// requests (NIP-29), with the community's state read after a committed change; connections
/// ask it for invites, which it mints only for requesters the database says may invite.
caf::behavior membership_writer(caf::stateful_actor<membership_writer_state>* self,
                                membership_writer_args args);

} // namespace comb::actors
