// SPDX-License-Identifier: MIT
#include "protocol/nip19.hpp"

#include <cstdint>
#include <vector>

namespace comb::protocol {
namespace {

constexpr std::string_view charset = "qpzry9x8gf2tvdw0s3jn54khce6mua7l";

std::uint32_t polymod(const std::vector<std::uint8_t>& values) {
  constexpr std::uint32_t generator[] = {0x3b6a57b2, 0x26508e6d, 0x1ea119fa, 0x3d4233dd,
                                         0x2a1462b3};
  std::uint32_t checksum = 1;
  for (std::uint8_t v : values) {
    std::uint8_t top = static_cast<std::uint8_t>(checksum >> 25);
    checksum = ((checksum & 0x1ffffff) << 5) ^ v;
    for (int i = 0; i < 5; ++i)
      if ((top >> i) & 1)
        checksum ^= generator[i];
  }
  return checksum;
}

std::vector<std::uint8_t> expanded_prefix(std::string_view prefix) {
  std::vector<std::uint8_t> out;
  for (char c : prefix)
    out.push_back(static_cast<std::uint8_t>(c) >> 5);
  out.push_back(0);
  for (char c : prefix)
    out.push_back(static_cast<std::uint8_t>(c) & 31);
  return out;
}

/// Regroups bits; with `pad` false, leftover bits must be zero padding (decoding).
std::optional<std::vector<std::uint8_t>> regroup(const std::vector<std::uint8_t>& in, int from,
                                                 int to, bool pad) {
  std::uint32_t acc = 0;
  int bits = 0;
  std::vector<std::uint8_t> out;
  const std::uint32_t max = (1u << to) - 1;
  for (std::uint8_t v : in) {
    acc = (acc << from) | v;
    bits += from;
    while (bits >= to) {
      bits -= to;
      out.push_back(static_cast<std::uint8_t>((acc >> bits) & max));
    }
  }
  if (pad && bits > 0)
    out.push_back(static_cast<std::uint8_t>((acc << (to - bits)) & max));
  else if (!pad && (bits >= from || ((acc << (to - bits)) & max) != 0))
    return std::nullopt;
  return out;
}

} // namespace

std::string encode_nip19(std::string_view prefix, const bytes32& key) {
  auto data = *regroup(std::vector<std::uint8_t>(key.begin(), key.end()), 8, 5, true);
  auto values = expanded_prefix(prefix);
  values.insert(values.end(), data.begin(), data.end());
  values.insert(values.end(), 6, 0);
  std::uint32_t checksum = polymod(values) ^ 1;
  std::string out(prefix);
  out += '1';
  for (std::uint8_t v : data)
    out += charset[v];
  for (int i = 0; i < 6; ++i)
    out += charset[(checksum >> (5 * (5 - i))) & 31];
  return out;
}

std::optional<bytes32> decode_nip19(std::string_view text, std::string_view prefix) {
  if (text.size() != prefix.size() + 1 + 52 + 6 || !text.starts_with(prefix)
      || text[prefix.size()] != '1')
    return std::nullopt;
  std::vector<std::uint8_t> data;
  for (char c : text.substr(prefix.size() + 1)) {
    auto at = charset.find(c);
    if (at == std::string_view::npos)
      return std::nullopt;
    data.push_back(static_cast<std::uint8_t>(at));
  }
  auto values = expanded_prefix(prefix);
  values.insert(values.end(), data.begin(), data.end());
  if (polymod(values) != 1)
    return std::nullopt;
  data.resize(data.size() - 6);
  auto bytes = regroup(data, 5, 8, false);
  if (!bytes || bytes->size() != 32)
    return std::nullopt;
  bytes32 out{};
  std::copy(bytes->begin(), bytes->end(), out.begin());
  return out;
}

std::optional<bytes32> parse_public_key(std::string_view text) {
  if (text.starts_with("npub1"))
    return decode_nip19(text, "npub");
  return array_from_hex<32>(text);
}

std::optional<bytes32> parse_secret_key(std::string_view text) {
  if (text.starts_with("nsec1"))
    return decode_nip19(text, "nsec");
  return array_from_hex<32>(text);
}

} // namespace comb::protocol
