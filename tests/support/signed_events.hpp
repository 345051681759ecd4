// SPDX-License-Identifier: MIT
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "protocol/canonical_json.hpp"
#include "protocol/signature.hpp"

namespace comb::test {

inline std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

/// A correctly signed event by `author`, created now unless told otherwise.
inline protocol::event sign_event(const protocol::key_pair& author, std::uint32_t kind,
                                  std::string content = "hello",
                                  std::vector<protocol::tag> tags = {},
                                  std::int64_t created_at = 0) {
  protocol::event ev;
  ev.pubkey = author.public_key();
  ev.created_at = created_at ? created_at : unix_now();
  ev.kind = kind;
  ev.tags = std::move(tags);
  ev.content = std::move(content);
  ev.id = protocol::compute_id(ev);
  ev.sig = author.sign(ev.id);
  return ev;
}

/// `["EVENT",{...}]` for `ev`.
inline std::string event_frame(const protocol::event& ev) {
  return "[\"EVENT\"," + protocol::render_event_json(ev) + "]";
}

} // namespace comb::test
