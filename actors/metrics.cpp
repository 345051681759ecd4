// SPDX-License-Identifier: MIT
#include "actors/metrics.hpp"

#include <sstream>

namespace comb::actors {
namespace {

template <class T>
void write(std::ostringstream& out, const char* name, const char* type, const char* help,
           const std::atomic<T>& value, const char* labels = "") {
  out << "# HELP " << name << ' ' << help << "\n# TYPE " << name << ' ' << type << '\n'
      << name << labels << ' ' << value.load(std::memory_order_relaxed) << '\n';
}

void write_labelled(std::ostringstream& out, const char* name, const char* labels,
                    std::uint64_t value) {
  out << name << labels << ' ' << value << '\n';
}

} // namespace

std::string relay_metrics::render() const {
  std::ostringstream out;
  write(out, "comb_connections", "gauge", "Open WebSocket connections.", connections_current);
  write(out, "comb_connections_total", "counter", "WebSocket connections accepted.", connections_total);
  write(out, "comb_connections_refused_total", "counter", "Upgrades refused (limit, host, archived).", connections_refused);
  out << "# HELP comb_messages_total Client messages by type.\n# TYPE comb_messages_total counter\n";
  write_labelled(out, "comb_messages_total", "{type=\"EVENT\"}", messages_event.load());
  write_labelled(out, "comb_messages_total", "{type=\"REQ\"}", messages_req.load());
  write_labelled(out, "comb_messages_total", "{type=\"COUNT\"}", messages_count.load());
  write_labelled(out, "comb_messages_total", "{type=\"CLOSE\"}", messages_close.load());
  write_labelled(out, "comb_messages_total", "{type=\"AUTH\"}", messages_auth.load());
  write_labelled(out, "comb_messages_total", "{type=\"invalid\"}", messages_invalid.load());
  write(out, "comb_events_accepted_total", "counter", "Events that passed every check.", events_accepted);
  write(out, "comb_events_rejected_total", "counter", "Events refused before storage.", events_rejected);
  write(out, "comb_events_stored_total", "counter", "Events committed to Postgres.", events_stored);
  write(out, "comb_events_duplicate_total", "counter", "Events already stored or superseded.", events_duplicate);
  write(out, "comb_events_store_failed_total", "counter", "Events the database could not store.", events_failed);
  write(out, "comb_fanout_deliveries_total", "counter", "Live events delivered to subscriptions.", deliveries);
  write(out, "comb_slow_reader_disconnects_total", "counter", "Connections cut for unread output.", slow_reader_disconnects);
  write(out, "comb_oversize_disconnects_total", "counter", "Connections cut for an oversize frame.", oversize_disconnects);
  write(out, "comb_write_batches_total", "counter", "Group-commit transactions.", write_batches);
  write(out, "comb_bridge_published_total", "counter", "Events sent to other pods.", bridge_published);
  write(out, "comb_bridge_received_total", "counter", "Events received from other pods.", bridge_received);
  write(out, "comb_bridge_rejected_total", "counter", "Envelopes from other pods that failed checks.", bridge_rejected);
  write(out, "comb_cluster_peers_linked", "gauge", "CAF cluster peers that accepted this pod.", cluster_peers_linked);
  write(out, "comb_bridge_refused_peers_total", "counter", "Cluster peers or messages refused for lack of the secret.", bridge_refused_peers);
  return out.str();
}

} // namespace comb::actors
