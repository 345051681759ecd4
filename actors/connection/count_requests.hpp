// SPDX-License-Identifier: MIT
#pragma once

#include "actors/connection/connection_actor.hpp"
#include "protocol/client_message.hpp"
#include "storage/event_store.hpp"

namespace comb::actors {

/// COUNTs that may wait for a query place at once; more are refused.
inline constexpr std::size_t max_waiting_counts = 16;

/// A COUNT whose rooms changed under it is counted again at most this often, then refused.
inline constexpr int max_recounts = 2;

/// NIP-45 COUNT: the checks, then a wait for one of the connection's query places.
void on_count(connection_self self, protocol::count_message& message);

/// Sends a COUNT whose place was granted to a reader, with the rooms hidden from this reader
/// as they are now, and keeps it until it is answered.
void start_count(connection_self self, history_request request);

/// A reader's count. Counted while the rooms hid something else from this reader than they do
/// now (a room made private, or deleted, meanwhile), it is counted again: a COUNT never counts
/// the events of a room its reader may no longer see. After a revocation, it is refused.
void on_counted(connection_self self, std::uint64_t ticket, const storage::count_result& result);

} // namespace comb::actors
