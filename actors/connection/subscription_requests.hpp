// SPDX-License-Identifier: MIT
#pragma once

#include "actors/connection/connection_actor.hpp"

namespace comb::actors {

/// A REQ: answered at once, refused with one CLOSED, held until AUTH (reqs_awaiting_auth), or
/// held until the invite it asks for (28935) is minted.
void on_req(connection_self self, protocol::req_message& message);

/// A CLOSE: the subscription ends, and nothing of it still waiting to start is kept.
void on_close(connection_self self, const protocol::close_message& message);

/// Subscription `id` ends if it was open, and nothing of it still waiting to start is kept.
void close_subscription_of(connection_self self, const std::string& id);

/// The one CLOSED for subscription `id`, which ends it if it was open.
void refuse_subscription(connection_self self, const std::string& id, const protocol::rejection& why);

/// The history query of subscription `id`, if not yet answered, is read no further and leaves
/// the REQ-to-EOSE histogram.
void end_query(connection_state& st, const std::string& id);
/// end_query for every subscription (they all ended at once).
void end_queries(connection_state& st);

/// True when the REQ asks for an invite (kind 28935), which costs a database write.
[[nodiscard]] bool asks_for_invite(const protocol::req_message& message);

/// (minted_atom): the invite a waiting REQ asked for, or why none was minted.
void on_minted(connection_self self, std::uint64_t ticket, const invite_reply& reply);

/// AUTH succeeded: the REQs that waited for it are answered after auth_retry_window, so the
/// client's own retries take their places first.
void await_retries(connection_self self);

/// After a REQ or a join began to wait for AUTH: when it is the only one waiting, the one timer
/// that serves them all starts (auth_grace). A running one covers it, so the wait, once
/// extended, is never started again while anything still waits.
void start_auth_wait(connection_self self);

/// At auth_grace, the REQs and joins still waiting for AUTH wait on to auth_grace_when_lost where
/// refusing them now would lose them (reqs_awaiting_auth.hpp); true then.
[[nodiscard]] bool wait_longer_for_auth(connection_self self);

/// The wait for AUTH is over (it came and the retries' window passed, or auth_grace ran out):
/// every REQ still waiting is answered as it would be now, without waiting again.
void release_awaiting_auth(connection_self self);

} // namespace comb::actors
