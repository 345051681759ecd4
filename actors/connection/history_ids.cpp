// SPDX-License-Identifier: MIT
#include <algorithm>
#include <cstring>

#include "actors/connection/connection.hpp"
#include "protocol/hex.hpp"

namespace comb::actors {
namespace {

constexpr std::string_view rendered_id_prefix = "{\"id\":\"";

std::uint64_t leading_chars(const std::array<char, 64>& hex) noexcept {
  std::uint64_t value = 0;
  std::memcpy(&value, hex.data(), sizeof value);
  return value;
}

} // namespace

bool history_ids::add(std::string_view json) {
  if (json.size() < rendered_id_prefix.size() + 64 || !json.starts_with(rendered_id_prefix))
    return false;
  auto& id = ids_.emplace_back();
  std::memcpy(id.data(), json.data() + rendered_id_prefix.size(), id.size());
  return true;
}

void history_ids::seal() {
  sorted_.clear();
  sorted_.reserve(ids_.size());
  for (std::size_t i = 0; i < ids_.size(); ++i)
    sorted_.emplace_back(leading_chars(ids_[i]), static_cast<std::uint32_t>(i));
  std::sort(sorted_.begin(), sorted_.end());
}

bool history_ids::contains(const protocol::bytes32& id) const {
  std::array<char, 64> hex{};
  protocol::write_hex(id, hex.data());
  const std::uint64_t leading = leading_chars(hex);
  auto it = std::lower_bound(sorted_.begin(), sorted_.end(), std::make_pair(leading, std::uint32_t{0}));
  for (; it != sorted_.end() && it->first == leading; ++it)
    if (ids_[it->second] == hex)
      return true;
  return false;
}

} // namespace comb::actors
