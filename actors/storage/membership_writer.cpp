// SPDX-License-Identifier: MIT
#include "actors/storage/membership_writer.hpp"

#include "actors/clock.hpp"

#include <algorithm>
#include <chrono>

#include "protocol/canonical_json.hpp"
#include "storage/access_state.hpp"

namespace comb::actors {
namespace {

/// The relay-signed 28935 carrying a fresh code (NIP-43).
std::string invite_event_json(const protocol::key_pair& key, const std::string& code) {
  protocol::event ev;
  ev.pubkey = key.public_key();
  ev.kind = 28935;
  ev.created_at = unix_now();
  ev.tags = {{"-"}, {"claim", code}};
  ev.id = protocol::compute_id(ev);
  ev.sig = key.sign(ev.id);
  return protocol::render_event_json(ev);
}

} // namespace

caf::behavior membership_writer(caf::stateful_actor<membership_writer_state>* self,
                                membership_writer_args args) {
  auto& st = self->state;
  st.args = std::make_unique<membership_writer_args>(std::move(args));
  st.connection = std::make_unique<storage::pg_connection>(st.args->database_url);
  st.store = std::make_unique<storage::membership_store>(*st.connection, st.args->relay_key);
  st.rooms = std::make_unique<storage::room_store>(*st.connection, st.args->relay_key);
  return {
    [=](apply_atom, std::int64_t community,
        const std::vector<storage::membership_command>& commands) {
      auto write = self->state.store->apply(community, commands, unix_now());
      self->send(caf::actor_cast<caf::actor>(self->current_sender()), applied_atom_v,
                 std::move(write));
    },
    [=](room_apply_atom, std::int64_t community, const std::vector<storage::room_command>& commands) {
      room_applied applied{self->state.rooms->apply_batch(community, commands, unix_now()), std::nullopt};
      // Read after the commit, so the community actor's rooms match what was just written (a
      // failed read leaves them to the notification's reload).
      auto wrote = [](const storage::room_write& write) { return !write.events.empty(); };
      if (std::ranges::any_of(applied.batch.writes, wrote))
        if (auto access = storage::load_access(*self->state.connection, community))
          applied.access = std::move(*access);
      self->send(caf::actor_cast<caf::actor>(self->current_sender()), room_applied_atom_v,
                 std::move(applied));
    },
    // `place` (the pod's count of mints waiting here) is given back as this message goes,
    // answered or not, even when the connection that asked ended first.
    [=](mint_atom, std::uint64_t ticket, std::int64_t community, const protocol::bytes32& requester,
        const waiting_place_ptr&) {
      auto& s = self->state;
      auto invite = s.store->mint_invite(community, requester, s.args->invite_max_uses,
                                         s.args->invite_ttl_seconds, unix_now());
      auto key = invite ? s.store->signing_key(community) : std::nullopt;
      invite_reply reply;
      if (key)
        reply.event_json = std::make_shared<const std::string>(invite_event_json(*key, invite->code));
      else if (s.store->last_invite_refusal() == storage::invite_refusal::archived)
        reply.refusal = "restricted: this community is archived";
      else if (s.store->last_invite_refusal() == storage::invite_refusal::too_many)
        reply.refusal = "rate-limited: you made " + std::to_string(storage::max_open_invites_per_user)
                        + " invites in the last day that are still open; wait for some to be used or expire";
      else if (s.store->last_error().empty())
        reply.refusal = "restricted: you may not create invites in this community";
      else
        reply.refusal = "error: could not create an invite, please retry";
      self->send(caf::actor_cast<caf::actor>(self->current_sender()), minted_atom_v, ticket,
                 std::move(reply));
    },
  };
}

} // namespace comb::actors
