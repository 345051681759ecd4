// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>

#include "protocol/signature.hpp"

namespace comb::storage {

class pg_connection;

/// A deployment signs with one relay key (every community's key derives from it): a pod or a
/// comb-admin holding another would sign member lists and room state that no app trusts, while
/// the members table changed. The first to use the database records its key's public half;
/// afterwards nothing (ok) for that key, and for any other the problem, naming both keys and
/// `key_file`. Also nothing to say when the database cannot be asked (the caller's next
/// statement reports that).
[[nodiscard]] std::optional<std::string> check_relay_identity(pg_connection& connection,
                                                              const protocol::key_pair& relay_key,
                                                              const std::string& key_file);

} // namespace comb::storage
