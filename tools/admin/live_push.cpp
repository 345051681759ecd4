// SPDX-License-Identifier: MIT
#include "admin/live_push.hpp"

#include <array>
#include <hiredis/hiredis.h>
#include <memory>
#include <vector>

#include "protocol/hex.hpp"
#include "protocol/signature.hpp"
#include "storage/bridge_envelope.hpp"
#include "storage/redis/redis_url.hpp"

namespace comb::admin {
namespace {

struct context_free {
  void operator()(redisContext* c) const noexcept { redisFree(c); }
};
using redis_context = std::unique_ptr<redisContext, context_free>;

/// Pods ignore envelopes from their own node id; this one is unique per run, so every pod
/// (and a second comb-admin) takes ours.
std::string origin_id() {
  std::array<std::uint8_t, 6> random{};
  protocol::fill_random(random);
  return "comb-admin-" + protocol::to_hex(random);
}

/// The stored JSON of the role definitions, list and deltas a write produced.
std::vector<const std::string*> events_of(const storage::membership_write& write) {
  std::vector<const std::string*> events;
  for (const auto& definition : write.role_definitions)
    events.push_back(&definition.json);
  if (write.list)
    events.push_back(&write.list_json);
  for (const auto& result : write.results)
    if (result.delta)
      events.push_back(&result.delta_json);
  return events;
}

/// Connects with a short timeout: an operator waits for this, and the push is optional.
redis_context connect(const std::string& url, std::string& error) {
  storage::redis_detail::redis_endpoint endpoint;
  if (auto bad = storage::redis_detail::parse_redis_url(url, endpoint)) {
    error = *bad;
    return nullptr;
  }
  const timeval timeout{2, 0};
  redis_context c(redisConnectWithTimeout(endpoint.host.c_str(), endpoint.port, timeout));
  if (!c || c->err) {
    error = c ? c->errstr : "out of memory";
    return nullptr;
  }
  redisSetTimeout(c.get(), timeout);
  return c;
}

bool publish(redisContext* c, const std::string& payload, std::string& error) {
  // %b: the payload is passed with its length, never interpreted by a format.
  auto* reply = static_cast<redisReply*>(
    redisCommand(c, "PUBLISH %s %b", bridge_channel, payload.data(), payload.size()));
  if (!reply) {
    error = c->errstr;
    return false;
  }
  bool ok = reply->type == REDIS_REPLY_INTEGER;
  if (!ok)
    error = reply->type == REDIS_REPLY_ERROR ? reply->str : "unexpected reply";
  freeReplyObject(reply);
  return ok;
}

} // namespace

void push_live(const std::string& redis_url, std::int64_t community_id,
               const storage::membership_write& write, reporter& out) {
  auto events = events_of(write);
  if (events.empty())
    return;
  out.fields()["pushed_live"] = false;
  if (redis_url.empty()) {
    out.note("no Redis configured (--redis-url or COMB_REDIS_URL): every pod delivers the change"
             " from its Postgres notification");
    return;
  }
  std::string error;
  auto c = connect(redis_url, error);
  const std::string origin = origin_id();
  for (const auto* json : events)
    if (!c || !publish(c.get(), storage::encode_envelope(origin, community_id, *json), error)) {
      out.note("warning: could not push the change over Redis (" + error + "): every pod still"
               " delivers it from its Postgres notification");
      return;
    }
  out.fields()["pushed_live"] = true;
}

} // namespace comb::admin
