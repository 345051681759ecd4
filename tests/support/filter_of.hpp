// SPDX-License-Identifier: MIT
#pragma once

#include <string>

#include <boost/json.hpp>

#include "protocol/filter.hpp"
#include "protocol/filter_json.hpp"

namespace comb::test {

/// A filter from its JSON, under the default protocol limits (the JSON must be a valid filter).
inline protocol::filter filter_of(const std::string& json) {
  return protocol::filter_from_json(boost::json::parse(json), protocol::protocol_limits{}).value();
}

} // namespace comb::test
