// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "actors/connection/connection.hpp"
#include "protocol/client_message.hpp"

namespace comb::actors {

/// How long a REQ that needs AUTH, sent by a connection that has not authenticated yet, waits
/// for it before it is answered `CLOSED auth-required:`. welshman (Flotilla) authenticates as
/// the challenge arrives, and meanwhile sends the REQs of every room and feed of the space; after
/// the AUTH's OK it sends again only the last 51 messages it sent before (refused or not), and it
/// hides an `auth-required:` CLOSED, so a user with many rooms lost the first ones (their live
/// subscriptions) for the whole session. A signer slower than this (a bunker, an extension's
/// first prompt) loses them still. A client that waits
/// for the refusal to authenticate (nostr-tools' onauth) gets it this much later, once.
inline constexpr std::chrono::seconds auth_grace{3};

/// How many of the messages it sent before the AUTH's OK welshman sends again after it.
inline constexpr std::size_t welshman_resent = 51;

/// How long, in all, the wait lasts when a refusal at auth_grace would lose what waits: more REQs
/// wait than welshman sends again (the first ones are the live subscriptions), or a join waits
/// (welshman never sends one again). A slow signer (a NIP-46 bunker, an extension's first
/// prompt) then loses nothing, while a client that authenticates only when refused, and sends
/// few REQs first, is refused at auth_grace as before.
inline constexpr std::chrono::seconds auth_grace_when_lost{20};

/// How long after a successful AUTH the REQs that waited for it wait for the client's retries.
inline constexpr std::chrono::milliseconds auth_retry_window{500};

/// The REQs an anonymous connection sent that wait for its AUTH (auth_grace), in arrival order,
/// one per subscription id (a later REQ of the id replaces it), bounded as open subscriptions
/// are: their count and their filters' cost (connection_policy). Past a bound a REQ does not
/// wait: it is refused at once, as before. Once the AUTH came, welshman sends the last 51
/// again: a REQ of an id that waits takes its place and is answered at once; those it does not
/// send again are answered after auth_retry_window. Answering them at the AUTH, before the
/// retries, answered those twice (and an invite REQ minted two invites), and welshman drops an
/// EOSE that arrives before it has seen the AUTH's OK.
class reqs_awaiting_auth {
public:
  /// Keeps `message` (its filters already stripped of unindexed values); false when a bound
  /// is reached. The bounds are shared with the `open` subscriptions, costing `open_cost`: a
  /// connection may not hold the policy's subscriptions open and as many again waiting.
  [[nodiscard]] bool hold(protocol::req_message message, const connection_policy& policy,
                          std::size_t open, const filter_holding& open_cost);
  /// Drops the REQ of `id`, if one waits.
  void forget(const std::string& id);
  /// Every REQ waiting, in arrival order; none wait afterwards.
  [[nodiscard]] std::vector<protocol::req_message> take();

  /// What the REQs waiting hold, but the one of `id` (a REQ of that id would take its place).
  [[nodiscard]] waiting_requests held_apart_from(const std::string& id) const;

  [[nodiscard]] bool empty() const noexcept { return waiting_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return waiting_.size(); }
  /// The subscription ids of the REQs waiting.
  [[nodiscard]] std::vector<std::string> ids() const {
    std::vector<std::string> out;
    out.reserve(waiting_.size());
    for (const auto& message : waiting_)
      out.push_back(message.subscription_id);
    return out;
  }

private:
  std::vector<protocol::req_message> waiting_;
  filter_holding cost_;
};

} // namespace comb::actors
