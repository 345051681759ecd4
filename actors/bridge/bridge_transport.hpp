// SPDX-License-Identifier: MIT
#pragma once

#include <string>

namespace comb::actors {

/// A way to the other pods that carries opaque envelopes (Redis pub/sub). Thread-safe.
class bridge_transport {
public:
  virtual ~bridge_transport() = default;

  /// Sends to every other pod; dropped and counted by the transport when it is down.
  virtual void publish(std::string envelope) = 0;

  /// "" while it works; otherwise what is wrong (shown on /readyz).
  [[nodiscard]] virtual std::string problem() const = 0;
};

} // namespace comb::actors
