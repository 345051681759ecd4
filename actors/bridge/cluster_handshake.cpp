// SPDX-License-Identifier: MIT
#include "actors/bridge/cluster_handshake.hpp"

#include <algorithm>
#include <array>
#include <utility>

#include "protocol/hex.hpp"
#include "protocol/signature.hpp"
#include "storage/bridge_auth.hpp"

namespace comb::actors {
namespace {

/// Node ids and nonces are short; anything longer is not a pod talking.
constexpr std::size_t max_field = 256;

bool well_formed(const std::string& id, const std::string& nonce) {
  return !id.empty() && id.size() <= max_field && nonce.size() >= 16 && nonce.size() <= max_field;
}

} // namespace

std::string handshake_nonce() {
  std::array<std::uint8_t, 16> nonce{};
  protocol::fill_random(nonce);
  return protocol::to_hex(nonce);
}

cluster_handshake::cluster_handshake(std::string self_id, std::string secret,
                                     handshake_limits limits)
  : self_id_(std::move(self_id)), secret_(std::move(secret)), limits_(limits) {}

protocol::result<cluster_handshake::challenge, std::string>
cluster_handshake::on_hello(const std::string& key, const hello& h, time_point now) {
  if (!well_formed(h.dialer_id, h.nonce))
    return std::string("malformed hello");
  if (h.dialer_id == self_id_)
    return std::string("hello names this pod as the dialer (reflected)");
  void_expired(now);
  if (!pending_.contains(key) && pending_.size() >= limits_.max_pending)
    abandon_oldest();
  challenge c{self_id_, handshake_nonce(),
              storage::cluster_proof(secret_, storage::proof_role::acceptor, h.nonce, self_id_,
                                     h.dialer_id)};
  auto [it, fresh] = pending_.try_emplace(key, pending_challenge{h.dialer_id, c.nonce, now});
  if (!fresh) {
    note_abandoned(it->second.dialer_id);
    it->second = pending_challenge{h.dialer_id, c.nonce, now};
  }
  return c;
}

// Refusing hellos once the challenges are full would let anyone who reaches the port keep every
// real dialer out with a few forged hellos every ttl; the oldest challenge makes room instead, so
// a flood must outpace a real dialer's round trip to displace it.
void cluster_handshake::abandon_oldest() {
  auto oldest = std::min_element(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
    return a.second.at < b.second.at;
  });
  if (oldest == pending_.end())
    return;
  note_abandoned(oldest->second.dialer_id);
  pending_.erase(oldest);
}

void cluster_handshake::note_abandoned(const std::string& dialer_id) {
  ++voided_count_;
  if (abandoned_.size() < limits_.max_pending)
    abandoned_.push_back(dialer_id);
}

std::optional<std::string> cluster_handshake::on_prove(const std::string& key, const proof& p,
                                                       time_point now) {
  void_expired(now);
  auto it = pending_.find(key);
  if (it == pending_.end())
    return "proof without a pending challenge";
  auto expected = std::move(it->second);
  pending_.erase(it);
  if (p.dialer_id == self_id_)
    return "proof names this pod as the prover (reflected)";
  if (p.dialer_id != expected.dialer_id)
    return "proof for another node id than the hello's";
  if (!storage::proof_matches(secret_, storage::proof_role::dialer, expected.nonce, p.dialer_id,
                              self_id_, p.value))
    return "wrong proof (another secret)";
  if (!trusts(key)) {
    if (trusted_.size() >= limits_.max_trusted)
      trusted_.pop_front();
    trusted_.push_back(key);
  }
  return std::nullopt;
}

bool cluster_handshake::trusts(const std::string& key) const {
  return std::find(trusted_.begin(), trusted_.end(), key) != trusted_.end();
}

cluster_handshake::hello cluster_handshake::dial(const std::string& key, time_point now) {
  auto& peer = dialed_[key];
  peer = dialed_peer{handshake_nonce(), {}, dial_stage::hello_sent, now};
  return hello{self_id_, peer.nonce};
}

protocol::result<cluster_handshake::proof, std::string>
cluster_handshake::on_challenge(const std::string& key, const challenge& c, time_point /*now*/) {
  auto it = dialed_.find(key);
  if (it == dialed_.end() || it->second.stage != dial_stage::hello_sent)
    return std::string("challenge from a peer this pod did not greet");
  if (!well_formed(c.acceptor_id, c.nonce))
    return std::string("malformed challenge");
  if (c.acceptor_id == self_id_)
    return std::string("challenge names this pod as the acceptor (reflected)");
  if (!storage::proof_matches(secret_, storage::proof_role::acceptor, it->second.nonce,
                              c.acceptor_id, self_id_, c.proof))
    return std::string("wrong proof from the acceptor (another secret)");
  it->second.acceptor_id = c.acceptor_id;
  it->second.stage = dial_stage::proved;
  return proof{self_id_, storage::cluster_proof(secret_, storage::proof_role::dialer, c.nonce,
                                                self_id_, c.acceptor_id)};
}

bool cluster_handshake::on_welcome(const std::string& key) {
  auto it = dialed_.find(key);
  if (it == dialed_.end() || it->second.stage != dial_stage::proved)
    return false;
  it->second.stage = dial_stage::linked;
  return true;
}

bool cluster_handshake::linked(const std::string& key) const {
  auto it = dialed_.find(key);
  return it != dialed_.end() && it->second.stage == dial_stage::linked;
}

std::string cluster_handshake::peer_id(const std::string& key) const {
  auto it = dialed_.find(key);
  return it == dialed_.end() ? std::string() : it->second.acceptor_id;
}

std::vector<std::string> cluster_handshake::stalled(time_point now) const {
  std::vector<std::string> out;
  for (const auto& [key, peer] : dialed_)
    if (peer.stage != dial_stage::linked && now - peer.at >= limits_.retry)
      out.push_back(key);
  return out;
}

void cluster_handshake::forget(const std::string& key) {
  pending_.erase(key);
  dialed_.erase(key);
  std::erase(trusted_, key);
}

void cluster_handshake::void_expired(time_point now) {
  std::erase_if(pending_, [&](const auto& entry) {
    if (now - entry.second.at < limits_.ttl)
      return false;
    note_abandoned(entry.second.dialer_id);
    return true;
  });
}

std::vector<std::string> cluster_handshake::expire(time_point now) {
  void_expired(now);
  return std::exchange(abandoned_, {});
}

} // namespace comb::actors
