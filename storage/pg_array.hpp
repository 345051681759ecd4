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

/// A one-dimensional array in Postgres's binary format (what array_send writes), for a parameter
/// sent in binary (`pg_connection::exec` with `binary`): values travel as raw bytes with their
/// lengths, so Postgres does not parse and unescape a literal, nor decode hex, and nothing is
/// escaped here. The element type is fixed by `element`; the statement's cast must name the
/// same type (`$n::text[]` for text elements), or Postgres refuses the parameter. Text must be
/// valid UTF-8 without NUL bytes, as for any text value.
class pg_binary_array {
public:
  enum class element : std::uint32_t { int8 = 20, int4 = 23, text = 25, bytea = 17 };

  explicit pg_binary_array(element type) : type_(type) {}

  /// A text or bytea element.
  void add_bytes(std::string_view value);
  void add_bytes(std::span<const std::uint8_t> value);
  /// An int8 or int4 element, by the array's type.
  void add_integer(std::int64_t value);
  void add_null();

  [[nodiscard]] bool empty() const noexcept { return count_ == 0; }

  /// The binary value: header (dimensions, null flag, element type) and the elements.
  [[nodiscard]] std::string str() const;

private:
  element type_;
  std::string body_;
  std::uint32_t count_ = 0;
  bool has_null_ = false;
};

/// Rows in COPY's binary format (`COPY t (columns) FROM STDIN (FORMAT binary)`, sent with
/// pg_connection::copy_in): each field raw, with its length, in the binary form of its column's
/// type (8 bytes for bigint, 4 for integer, the bytes of text and bytea). Fields go in the order
/// of the statement's column list; every row has `fields` of them.
class pg_copy_rows {
public:
  explicit pg_copy_rows(std::uint16_t fields) : fields_(fields) {}

  /// Starts the next row; then add exactly `fields` values.
  void row();
  void add_bytes(std::string_view value);
  void add_bytes(std::span<const std::uint8_t> value);
  void add_int8(std::int64_t value);
  void add_int4(std::int32_t value);
  void add_null();

  [[nodiscard]] std::size_t rows() const noexcept { return rows_; }

  /// The whole COPY input: signature, the rows, the end marker.
  [[nodiscard]] std::string str() const;

private:
  std::uint16_t fields_;
  std::string body_;
  std::size_t rows_ = 0;
};

/// A single bytea parameter in hex form ("\x0a1b...").
[[nodiscard]] std::string bytea_param(std::span<const std::uint8_t> value);

} // namespace comb::storage
