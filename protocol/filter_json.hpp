// SPDX-License-Identifier: MIT
#pragma once

#include <boost/json/value.hpp>

#include "protocol/filter.hpp"
#include "protocol/limits.hpp"
#include "protocol/result.hpp"

namespace comb::protocol {

/// Parses one REQ/COUNT filter object. Unknown fields, wrong types, bad hex, negative numbers and
/// lists longer than `limits.max_values_per_filter_field` are refused; `limit` is lowered to
/// `limits.max_limit`.
[[nodiscard]] result<filter> filter_from_json(const boost::json::value& json,
                                              const protocol_limits& limits);

} // namespace comb::protocol
