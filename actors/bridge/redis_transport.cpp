// SPDX-License-Identifier: MIT
#include "actors/bridge/redis_transport.hpp"

#include <spdlog/spdlog.h>
#include <utility>

#include "actors/messages.hpp"
#include "storage/bridge_envelope.hpp"

namespace comb::actors {

redis_transport::redis_transport(boost::asio::io_context& io, std::string url, std::string channel)
  : io_(io) {
  options_.url = std::move(url);
  options_.channel = std::move(channel);
  options_.max_message_bytes = storage::max_envelope_bytes;
}

std::optional<std::string> redis_transport::start(caf::actor bridge,
                                                  std::shared_ptr<inbound_bound> inbound,
                                                  std::shared_ptr<relay_metrics> metrics) {
  link_ = std::make_unique<storage::redis_pubsub>(
    io_, options_,
    [bridge, inbound, metrics](std::string payload) {
      if (!inbound->try_take(payload.size()))
        return bump(metrics->bridge_inbound_dropped);
      caf::anon_send(bridge, redis_atom_v, std::move(payload));
    },
    [this, bridge](bool up) {
      if (!up && lost_at_ms_ == 0)
        lost_at_ms_ = storage::envelope_clock_ms();
      if (up) {
        spdlog::info("bridge: Redis connected");
        if (auto lost = std::exchange(lost_at_ms_, 0); lost != 0)
          caf::anon_send(bridge, ready_atom_v, lost);
      } else if (link_ && link_->stats().refused_login) {
        spdlog::error("bridge: Redis refused the credentials of COMB_REDIS_URL (AUTH or SELECT); "
                      "serving local clients, retrying");
      } else {
        spdlog::warn("bridge: Redis unreachable; serving local clients, retrying");
      }
    });
  return link_->start();
}

void redis_transport::stop() {
  if (link_)
    link_->stop();
}

void redis_transport::drain(std::chrono::milliseconds wait) {
  if (link_)
    link_->drain(wait);
}

void redis_transport::publish(std::string envelope) {
  link_->publish(std::move(envelope));
}

std::string redis_transport::problem() const {
  if (link_ && link_->up())
    return {};
  return link_ && link_->stats().refused_login ? "redis refused the credentials of COMB_REDIS_URL"
                                               : "redis unreachable";
}

const storage::redis_stats& redis_transport::stats() const {
  return link_->stats();
}

} // namespace comb::actors
