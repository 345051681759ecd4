// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/relay_info.hpp"
#include "protocol/rejection.hpp"
#include "protocol/relay_message.hpp"
#include <boost/json.hpp>

using namespace comb::protocol;

TEST_CASE("relay messages render as NIP-01 frames", "[protocol][relay_message]") {
  CHECK(render_event_frame("s\"1", R"({"id":"x"})") == R"(["EVENT","s\"1",{"id":"x"}])");
  // A history reader builds frames as prefix + event JSON + ']': the same bytes.
  CHECK(event_frame_prefix("s\"1") + R"({"id":"x"})" + "]" == render_event_frame("s\"1", R"({"id":"x"})"));
  CHECK(render_ok(std::string(64, 'a'), true, "") == R"(["OK",")" + std::string(64, 'a') + R"(",true,""])");
  CHECK(render_ok(bytes32{}, false, "invalid: bad \"sig\"")
        == R"(["OK",")" + std::string(64, '0') + R"(",false,"invalid: bad \"sig\""])");
  CHECK(render_eose("feed") == R"(["EOSE","feed"])");
  CHECK(render_closed("feed", "restricted: members only") == R"(["CLOSED","feed","restricted: members only"])");
  CHECK(render_notice("line\nbreak") == R"(["NOTICE","line\nbreak"])");
  CHECK(render_auth_challenge("abc") == R"(["AUTH","abc"])");
  CHECK(render_count("c", 42) == R"(["COUNT","c",{"count":42}])");
  CHECK(render_count("c", 10000, true) == R"(["COUNT","c",{"count":10000,"approximate":true}])");
}

TEST_CASE("rejections carry the standard prefixes", "[protocol][relay_message]") {
  CHECK((rejection{reason::rate_limited, "slow down"}.text()) == "rate-limited: slow down");
  CHECK((rejection{reason::auth_required, "x"}.text()) == "auth-required: x");
  CHECK((rejection{reason::restricted, "x"}.text()) == "restricted: x");
  CHECK((rejection{reason::duplicate, "x"}.text()) == "duplicate: x");
  CHECK((rejection{reason::blocked, "x"}.text()) == "blocked: x");
  CHECK((rejection{reason::error, "x"}.text()) == "error: x");
  CHECK((rejection{reason::pow, "x"}.text()) == "pow: x");
  CHECK((rejection{reason::info, "x"}.text()) == "info: x");
}

TEST_CASE("the NIP-11 document names the relay key, NIPs and limits", "[protocol][relay_info]") {
  relay_info info;
  info.name = "hive";
  info.self_pubkey = std::string(64, 'f');
  info.supported_nips = {1, 9, 11, 40, 42, 43, 45, 70};
  info.limits.max_limit = 321;
  info.auth_required = true;
  auto doc = boost::json::parse(render_relay_info(info)).as_object();
  CHECK(doc.at("name").as_string() == "hive");
  CHECK(doc.at("self").as_string() == std::string(64, 'f'));
  CHECK(doc.at("supported_nips").as_array().size() == 8);
  CHECK(doc.at("supported_nips").as_array()[5].as_int64() == 43);
  CHECK(doc.at("limitation").at("max_limit").to_number<int>() == 321);
  CHECK(doc.at("limitation").at("auth_required").as_bool());
  CHECK(doc.at("limitation").at("max_message_length").to_number<int>() == 1024 * 1024);
  // Characters, as NIP-11 counts them: at most 4 bytes each always fit the byte bound.
  CHECK(doc.at("limitation").at("max_content_length").to_number<std::size_t>() == info.limits.max_content_bytes / 4);
  CHECK(doc.at("limitation").at("default_limit").to_number<int>() == 321);
  CHECK_FALSE(doc.at("limitation").as_object().contains("created_at_lower_limit"));
  info.created_at_lower_seconds = 86400;
  auto bounded = boost::json::parse(render_relay_info(info)).as_object();
  CHECK(bounded.at("limitation").at("created_at_lower_limit").to_number<int>() == 86400);
}
