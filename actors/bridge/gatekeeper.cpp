// SPDX-License-Identifier: MIT
#include "actors/bridge/gatekeeper.hpp"

#include <spdlog/spdlog.h>

#include <memory>
#include <optional>

#include "actors/clock.hpp"
#include "actors/messages.hpp"
#include "storage/bridge_envelope.hpp"

namespace comb::actors {
namespace {

using namespace std::chrono_literals;

constexpr auto tick_period = 1s;
/// Peers with an open gap (peers of one deployment are a handful); past it the oldest gap is
/// filled at once rather than forgotten.
constexpr std::size_t max_gaps = 256;
/// A gap is filled this long after a link is back: the peer starts sending over it once it has
/// our welcome, and what it committed before then is in the fill only if the fill runs later.
constexpr auto gap_settle = 1s;

std::chrono::steady_clock::time_point steady_now() {
  return std::chrono::steady_clock::now();
}

/// Remote text for a log line: bounded, control characters replaced (no forged lines).
std::string printable(std::string text, std::size_t limit = 120) {
  if (text.size() > limit)
    text.resize(limit);
  for (auto& c : text)
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
      c = '?';
  return text;
}

std::string key_of(const caf::actor& peer) {
  return caf::to_string(peer.address());
}

} // namespace

caf::behavior link_watch(caf::event_based_actor* self, caf::actor_addr gate) {
  // By key: the epoch of the newest watch order; one monitor per link (a second order only
  // renews the epoch), so each drop is reported once.
  auto epochs = std::make_shared<std::unordered_map<std::string, std::string>>();
  self->set_down_handler([self, gate, epochs](caf::down_msg& down) {
    auto key = caf::to_string(down.source);
    auto it = epochs->find(key);
    if (it == epochs->end())
      return;
    self->send(caf::actor_cast<caf::actor>(gate),
               gate_order{gate_order::kind::dialer_lost, {}, key + " " + it->second});
    epochs->erase(it);
  });
  return {
    [self, epochs](gate_order& order) {
      if (order.what != gate_order::kind::watch || !order.peer)
        return;
      auto [it, fresh] = epochs->insert_or_assign(key_of(order.peer), order.text);
      if (fresh)
        self->monitor(order.peer);
    },
  };
}

bool admitted_at_gate(const caf::type_erased_tuple& content) {
  using std::string;
  return content.match_elements<gate_order>()
         || content.match_elements<hello_atom, string, string>()
         || content.match_elements<challenge_atom, string, string, string>()
         || content.match_elements<prove_atom, string, string>()
         || content.match_elements<welcome_atom>()
         || content.match_elements<envelope_atom, string>();
}

std::size_t network_bytes(const caf::type_erased_tuple& content) {
  std::size_t bytes = 0;
  for (std::size_t i = 0; i < content.size(); ++i)
    if (content.match_element<std::string>(i))
      bytes += content.get_as<std::string>(i).size();
  return bytes;
}

gatekeeper::gatekeeper(caf::actor_config& config, gatekeeper_args args)
  : caf::event_based_actor(config), args_(std::move(args)),
    handshake_(args_.node_id, args_.secret, args_.limits) {}

void gatekeeper::enqueue(caf::mailbox_element_ptr element, caf::execution_unit* unit) {
  // Any thread (the network's workers among them): atomics and spdlog only. A peer sets the
  // message id itself: only a plain one reaches a handler, which gives back the place it takes
  // (CAF drops a reply nobody awaits, and routes stream categories elsewhere, before any
  // handler runs, so such a message would keep its place for good).
  if (element && element->mid.is_async() && admitted_at_gate(element->content())) {
    const bool ours = element->content().match_elements<gate_order>();
    if (ours || mailbox_.try_take(network_bytes(element->content()))) {
      caf::event_based_actor::enqueue(std::move(element), unit);
      return;
    }
    bump(args_.metrics->bridge_inbound_dropped);
  } else {
    bump(args_.metrics->cluster_dropped_messages);
  }
  const auto second = std::chrono::duration_cast<std::chrono::seconds>(
                        std::chrono::steady_clock::now().time_since_epoch())
                        .count();
  // Its size, not its text: the message may be hundreds of megabytes.
  if (last_drop_log_.exchange(second) != second) // at most one line a second
    spdlog::warn("cluster: dropped a message the cluster port does not take ({} elements, {} bytes of text)",
                 element ? element->content().size() : 0, element ? network_bytes(element->content()) : 0);
}

caf::behavior gatekeeper::make_behavior() {
  watch_ = spawn(link_watch, address());
  delayed_send(caf::actor_cast<caf::actor>(this), tick_period, gate_order{gate_order::kind::tick, {}, {}});
  return {
    [this](gate_order& order) { on_order(order); },
    [this](hello_atom, const std::string& node_id, const std::string& nonce) {
      arrived();
      on_hello(node_id, nonce);
    },
    [this](challenge_atom, const std::string& node_id, const std::string& nonce,
           const std::string& proof) {
      arrived();
      on_challenge(node_id, nonce, proof);
    },
    [this](prove_atom, const std::string& node_id, const std::string& proof) {
      arrived();
      on_prove(node_id, proof);
    },
    [this](welcome_atom) {
      arrived();
      on_welcome();
    },
    [this](envelope_atom, std::string& payload) {
      arrived();
      on_envelope(payload);
    },
  };
}

void gatekeeper::arrived() {
  if (const auto* element = current_mailbox_element())
    mailbox_.give_back(network_bytes(element->content()));
}

std::string gatekeeper::sender_key() {
  const auto& from = current_sender();
  return from ? caf::to_string(from->address()) : std::string();
}

void gatekeeper::refuse(const std::string& why) {
  bump(args_.metrics->bridge_refused_peers);
  const auto second = std::chrono::duration_cast<std::chrono::seconds>(
                        steady_now().time_since_epoch()).count();
  if (second != last_refusal_log_) {
    last_refusal_log_ = second;
    refusals_this_second_ = 0;
  }
  if (++refusals_this_second_ > 10)
    return; // a flood gives ten lines a second at most; the counter has every one
  spdlog::warn("cluster: refused {}: {}", printable(sender_key(), 80), printable(why, 200));
}

void gatekeeper::on_order(gate_order& order) {
  switch (order.what) {
    case gate_order::kind::dialed: {
      auto key = key_of(order.peer);
      dialed_[key] = order.peer;
      where_[key] = order.text;
      greet(key);
      break;
    }
    case gate_order::kind::lost:
      if (order.peer)
        lose(key_of(order.peer));
      break;
    case gate_order::kind::dialer_lost: {
      auto space = order.text.rfind(' ');
      if (space != std::string::npos)
        lose_dialer(order.text.substr(0, space), order.text.substr(space + 1));
      break;
    }
    case gate_order::kind::watch:
      break; // the link watch's order
    case gate_order::kind::send_all:
      send_to_peers(order.text);
      break;
    case gate_order::kind::tick:
      tick();
      break;
    case gate_order::kind::stop:
      send_exit(watch_, caf::exit_reason::user_shutdown);
      quit();
      break;
  }
}

/// Every linked peer once: those we dialed, and those that dialed us and proved the secret (a
/// peer that lists us while we do not list it hears from us only that way).
void gatekeeper::send_to_peers(const std::string& envelope) {
  for (const auto& [key, peer] : dialed_)
    if (handshake_.linked(key))
      send(peer, envelope_atom_v, envelope);
  for (const auto& [key, dialer] : accepted_)
    if (handshake_.trusts(key) && !handshake_.linked(key))
      send(dialer.peer, envelope_atom_v, envelope);
}

void gatekeeper::greet(const std::string& key) {
  auto it = dialed_.find(key);
  if (it == dialed_.end())
    return;
  auto hello = handshake_.dial(key, steady_now());
  send(it->second, hello_atom_v, hello.dialer_id, hello.nonce);
}

void gatekeeper::on_hello(const std::string& node_id, const std::string& nonce) {
  auto key = sender_key();
  if (key.empty())
    return refuse("hello without a sender");
  auto challenge = handshake_.on_hello(key, {node_id, nonce}, steady_now());
  if (!challenge)
    return refuse(challenge.error());
  send(caf::actor_cast<caf::actor>(current_sender()), challenge_atom_v,
       challenge.value().acceptor_id, challenge.value().nonce, challenge.value().proof);
}

void gatekeeper::on_challenge(const std::string& node_id, const std::string& nonce,
                              const std::string& proof) {
  auto key = sender_key();
  auto it = dialed_.find(key);
  if (it == dialed_.end())
    return refuse("challenge from a node this pod did not dial");
  auto answer = handshake_.on_challenge(key, {node_id, nonce, proof}, steady_now());
  if (!answer)
    return refuse("peer " + where_[key] + " (" + printable(node_id, 80) + ") failed to prove the secret: "
                  + answer.error());
  send(it->second, prove_atom_v, answer.value().dialer_id, answer.value().value);
}

void gatekeeper::on_prove(const std::string& node_id, const std::string& proof) {
  auto key = sender_key();
  if (auto refused = handshake_.on_prove(key, {node_id, proof}, steady_now()))
    return refuse("cluster peer " + node_id.substr(0, 80) + ": " + *refused);
  spdlog::info("cluster: peer {} authenticated", printable(node_id, 80));
  auto peer = caf::actor_cast<caf::actor>(current_sender());
  std::erase_if(accepted_, [this](const auto& entry) { return !handshake_.trusts(entry.first); });
  std::erase_if(last_heard_, [this](const auto& entry) {
    return !handshake_.trusts(entry.first) && !handshake_.linked(entry.first);
  });
  const auto epoch = ++next_epoch_;
  accepted_[key] = accepted_dialer{peer, node_id, epoch, storage::envelope_clock_ms()};
  send(watch_, gate_order{gate_order::kind::watch, peer, std::to_string(epoch)});
  send(peer, welcome_atom_v);
  if (!end_gaps(node_id, {}))
    cover_dialer_gaps();
}

void gatekeeper::on_welcome() {
  auto key = sender_key();
  auto it = dialed_.find(key);
  if (it == dialed_.end() || !handshake_.on_welcome(key))
    return refuse("welcome from a node this pod did not dial and verify");
  bump(args_.metrics->cluster_peers_linked);
  const auto node = handshake_.peer_id(key);
  spdlog::info("cluster: linked to peer {} at {}", printable(node, 80), where_[key]);
  end_gaps(node, where_[key]);
}

/// From a peer we dialed and verified, or one that dialed us and proved the secret: a peer
/// sends over whichever direction is up.
void gatekeeper::on_envelope(std::string& payload) {
  auto key = sender_key();
  if (!handshake_.trusts(key) && !handshake_.linked(key))
    return refuse("envelope from a node that did not prove the secret");
  // CAF takes a routed message's source from what the sending node wrote: a node without the
  // secret can name a trusted peer as the sender. Only the MAC shows the envelope is the peer's,
  // before it is heard from or takes a place on the way to the bridge.
  if (!storage::envelope_authentic(args_.secret, payload))
    return refuse("envelope without this cluster's MAC under a trusted peer's name (a forged sender?)");
  last_heard_[key] = storage::envelope_clock_ms();
  if (!args_.to_bridge->try_take(payload.size()))
    return bump(args_.metrics->bridge_inbound_dropped);
  send(args_.bridge, envelope_atom_v, std::move(payload));
}

/// The link to the remote gatekeeper `key` is gone (both directions name it by one key, and a
/// dropped connection ends both): what the peer sends meanwhile never comes.
void gatekeeper::lose(const std::string& key) {
  const bool was_linked = handshake_.linked(key);
  auto dialer = accepted_.find(key);
  const bool was_trusted = dialer != accepted_.end() && handshake_.trusts(key);
  if (was_linked)
    args_.metrics->cluster_peers_linked -= 1;
  if (was_linked || was_trusted) {
    auto where = where_.find(key);
    auto heard = last_heard_.find(key);
    const auto lost_at = heard == last_heard_.end() ? storage::envelope_clock_ms() : heard->second;
    const bool dialer_only = where == where_.end();
    open_gap(was_linked ? handshake_.peer_id(key) : dialer->second.node,
             dialer_only ? std::string() : where->second, lost_at);
    // Reported late (the link died quietly): the peer may be back already, under another node
    // id, over a link that proved since it was last heard; that link will not end this gap.
    if (dialer_only && proved_since(key, lost_at))
      cover_dialer_gaps();
  }
  handshake_.forget(key);
  dialed_.erase(key);
  where_.erase(key);
  accepted_.erase(key);
  last_heard_.erase(key);
}

bool gatekeeper::proved_since(const std::string& lost_key, std::int64_t since_ms) const {
  for (const auto& [key, dialer] : accepted_)
    if (key != lost_key && dialer.proved_ms >= since_ms && handshake_.trusts(key))
      return true;
  return false;
}

/// The link watch saw the link of dialer `key` drop; an older epoch's report is about a link
/// since replaced.
void gatekeeper::lose_dialer(const std::string& key, const std::string& epoch) {
  auto dialer = accepted_.find(key);
  if (dialer == accepted_.end() || std::to_string(dialer->second.epoch) != epoch)
    return;
  spdlog::warn("cluster: link from peer {} lost", printable(dialer->second.node, 80));
  lose(key);
}

/// The first loss counts: a gap already open for the peer keeps its start.
void gatekeeper::open_gap(const std::string& node, const std::string& where, std::int64_t lost_at) {
  for (auto& gap : gaps_)
    if ((!where.empty() && gap.where == where) || (!node.empty() && gap.node == node)) {
      if (gap.where.empty())
        gap.where = where;
      return;
    }
  if (gaps_.size() >= max_gaps) {
    send(args_.bridge, ready_atom_v, gaps_.front().lost_at); // fill early, never forget
    gaps_.erase(gaps_.begin());
  }
  gaps_.push_back(link_gap{lost_at, node, where});
}

/// A link to the peer `node` (or, ours, at `where`) is back: what the peer sent during its gap
/// never came. Once the link settled, the bridge has the gap filler hand the local fan-out what
/// was stored since the loss, as after a Redis gap (the fan-out drops what it delivered). True
/// when a gap ended.
bool gatekeeper::end_gaps(const std::string& node, const std::string& where) {
  const auto open = gaps_.size();
  std::erase_if(gaps_, [&](const link_gap& gap) {
    if (!(!where.empty() && gap.where == where) && !(!node.empty() && gap.node == node))
      return false;
    delayed_send(args_.bridge, gap_settle, ready_atom_v, gap.lost_at);
    return true;
  });
  return gaps_.size() != open;
}

/// A peer that only dials us comes back from a restart under another node id (unless its id is
/// configured), so its gap never matches: what its old run stored while the link was down would
/// never be filled. Any new dialer may be it, so the fill reaches back to the oldest such gap;
/// each stays open for its own peer, now covered up to here.
void gatekeeper::cover_dialer_gaps() {
  std::optional<std::int64_t> oldest;
  const auto now = storage::envelope_clock_ms();
  for (auto& gap : gaps_) {
    if (!gap.where.empty())
      continue;
    oldest = std::min(oldest.value_or(gap.lost_at), gap.lost_at);
    gap.lost_at = now;
  }
  if (oldest)
    delayed_send(args_.bridge, gap_settle, ready_atom_v, *oldest);
}

void gatekeeper::tick() {
  auto t = steady_now();
  auto voided = handshake_.expire(t);
  const std::size_t count = handshake_.take_voided_count(); // a flood: more than `voided` names
  bump(args_.metrics->bridge_refused_peers, count);
  for (std::size_t i = 0; i < voided.size() && i < 10; ++i) // ten lines a tick
    spdlog::warn("cluster: refused cluster peer {}: handshake not completed in time, or pushed out by"
                 " newer hellos (another secret, or not a pod)", printable(voided[i], 80));
  if (count > 10)
    spdlog::warn("cluster: and {} more handshakes voided", count - std::min<std::size_t>(count, 10));
  for (const auto& key : handshake_.stalled(t))
    greet(key);
  delayed_send(caf::actor_cast<caf::actor>(this), tick_period, gate_order{gate_order::kind::tick, {}, {}});
}

} // namespace comb::actors
