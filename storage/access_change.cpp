// SPDX-License-Identifier: MIT
#include "storage/access_change.hpp"

#include <charconv>

#include "protocol/hex.hpp"
#include "storage/pg_connection.hpp"

namespace comb::storage {
namespace {

// The version is bumped and the notification raised in one statement: the payload is
// "<community> <version>[ <event id hex>...][ +]".
constexpr const char* note_sql =
  "WITH bumped AS (UPDATE communities SET state_version = state_version + 1"
  " WHERE id = $1::bigint RETURNING state_version)"
  " SELECT state_version, pg_notify('comb_access', $1::bigint::text || ' ' || state_version || $2::text)"
  " FROM bumped";

std::optional<std::int64_t> number(std::string_view text) {
  std::int64_t value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || end != text.data() + text.size())
    return std::nullopt;
  return value;
}

} // namespace

std::string access_payload_suffix(const std::vector<protocol::bytes32>& written) {
  std::string suffix;
  std::size_t named = 0;
  for (const auto& id : written) {
    if (named++ == max_noted_ids) {
      suffix += " +";
      break;
    }
    suffix += ' ';
    suffix += protocol::to_hex(id);
  }
  return suffix;
}

std::optional<std::int64_t> note_access_change(pg_connection& tx, std::int64_t community_id,
                                               const std::vector<protocol::bytes32>& written,
                                               std::string& error) {
  auto reply = tx.exec(note_sql, {std::to_string(community_id), access_payload_suffix(written)});
  if (!reply.ok()) {
    error = "note access change: " + reply.error();
    return std::nullopt;
  }
  if (reply.rows() == 0)
    return std::nullopt;
  return reply.integer(0, 0);
}

std::optional<access_notice> parse_access_notice(std::string_view payload) {
  access_notice notice;
  std::size_t field = 0;
  while (!payload.empty()) {
    auto space = payload.find(' ');
    auto word = payload.substr(0, space);
    payload = space == std::string_view::npos ? std::string_view{} : payload.substr(space + 1);
    if (word.empty())
      return std::nullopt;
    if (field == 0 || field == 1) {
      auto value = number(word);
      if (!value)
        return std::nullopt;
      (field == 0 ? notice.community_id : notice.version) = *value;
    } else if (word == "+") {
      notice.more_ids = true;
    } else if (auto id = protocol::array_from_hex<32>(word)) {
      notice.ids.push_back(*id);
    } else {
      return std::nullopt;
    }
    ++field;
  }
  if (field < 2)
    return std::nullopt;
  return notice;
}

} // namespace comb::storage
