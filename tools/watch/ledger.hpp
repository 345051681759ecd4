// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace comb::watch {

/// A public key as 64 lowercase hex characters, the form member tags carry.
using pubkey_hex = std::string;

/// Departed keys kept by default. Keys still on the list are never dropped, or they would alert
/// again on every list.
inline constexpr std::size_t default_departed_cap = 10'000;

/// What one viewer has already been told about one community: every key seen on a list since
/// seeding (oldest first) and an explicit `seeded` bit. The bit is not inferred from emptiness,
/// because a community whose only member is the viewer must still alert on its first join.
class ledger {
public:
  [[nodiscard]] bool seeded() const noexcept { return seeded_; }

  [[nodiscard]] bool contains(std::string_view key) const;

  [[nodiscard]] const std::vector<pubkey_hex>& keys() const noexcept { return keys_; }

  /// Keys of `roster` the ledger has not seen, in roster order, each once.
  [[nodiscard]] std::vector<pubkey_hex> unseen(const std::vector<pubkey_hex>& roster) const;

  /// This ledger after taking in `roster`: seeded, every roster key recorded, and at most
  /// `departed_cap` keys that are no longer on the roster (the longest-known dropped first).
  [[nodiscard]] ledger after(const std::vector<pubkey_hex>& roster, std::size_t departed_cap) const;

  /// A small line-based text form: a header, the seeded bit, then one key per line.
  [[nodiscard]] std::string serialize() const;

  /// Nothing when `text` is not a ledger this version wrote.
  [[nodiscard]] static std::optional<ledger> parse(std::string_view text);

  friend bool operator==(const ledger& a, const ledger& b) {
    return a.seeded_ == b.seeded_ && a.keys_ == b.keys_;
  }

private:
  void add(const pubkey_hex& key);
  void drop_departed_beyond(const std::vector<pubkey_hex>& roster, std::size_t departed_cap);

  bool seeded_ = false;
  std::vector<pubkey_hex> keys_;
  std::unordered_set<pubkey_hex> index_;
};

/// 64 lowercase hex characters.
[[nodiscard]] bool is_pubkey_hex(std::string_view text) noexcept;

} // namespace comb::watch
