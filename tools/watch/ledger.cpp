// SPDX-License-Identifier: MIT
#include "tools/watch/ledger.hpp"

#include <algorithm>

namespace comb::watch {
namespace {

constexpr std::string_view header_line = "comb-watch ledger 1";

/// Splits on '\n'; a trailing newline does not make an empty last line.
std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    auto end = text.find('\n');
    lines.push_back(text.substr(0, end));
    text = end == std::string_view::npos ? std::string_view() : text.substr(end + 1);
  }
  return lines;
}

} // namespace

bool is_pubkey_hex(std::string_view text) noexcept {
  return text.size() == 64 && std::all_of(text.begin(), text.end(), [](char c) {
           return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
         });
}

bool ledger::contains(std::string_view key) const {
  return index_.contains(pubkey_hex(key));
}

std::vector<pubkey_hex> ledger::unseen(const std::vector<pubkey_hex>& roster) const {
  std::vector<pubkey_hex> fresh;
  std::unordered_set<std::string_view> taken;
  for (const auto& key : roster)
    if (!contains(key) && taken.insert(key).second)
      fresh.push_back(key);
  return fresh;
}

ledger ledger::after(const std::vector<pubkey_hex>& roster, std::size_t departed_cap) const {
  ledger next = *this;
  next.seeded_ = true;
  for (const auto& key : roster)
    next.add(key);
  next.drop_departed_beyond(roster, departed_cap);
  return next;
}

void ledger::add(const pubkey_hex& key) {
  if (index_.insert(key).second)
    keys_.push_back(key);
}

void ledger::drop_departed_beyond(const std::vector<pubkey_hex>& roster, std::size_t departed_cap) {
  std::unordered_set<std::string_view> present(roster.begin(), roster.end());
  auto departed = static_cast<std::size_t>(std::count_if(
    keys_.begin(), keys_.end(), [&](const pubkey_hex& key) { return !present.contains(key); }));
  if (departed <= departed_cap)
    return;
  std::size_t excess = departed - departed_cap;
  std::vector<pubkey_hex> kept;
  kept.reserve(keys_.size() - excess);
  for (auto& key : keys_) {
    if (excess > 0 && !present.contains(key)) {
      index_.erase(key);
      --excess;
      continue;
    }
    kept.push_back(std::move(key));
  }
  keys_ = std::move(kept);
}

std::string ledger::serialize() const {
  std::string out(header_line);
  out += seeded_ ? "\nseeded yes\n" : "\nseeded no\n";
  out.reserve(out.size() + keys_.size() * 65);
  for (const auto& key : keys_) {
    out += key;
    out += '\n';
  }
  return out;
}

std::optional<ledger> ledger::parse(std::string_view text) {
  auto lines = lines_of(text);
  if (lines.size() < 2 || lines[0] != header_line)
    return std::nullopt;
  if (lines[1] != "seeded yes" && lines[1] != "seeded no")
    return std::nullopt;
  ledger out;
  out.seeded_ = lines[1] == "seeded yes";
  for (std::size_t i = 2; i < lines.size(); ++i) {
    if (!is_pubkey_hex(lines[i]))
      return std::nullopt;
    out.add(pubkey_hex(lines[i]));
  }
  return out;
}

} // namespace comb::watch
