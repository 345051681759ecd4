// SPDX-License-Identifier: MIT
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "protocol/nip86.hpp"

using namespace comb::protocol;

namespace {

const std::string alice(64, 'a');

management_parse_error parse_error(std::string_view body) {
  auto parsed = parse_management_request(body);
  REQUIRE_FALSE(parsed.ok());
  return parsed.error();
}

} // namespace

TEST_CASE("NIP-86 calls parse with their params", "[protocol][nip86]") {
  auto ban = parse_management_request(R"({"method":"banpubkey","params":[")" + alice + R"(","spam"]})");
  REQUIRE(ban.ok());
  CHECK(ban->method == management_method::ban_pubkey);
  CHECK(to_hex(*ban->target) == alice);
  CHECK(ban->text == "spam");

  auto allow = parse_management_request(R"({"method":"allowpubkey","params":[")" + alice + R"("]})");
  REQUIRE(allow.ok());
  CHECK(allow->text.empty());

  auto list = parse_management_request(R"({"method":"listbannedevents"})");
  REQUIRE(list.ok());
  CHECK(list->method == management_method::list_banned_events);
  CHECK_FALSE(list->target.has_value());

  auto rooms = parse_management_request(R"({"method":"listrooms"})");
  REQUIRE(rooms.ok());
  CHECK(rooms->method == management_method::list_rooms);
  auto room_members = parse_management_request(R"({"method":"listroommembers","params":["pizza"]})");
  REQUIRE(room_members.ok());
  CHECK(room_members->method == management_method::list_room_members);
  CHECK(room_members->text == "pizza");
  CHECK_FALSE(parse_management_request(R"({"method":"listroommembers"})").ok());
  CHECK_FALSE(parse_management_request(R"({"method":"listroommembers","params":[")" + std::string(65, 'a') + R"("]})").ok());

  auto rename = parse_management_request(R"({"method":"changerelayname","params":["Hive"]})");
  REQUIRE(rename.ok());
  CHECK(rename->text == "Hive");
}

TEST_CASE("an empty name, description or icon clears it, as Flotilla sends an emptied field",
          "[protocol][nip86]") {
  for (const char* method : {"changerelayname", "changerelaydescription", "changerelayicon"}) {
    auto cleared = parse_management_request(R"({"method":")" + std::string(method) + R"(","params":[""]})");
    REQUIRE(cleared.ok());
    CHECK(cleared->text.empty());
  }
  CHECK(parse_error(R"({"method":"changerelaydescription","params":[]})").message
        == "a string param is required");
  CHECK(parse_error(R"({"method":"listroommembers","params":[""]})").message == "a room id is required");
}

TEST_CASE("a report's p tag spread into the params bans its pubkey, as Flotilla's report menu sends",
          "[protocol][nip86]") {
  auto ban = parse_management_request(R"({"method":"banpubkey","params":["p",")" + alice + R"("]})");
  REQUIRE(ban.ok());
  CHECK(ban->method == management_method::ban_pubkey);
  CHECK(to_hex(*ban->target) == alice);
  CHECK(ban->text.empty());
  auto allow = parse_management_request(R"({"method":"allowpubkey","params":["p",")" + alice + R"("]})");
  REQUIRE(allow.ok());
  CHECK(to_hex(*allow->target) == alice);
  // Only the two-element tag form, and only where a pubkey is the target.
  CHECK_FALSE(parse_management_request(R"({"method":"banevent","params":["p",")" + alice + R"("]})").ok());
  CHECK_FALSE(parse_management_request(R"({"method":"banpubkey","params":["p",")" + alice + R"(","x"]})").ok());
  CHECK_FALSE(parse_management_request(R"({"method":"banpubkey","params":["p"]})").ok());
}

TEST_CASE("every method name round-trips", "[protocol][nip86]") {
  for (std::size_t i = 0; i < management_method_count; ++i) {
    auto m = static_cast<management_method>(i);
    CHECK(parse_method_name(method_name(m)) == m);
  }
  CHECK_FALSE(parse_method_name("blockip").has_value());
}

