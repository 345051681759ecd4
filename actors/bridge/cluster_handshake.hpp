// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "protocol/result.hpp"

namespace comb::actors {

/// The limits of the handshake's memory: what an unauthenticated remote can make a pod hold.
struct handshake_limits {
  std::size_t max_pending = 64;            ///< challenges awaiting a proof (the oldest void beyond)
  std::size_t max_trusted = 256;           ///< authenticated dialers remembered (oldest forgotten)
  std::chrono::seconds ttl{10};            ///< a challenge or a hello unanswered this long is void
  std::chrono::seconds retry{4};           ///< a dialed peer not linked by then is greeted again
};

/// The cluster handshake of one pod, free of actors: both ends prove the shared secret with
/// HMACs that bind the role, the other end's fresh nonce, the prover and the verifier
/// (storage::cluster_proof). Peers are named by opaque keys (the gatekeeper uses actor
/// addresses).
///
///     dialer  -> acceptor: hello(dialer id, dialer nonce)
///     acceptor -> dialer:  challenge(acceptor id, acceptor nonce, acceptor proof)
///     dialer  -> acceptor: prove(dialer id, dialer proof)        (only if the acceptor proved)
///     acceptor -> dialer:  welcome                               (only if the dialer proved)
///
/// An acceptor proof is worthless to anyone but the dialer whose nonce it covers, a dialer proof
/// worthless to anyone but the acceptor whose nonce it covers, and neither can be turned around,
/// since a pod refuses any proof or hello that names itself as the other end.
class cluster_handshake {
public:
  using time_point = std::chrono::steady_clock::time_point;

  struct challenge {
    std::string acceptor_id;
    std::string nonce;
    std::string proof;
  };
  struct proof {
    std::string dialer_id;
    std::string value;
  };
  struct hello {
    std::string dialer_id;
    std::string nonce;
  };

  cluster_handshake(std::string self_id, std::string secret, handshake_limits limits = {});

  // -- acceptor side (a remote dialed us) --

  /// A hello from `key`: the challenge to send back, or why it is refused.
  [[nodiscard]] protocol::result<challenge, std::string> on_hello(const std::string& key,
                                                                   const hello& h, time_point now);

  /// A proof from `key`: nothing when `key` is now trusted, or why not. Either way the
  /// challenge is used up.
  [[nodiscard]] std::optional<std::string> on_prove(const std::string& key, const proof& p,
                                                    time_point now);

  /// Whether `key` proved the secret to us (its envelopes may enter).
  [[nodiscard]] bool trusts(const std::string& key) const;

  // -- dialer side (we dialed `key`) --

  /// Starts (or restarts) the handshake with a peer we dialed: the hello to send.
  [[nodiscard]] hello dial(const std::string& key, time_point now);

  /// The acceptor's challenge: our proof to send back, or why the acceptor is refused.
  [[nodiscard]] protocol::result<proof, std::string> on_challenge(const std::string& key,
                                                                  const challenge& c,
                                                                  time_point now);

  /// A welcome from `key`: true when it completes a handshake we started and verified (the
  /// peer is linked: our envelopes go to it), false otherwise (refused).
  [[nodiscard]] bool on_welcome(const std::string& key);

  /// Whether `key` is a dialed peer that proved itself and welcomed us.
  [[nodiscard]] bool linked(const std::string& key) const;

  /// The node id a dialed peer proved, or "".
  [[nodiscard]] std::string peer_id(const std::string& key) const;

  /// Dialed peers whose handshake is not complete after `retry`: they are greeted again (a
  /// message can be lost while CAF replaces a redundant connection between two nodes).
  [[nodiscard]] std::vector<std::string> stalled(time_point now) const;

  // -- both --

  /// Forgets everything about `key` (its link is gone).
  void forget(const std::string& key);

  /// Drops challenges older than the ttl; returns the dialer ids whose handshake never finished
  /// (a wrong secret: the dialer refused our proof; or someone probing the port), those replaced
  /// by a new hello from the same connection or voided to make room for a newer one included:
  /// max_pending of them at most since the last call (take_voided_count counts them all).
  std::vector<std::string> expire(time_point now);

  /// How many handshakes were voided since it was last asked, however many `expire` could name
  /// (it names at most max_pending since its last call).
  [[nodiscard]] std::size_t take_voided_count() { return std::exchange(voided_count_, 0); }

  [[nodiscard]] std::size_t pending() const { return pending_.size(); }

private:
  struct pending_challenge {
    std::string dialer_id;
    std::string nonce;
    time_point at;
  };
  enum class dial_stage { hello_sent, proved, linked };
  struct dialed_peer {
    std::string nonce;
    std::string acceptor_id;
    dial_stage stage = dial_stage::hello_sent;
    time_point at;
  };

  void abandon_oldest();
  void note_abandoned(const std::string& dialer_id);
  /// Voids the challenges past their time, kept for the next `expire` to report (a hello or a
  /// proof voids them as it comes; the tick counts and logs them).
  void void_expired(time_point now);

  std::string self_id_;
  std::string secret_;
  handshake_limits limits_;
  std::map<std::string, pending_challenge> pending_;
  std::deque<std::string> trusted_; ///< oldest first
  std::vector<std::string> abandoned_; ///< dialer ids whose challenge a newer hello replaced or voided
  std::size_t voided_count_ = 0;
  std::map<std::string, dialed_peer> dialed_;
};

/// A fresh random nonce, hex.
[[nodiscard]] std::string handshake_nonce();

} // namespace comb::actors
