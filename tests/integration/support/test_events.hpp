// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/signature.hpp"
#include "storage/event_store.hpp"

namespace comb::test {

using event_ptr = std::shared_ptr<const protocol::event>;

/// Signs events for one fixed test key (`seed` picks the key), so runs are reproducible.
class author {
public:
  explicit author(std::uint8_t seed);

  [[nodiscard]] event_ptr sign(std::uint32_t kind,
                               std::int64_t created_at,
                               std::vector<protocol::tag> tags = {},
                               std::string content = "") const;

  [[nodiscard]] const protocol::bytes32& pubkey() const noexcept { return keys_.public_key(); }

  [[nodiscard]] std::string pubkey_hex() const;

private:
  protocol::key_pair keys_;
};

/// A write of `ev` into `community`, with its JSON rendered as the relay would.
[[nodiscard]] storage::event_write write_of(std::int64_t community, const event_ptr& ev);

/// Stores one event and returns its outcome.
[[nodiscard]] storage::store_outcome store_one(storage::event_store& store,
                                               std::int64_t community,
                                               const event_ptr& ev);

/// Checks an outcome's status and exact message (shown when either differs).
void check_outcome(const storage::store_outcome& outcome, storage::store_outcome::status expected,
                   const std::string& message);

/// The JSON the store must return for `ev`.
[[nodiscard]] std::string json_of(const event_ptr& ev);

/// JSON of each event, in the given order: what a query is expected to return.
[[nodiscard]] std::vector<std::string> jsons_of(const std::vector<event_ptr>& events);

[[nodiscard]] std::string hex(const protocol::bytes32& value);

/// The public key of the fixed test key `seed` (author(seed)).
[[nodiscard]] protocol::bytes32 key(std::uint8_t seed);

/// Two events of `kind` by `who` at the same second, returned lowest id first.
[[nodiscard]] std::pair<event_ptr, event_ptr> same_second_pair(const author& who,
                                                               std::uint32_t kind,
                                                               std::int64_t created_at,
                                                               std::vector<protocol::tag> tags = {});

} // namespace comb::test
