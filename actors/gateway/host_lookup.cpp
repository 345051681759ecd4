// SPDX-License-Identifier: MIT
#include "actors/gateway/host_lookup.hpp"

#include <atomic>
#include <boost/asio.hpp>
#include <memory>

#include "actors/gateway/ask_actor.hpp"
#include "actors/waiting_place.hpp"
#include "actors/messages.hpp"

namespace comb::actors {
namespace asio = boost::asio;

namespace {

/// Host lookups that may wait on the directory actor at once, over the pod. It asks Postgres one
/// at a time; requests naming hosts nobody serves (any client can send any Host header, and each
/// new one misses the cache) would otherwise queue without bound in front of real ones. Past it a
/// request for a host not cached is answered 503 at once.
constexpr std::size_t max_waiting_host_lookups = 256;

} // namespace

asio::awaitable<host_lookup> lookup_host(gateway_context& context, std::string host) {
  if (auto hit = context.communities->cached(host))
    co_return *hit;
  waiting_place place(context.host_lookups_waiting, max_waiting_host_lookups);
  if (!place.taken()) {
    // A flood of made-up hosts fills the places; a host this pod served keeps its last answer
    // meanwhile, rather than 503 (an archive or deletion applied here dropped it: forget_community).
    if (auto known = context.communities->last_known(host)) {
      bump(context.metrics->host_lookups_stale);
      co_return *known;
    }
    bump(context.metrics->host_lookups_refused);
    co_return host_lookup{false, std::nullopt};
  }
  bump(context.metrics->host_lookups);
  host_lookup answer = co_await ask_actor<host_lookup>(context.directory, lookup_atom_v, std::move(host));
  co_return answer;
}

} // namespace comb::actors