TEST_CASE("an unknown method or bad params is an error, not a malformed body", "[protocol][nip86]") {
  auto unknown = parse_error(R"({"method":"blockip","params":["1.2.3.4"]})");
  CHECK_FALSE(unknown.malformed);
  CHECK(unknown.message == "unsupported method: blockip");
  CHECK(unknown.method == "blockip");

  CHECK_FALSE(parse_error(R"({"method":"banpubkey","params":["ABC"]})").malformed);
  CHECK_FALSE(parse_error(R"({"method":"banpubkey","params":[]})").malformed);
  CHECK_FALSE(parse_error(R"({"method":"banpubkey","params":[")" + alice + R"(",5]})").malformed);
  CHECK_FALSE(parse_error(R"({"method":"banevent","params":[")" + alice + R"(","r","extra"]})").malformed);
  CHECK_FALSE(parse_error(R"({"method":"changerelayname","params":[]})").malformed);
  CHECK_FALSE(parse_error(R"x({"method":"changerelayicon","params":["javascript:alert(1)"]})x").malformed);
  CHECK_FALSE(parse_error(R"({"method":"changerelayname","params":[")" + std::string(300, 'x') + R"("]})").malformed);
  CHECK_FALSE(parse_error(R"({"method":"listbannedpubkeys","params":{}})").malformed);
  CHECK(parse_error(R"({"method":"banpubkey","params":["ABC"]})").method == "banpubkey");
}

TEST_CASE("a body that is not a JSON-RPC object is malformed", "[protocol][nip86]") {
  CHECK(parse_error("").malformed);
  CHECK(parse_error("[]").malformed);
  CHECK(parse_error(R"({"params":[]})").malformed);
  CHECK(parse_error(R"({"method":5})").malformed);
  CHECK(parse_error("{\"method\":\"x\"").malformed);
  CHECK(parse_error(std::string(max_management_body_bytes + 1, ' ')).malformed);
  CHECK(parse_error(std::string(100, '[') + std::string(100, ']')).malformed);
}

TEST_CASE("answers have the NIP-86 shape", "[protocol][nip86]") {
  auto error = boost::json::parse(render_management_error("no \"way\"")).as_object();
  CHECK(error.at("error").as_string() == "no \"way\"");
  CHECK_FALSE(error.contains("result")); // newer Flotilla's `({result = []})` takes no null
  CHECK(render_management_result("true") == R"({"result":true})");
  auto entries = boost::json::parse(render_management_entries(
                                      {{*array_from_hex<32>(alice), "spam"},
                                       {*array_from_hex<32>(alice), ""}},
                                      "pubkey"))
                   .as_array();
  REQUIRE(entries.size() == 2);
  CHECK(entries[0].at("pubkey").as_string() == alice);
  CHECK(entries[0].at("reason").as_string() == "spam");
  CHECK_FALSE(entries[1].as_object().contains("reason"));
  auto methods = boost::json::parse(render_supported_methods()).as_array();
  CHECK(methods.size() == management_method_count - 1);
  CHECK(methods[0].as_string() == "banpubkey");
}

TEST_CASE("mutated JSON-RPC bodies are parsed or refused, never thrown", "[protocol][nip86]") {
  const std::string valid = R"({"method":"banpubkey","params":[")" + alice + R"(","spam"]})";
  std::uint32_t state = 777; // a fixed LCG: the same mutations on every run
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  for (int round = 0; round < 2000; ++round) {
    std::string body = valid;
    for (int flips = 1 + next() % 4; flips > 0; --flips)
      body[next() % body.size()] = static_cast<char>(next() % 256);
    REQUIRE_NOTHROW((void)parse_management_request(body));
  }
}

