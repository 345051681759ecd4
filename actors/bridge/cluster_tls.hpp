// SPDX-License-Identifier: MIT
#pragma once

#include <optional>
#include <string>

#include "conf/settings.hpp"

namespace comb::actors {

/// Loads the cluster certificate, key and CA the way CAF's OpenSSL module will, and checks that
/// the key belongs to the certificate and the certificate chains to the CA. CAF throws from its
/// network thread on a file it cannot load, so this runs before the actor system starts. Nothing
/// when fine (or when TLS is not configured); otherwise what is wrong.
[[nodiscard]] std::optional<std::string> cluster_tls_problem(const conf::relay_settings& settings);

} // namespace comb::actors
