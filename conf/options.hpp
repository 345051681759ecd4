// SPDX-License-Identifier: MIT
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "conf/settings.hpp"

namespace comb::conf {

/// One setting: its TOML key, environment variable, help, and how to set and show it.
struct option {
  std::string key;
  std::string env;
  std::string help;
  bool secret = false;
  /// Sets the value from text; returns a message naming the accepted values on failure.
  std::function<std::optional<std::string>(relay_settings&, std::string_view)> set;
  std::function<std::string(const relay_settings&)> show;
};

/// Every option comb-relay reads, in the order the example file lists them.
[[nodiscard]] const std::vector<option>& all_options();

} // namespace comb::conf
