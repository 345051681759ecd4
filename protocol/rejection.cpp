// SPDX-License-Identifier: MIT
#include "protocol/rejection.hpp"

namespace comb::protocol {

std::string_view prefix_of(reason why) noexcept {
  switch (why) {
    case reason::invalid:
      return "invalid";
    case reason::duplicate:
      return "duplicate";
    case reason::blocked:
      return "blocked";
    case reason::rate_limited:
      return "rate-limited";
    case reason::auth_required:
      return "auth-required";
    case reason::restricted:
      return "restricted";
    case reason::pow:
      return "pow";
    case reason::error:
      return "error";
    case reason::info:
      return "info";
    case reason::unsupported:
      return "unsupported";
  }
  return "error";
}

std::string rejection::text() const {
  std::string out(prefix_of(why));
  out += ": ";
  out += detail;
  return out;
}

} // namespace comb::protocol
