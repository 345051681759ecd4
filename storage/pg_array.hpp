// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>

namespace comb::storage {

/// Builds a Postgres array literal ("{...}") so a whole list travels as one text parameter
/// (`$n::bytea[]`, `$n::text[]`, `$n::bigint[]`) and multi-row statements can `unnest` it.
/// Every non-NULL element is double-quoted with `"` and `\` escaped, so commas, braces, quotes,
/// backslashes, spaces and the word NULL inside a value stay part of the value.
/// Values must not hold a NUL byte (libpq parameters are C strings).
class pg_array {
public:
  void add_text(std::string_view value);
  /// bytea in hex form: "\\x0a1b..." inside the literal.
  void add_bytea(std::span<const std::uint8_t> value);
  void add_integer(std::int64_t value);
  void add_null();

  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }

  [[nodiscard]] std::size_t size() const noexcept { return count_; }

  /// The literal, e.g. {"a","b \"c\""} or {} when empty.
  [[nodiscard]] std::string str() const;

private:
  void separate();

  std::string body_;
  std::size_t count_ = 0;
};

/// A single bytea parameter in hex form ("\x0a1b...").
[[nodiscard]] std::string bytea_param(std::span<const std::uint8_t> value);

} // namespace comb::storage
