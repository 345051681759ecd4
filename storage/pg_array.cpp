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

namespace {

/// Network byte order, as Postgres's binary formats use.
void append_be(std::string& out, std::uint64_t value, int bytes) {
  for (int shift = (bytes - 1) * 8; shift >= 0; shift -= 8)
    out += static_cast<char>((value >> shift) & 0xff);
}

} // namespace

void pg_binary_array::add_bytes(std::string_view value) {
  append_be(body_, value.size(), 4);
  body_ += value;
  ++count_;
}

void pg_binary_array::add_bytes(std::span<const std::uint8_t> value) {
  add_bytes(std::string_view(reinterpret_cast<const char*>(value.data()), value.size()));
}

void pg_binary_array::add_integer(std::int64_t value) {
  const int width = type_ == element::int4 ? 4 : 8;
  append_be(body_, static_cast<std::uint32_t>(width), 4);
  append_be(body_, static_cast<std::uint64_t>(value), width);
  ++count_;
}

void pg_binary_array::add_null() {
  append_be(body_, 0xffffffffu, 4); // length -1
  has_null_ = true;
  ++count_;
}

std::string pg_binary_array::str() const {
  std::string out;
  out.reserve(20 + body_.size());
  append_be(out, count_ == 0 ? 0 : 1, 4); // dimensions: an empty array has none
  append_be(out, has_null_ ? 1 : 0, 4);
  append_be(out, static_cast<std::uint32_t>(type_), 4);
  if (count_ > 0) {
    append_be(out, count_, 4); // elements
    append_be(out, 1, 4);      // lower bound
  }
  out += body_;
  return out;
}

void pg_copy_rows::row() {
  append_be(body_, fields_, 2);
  ++rows_;
}

void pg_copy_rows::add_bytes(std::string_view value) {
  append_be(body_, value.size(), 4);
  body_ += value;
}

void pg_copy_rows::add_bytes(std::span<const std::uint8_t> value) {
  add_bytes(std::string_view(reinterpret_cast<const char*>(value.data()), value.size()));
}

void pg_copy_rows::add_int8(std::int64_t value) {
  append_be(body_, 8, 4);
  append_be(body_, static_cast<std::uint64_t>(value), 8);
}

void pg_copy_rows::add_int4(std::int32_t value) {
  append_be(body_, 4, 4);
  append_be(body_, static_cast<std::uint32_t>(value), 4);
}

void pg_copy_rows::add_null() {
  append_be(body_, 0xffffffffu, 4); // length -1
}

std::string pg_copy_rows::str() const {
  static constexpr char signature[] = "PGCOPY\n\xff\r\n"; // and a NUL: 11 bytes
  std::string out(signature, sizeof signature); // sizeof counts the terminating NUL
  out.reserve(out.size() + 8 + body_.size() + 2);
  append_be(out, 0, 4); // flags: no OIDs
  append_be(out, 0, 4); // header extension: none
  out += body_;
  append_be(out, 0xffff, 2); // end of data: a field count of -1
  return out;
}

std::string bytea_param(std::span<const std::uint8_t> value) {
  std::string out = "\\x";
  protocol::append_hex(out, value);
  return out;
}

} // namespace comb::storage