TEST_CASE("only supportedmethods and the lists are reads", "[unit][nip86]") {
  std::vector<std::string_view> reads;
  for (std::size_t i = 0; i < management_method_count; ++i) {
    auto method = static_cast<management_method>(i);
    if (is_read_only(method))
      reads.push_back(method_name(method));
  }
  CHECK(reads == std::vector<std::string_view>{"supportedmethods", "listbannedpubkeys",
                                               "listallowedpubkeys", "listbannedevents",
                                               "listrooms", "listroommembers", "listclaims",
                                               "listmethodassignees"});
}

TEST_CASE("listmethodassignees lists each manager with every method, as newer Flotilla reads it",
          "[protocol][nip86]") {
  auto list = parse_management_request(R"({"method":"listmethodassignees","params":[]})");
  REQUIRE(list.ok());
  CHECK(list->method == management_method::list_method_assignees);
  CHECK_FALSE(parse_management_request(R"({"method":"listmethodassignees","params":["x"]})").ok());
  // Granting single methods is not served: an app asking gets "unsupported method", not true.
  CHECK(parse_error(R"({"method":"assignmethod","params":[")" + alice + R"(","banpubkey"]})").message
        == "unsupported method: assignmethod");

  const auto owner = *array_from_hex<32>(alice);
  auto rows = boost::json::parse(render_method_assignees({owner})).as_array();
  REQUIRE(rows.size() == 1);
  CHECK(rows[0].at("pubkey").as_string() == alice);
  CHECK(rows[0].at("methods") == boost::json::parse(render_supported_methods()));
  CHECK(boost::json::parse(render_method_assignees({})).as_array().empty());
}

TEST_CASE("a text param holding a NUL is refused, not cut short", "[protocol][nip86]") {
  auto name = parse_error(R"x({"method":"changerelayname","params":["Hive\u0000 (official)"]})x");
  CHECK_FALSE(name.malformed);
  CHECK(name.message.find("NUL") != std::string::npos);
  auto reason = parse_error(R"({"method":"banpubkey","params":[")" + alice + R"(","spam\u0000"]})");
  CHECK(reason.message.find("NUL") != std::string::npos);
}

TEST_CASE("claims parse as newer Flotilla sends them: a code of its own choosing, at least 12 "
          "characters a link carries unescaped", "[protocol][nip86]") {
  auto list = parse_management_request(R"({"method":"listclaims","params":[]})");
  REQUIRE(list.ok());
  CHECK(list->method == management_method::list_claims);
  CHECK(parse_error(R"({"method":"listclaims","params":["x"]})").message == "too many params");

  auto create = parse_management_request(R"({"method":"createclaim","params":["41970534216794373"]})");
  REQUIRE(create.ok());
  CHECK(create->method == management_method::create_claim);
  CHECK(create->text == "41970534216794373");
  CHECK(parse_management_request(R"({"method":"createclaim","params":["Ab-9._~Zz-0q"]})").ok());
  CHECK(parse_management_request(R"({"method":"createclaim","params":[")" + std::string(max_claim_bytes, 'c')
                                 + R"("]})").ok());
  for (const std::string& bad : std::vector<std::string>{R"([])", R"([""])", R"(["12345678901"])", R"(["123456 789012"])", R"([123456789012])",
                                R"(["123456789012","extra"])", R"(["1234567890&c=x"])", R"(["1234567890/#?"])", R"(["café-café"])", R"(["tab\tcode12"])",
                                "[\"" + std::string(max_claim_bytes + 1, 'c') + "\"]"}) {
    INFO(bad);
    auto refused = parse_error(R"({"method":"createclaim","params":)" + bad + "}");
    CHECK_FALSE(refused.malformed);
    CHECK(refused.method == "createclaim");
  }

  auto remove = parse_management_request(R"({"method":"deleteclaim","params":["short"]})");
  REQUIRE(remove.ok()); // any code the relay may hold, minted or chosen
  CHECK(remove->method == management_method::delete_claim);
  CHECK(remove->text == "short");
  CHECK(parse_error(R"({"method":"deleteclaim","params":[""]})").message == "an invite code is required");
}
