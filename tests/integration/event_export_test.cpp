// SPDX-License-Identifier: MIT
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "storage/event_export.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::store_one;

namespace {

constexpr std::int64_t now = 1'700'000'000;

std::vector<std::string> export_all(test::store_fixture& f, const storage::export_range& range,
                                    std::size_t keys_per_fetch, std::size_t page_bytes = 1 << 20) {
  std::vector<std::string> lines;
  auto error = storage::export_events(f.connection, f.community, range, now,
                                      [&](std::string_view json) {
                                        lines.emplace_back(json);
                                        return true;
                                      },
                                      storage::export_paging{keys_per_fetch, page_bytes});
  REQUIRE_FALSE(error);
  return lines;
}

} // namespace

TEST_CASE("export pages through a cursor, oldest first, same second by id, bounds inclusive", "[export]") {
  test::store_fixture f;
  author alice(1);
  std::vector<std::string> expected;
  // Stored newest first, so the order comes from the query, not from insertion.
  for (int i = 9; i >= 0; --i)
    (void)store_one(f.events, f.community, alice.sign(1, now - 100 + i / 2, {}, std::to_string(i)));
  auto lines = export_all(f, {}, 3); // four fetches of at most three rows
  REQUIRE(lines.size() == 10);
  for (std::size_t i = 1; i < lines.size(); ++i) {
    auto a = boost::json::parse(lines[i - 1]).as_object();
    auto b = boost::json::parse(lines[i]).as_object();
    auto at = [](const boost::json::object& o) { return o.at("created_at").as_int64(); };
    auto id = [](const boost::json::object& o) { return std::string(o.at("id").as_string()); };
    CHECK((at(a) < at(b) || (at(a) == at(b) && id(a) < id(b))));
  }
  CHECK(export_all(f, {now - 98, now - 97, {}}, 500).size() == 4);
  CHECK(export_all(f, {{}, {}, {7}}, 500).empty());
  // The connection is usable after the export's transaction.
  CHECK(f.connection.exec("SELECT 1").ok());
}

TEST_CASE("export leaves out expired events and other communities' and stops when told", "[export]") {
  test::store_fixture f;
  author alice(1);
  auto other = f.add_community("b.example");
  (void)store_one(f.events, f.community, alice.sign(1, now - 10, {{"expiration", std::to_string(now - 1)}}));
  (void)store_one(f.events, f.community, alice.sign(1, now - 9, {{"expiration", std::to_string(now + 60)}}));
  (void)store_one(f.events, f.community, alice.sign(1, now - 8));
  (void)store_one(f.events, other, alice.sign(1, now - 7));
  CHECK(export_all(f, {}, 500).size() == 2);
  std::size_t taken = 0;
  auto error = storage::export_events(f.connection, f.community, {}, now,
                                      [&](std::string_view) { return ++taken < 1; }, {1});
  CHECK_FALSE(error);
  CHECK(taken == 1);
  CHECK(f.connection.exec("SELECT 1").ok());
}

TEST_CASE("export reads events in pages of bounded bytes, in order, a larger event alone",
          "[export]") {
  test::store_fixture f;
  author alice(1);
  std::vector<std::string> contents;
  for (int i = 0; i < 12; ++i) {
    // Sizes around the page budget: some pages hold two events, some one, one event exceeds it.
    std::string content(i == 5 ? 9000 : 1500 + 300 * (i % 3), static_cast<char>('a' + i));
    contents.push_back(content);
    (void)store_one(f.events, f.community, alice.sign(1, now - 100 + i, {}, content));
  }
  for (std::size_t keys : {std::size_t{1}, std::size_t{4}, std::size_t{500}}) {
    auto lines = export_all(f, {}, keys, 4096);
    REQUIRE(lines.size() == contents.size());
    for (std::size_t i = 0; i < lines.size(); ++i)
      CHECK(boost::json::parse(lines[i]).as_object().at("content") == contents[i].c_str());
  }
  // Stopped in the middle of a page: nothing after it is handed over.
  std::size_t taken = 0;
  auto error = storage::export_events(f.connection, f.community, {}, now,
                                      [&](std::string_view) { return ++taken < 3; },
                                      {500, 1 << 20});
  CHECK_FALSE(error);
  CHECK(taken == 3);
  CHECK(f.connection.exec("SELECT 1").ok());
}
