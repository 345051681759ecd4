// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace comb::storage {

class pg_connection;

/// Which stored events an export takes (each bound inclusive, as in a NIP-01 filter).
struct export_range {
  std::optional<std::int64_t> since;
  std::optional<std::int64_t> until;
  std::vector<std::uint32_t> kinds; ///< empty: every kind
};

/// How an export reads: keys `keys_per_fetch` at a time from its cursor, events in pages of at
/// most `page_bytes` (a page holds one event at least, up to the largest frame, 1 MiB).
struct export_paging {
  std::size_t keys_per_fetch = 500;
  std::size_t page_bytes = 8 * 1024 * 1024;
};

/// Receives one event's stored JSON; returns false to stop the export (e.g. a full disk).
using export_sink = std::function<bool(std::string_view json)>;

/// Streams the community's events in `range` to `sink`, oldest first (same second: lowest id
/// first), exactly as stored. Expired events (NIP-40, expiration <= now) are left out, as a
/// query would. One snapshot (a repeatable-read transaction), read through a server-side cursor
/// in pages of bounded bytes (`paging`), so memory stays bounded whatever the community holds
/// and however large its events are. Then, from
/// the same snapshot, the NIP-62 requests to vanish carried out in the community (as signed;
/// by their created_at within the range, when its kinds include 62): an import carries them out
/// again, so the target refuses what the source deleted.
/// Returns the error, if any; a sink that stops the export is not an error.
[[nodiscard]] std::optional<std::string> export_events(pg_connection& connection,
                                                       std::int64_t community_id,
                                                       const export_range& range,
                                                       std::int64_t now,
                                                       const export_sink& sink,
                                                       export_paging paging = {});

} // namespace comb::storage
