// SPDX-License-Identifier: MIT
// What the comb-admin export / import tests share: files, stored ids, counts, room requests.
#pragma once

#include <boost/json.hpp>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sys/resource.h>
#include <sstream>

#include "cli_fixture.hpp"
#include "room_request.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/filter_json.hpp"
#include "protocol/kind_rules.hpp"
#include "protocol/nip19.hpp"
#include "protocol/room.hpp"
#include "storage/pg_connection.hpp"
#include "storage/room_store.hpp"
#include "support/signed_events.hpp"


namespace comb::test_portability {

using namespace comb::test;


/// A file in the fixture's private folder.
inline std::string file_in(const cli_fixture& f, const std::string& name) {
  return f.folder + "/" + name;
}

inline void write_lines(const std::string& path, const std::vector<std::string>& lines,
                 const std::string& tail = "") {
  std::ofstream out(path, std::ios::trunc);
  for (const auto& line : lines)
    out << line << '\n';
  out << tail;
}

inline std::vector<std::string> read_lines(const std::string& path) {
  std::ifstream in(path);
  std::vector<std::string> lines;
  for (std::string line; std::getline(in, line);)
    lines.push_back(line);
  return lines;
}

inline std::string json_of(const protocol::event& ev) {
  return protocol::render_event_json(ev);
}

inline std::string hex_of(const protocol::key_pair& key) {
  return protocol::to_hex(key.public_key());
}

inline std::string npub(const protocol::key_pair& key) {
  return protocol::encode_nip19("npub", key.public_key());
}

inline std::int64_t community_id(const cli_fixture& f, const std::string& host) {
  return std::stoll(f.sql("SELECT id FROM communities WHERE host = $1", {host}));
}

/// What a REQ with `filter_json` gets from `host`, minus the kinds a relay signs (those are
/// every relay's own), as the stored JSON of each event in reply order.
inline std::vector<std::string> req(const cli_fixture& f, const std::string& host,
                             const std::string& filter_json) {
  storage::pg_connection connection(f.database.conninfo());
  storage::event_store events(connection);
  auto filter = protocol::filter_from_json(boost::json::parse(filter_json), {});
  REQUIRE(filter);
  auto reply = events.query(community_id(f, host), {filter.value()}, unix_now(), 5000);
  REQUIRE(reply.ok);
  std::vector<std::string> kept;
  for (auto& json : reply.events)
    if (!protocol::relay_signed_kind(
          static_cast<std::uint32_t>(boost::json::parse(json).at("kind").as_int64())))
      kept.push_back(std::move(json));
  return kept;
}

/// The ids stored in `host` (hex), relay-signed kinds left out.
inline std::set<std::string> stored_ids(const cli_fixture& f, const std::string& host) {
  auto text = f.sql("SELECT string_agg(encode(id, 'hex'), ',') FROM events WHERE community_id = $1"
                    " AND NOT (kind IN (13534, 8000, 8001, 28935, 33534) OR kind BETWEEN 39000 AND 39005)",
                    {std::to_string(community_id(f, host))});
  std::set<std::string> ids;
  std::stringstream parts(text);
  for (std::string id; std::getline(parts, id, ',');)
    ids.insert(id);
  return ids;
}

inline std::set<std::string> ids_in_file(const std::string& path, bool relay_signed) {
  std::set<std::string> ids;
  for (const auto& line : read_lines(path)) {
    auto ev = boost::json::parse(line).as_object();
    auto kind = static_cast<std::uint32_t>(ev.at("kind").as_int64());
    if (protocol::relay_signed_kind(kind) == relay_signed)
      ids.insert(std::string(ev.at("id").as_string()));
  }
  return ids;
}

/// Stores `events` in `host` through the relay's writer, as accepted EVENTs would be.
inline void store(const cli_fixture& f, const std::string& host, const std::vector<protocol::event>& events) {
  storage::pg_connection connection(f.database.conninfo());
  storage::event_store store(connection);
  std::vector<storage::event_write> writes;
  const auto community = community_id(f, host);
  for (const auto& ev : events)
    writes.push_back({community, std::make_shared<const protocol::event>(ev),
                      std::make_shared<const std::string>(json_of(ev)), {}});
  // One the same batch replaces or deletes is accepted but never inserted (applied).
  for (const auto& outcome : store.store_batch(writes))
    REQUIRE((outcome.result == storage::store_outcome::status::stored
             || outcome.result == storage::store_outcome::status::applied));
}

inline std::int64_t count_of(const boost::json::object& result, const char* field) {
  return result.at(field).as_int64();
}

inline std::int64_t refused(const boost::json::object& result, const char* reason) {
  const auto& by_reason = result.at("refused").as_object();
  return by_reason.contains(reason) ? by_reason.at(reason).as_int64() : 0;
}

/// `room list` and, per room, `room members` of `host`, as comb-admin prints them (JSON).
inline std::string rooms_shown(const cli_fixture& f, const std::string& host) {
  auto list = f.admin_ok({"room", "list", host, "--json"}).json();
  std::string shown = boost::json::serialize(list.at("rooms"));
  for (const auto& room : list.at("rooms").as_array()) {
    auto id = std::string(room.at("id").as_string());
    shown += "\n" + id + ": "
             + boost::json::serialize(f.admin_ok({"room", "members", host, id, "--json"}).json().at("members"));
  }
  return shown;
}

} // namespace comb::test_portability
