// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>

#include "protocol/signature.hpp"

namespace comb::conf {

/// The deployment's key pair, which signs every relay-authored event (NIP-43 lists and deltas,
/// invites). Read from `path` (64 hex characters or an nsec); created there with mode 0600 when
/// the file does not exist and `create` is true. Nothing, with `error` set, on any problem.
[[nodiscard]] std::optional<protocol::key_pair> load_relay_key(const std::string& path,
                                                               bool create,
                                                               std::string& error);

} // namespace comb::conf
