// SPDX-License-Identifier: MIT
#include "storage/pg_array.hpp"

#include "protocol/hex.hpp"

namespace comb::storage {

void pg_array::separate() {
  if (count_++ > 0)
    body_ += ',';
}

void pg_array::add_text(std::string_view value) {
  separate();
  body_ += '"';
  for (char c : value) {
    if (c == '"' || c == '\\')
      body_ += '\\';
    body_ += c;
  }
  body_ += '"';
}

void pg_array::add_bytea(std::span<const std::uint8_t> value) {
  separate();
  // bytea's own input syntax starts with a backslash, which the array literal escapes again.
  body_ += "\"\\\\x";
  protocol::append_hex(body_, value);
  body_ += '"';
}

void pg_array::add_integer(std::int64_t value) {
  separate();
  body_ += std::to_string(value);
}

void pg_array::add_null() {
  separate();
  body_ += "NULL";
}

std::string pg_array::str() const {
  return '{' + body_ + '}';
}

std::string bytea_param(std::span<const std::uint8_t> value) {
  std::string out = "\\x";
  protocol::append_hex(out, value);
  return out;
}

} // namespace comb::storage
