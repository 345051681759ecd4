// SPDX-License-Identifier: MIT
#include <boost/json.hpp>
#include <catch2/catch.hpp>

#include "protocol/canonical_json.hpp"
#include "protocol/event_check.hpp"
#include "protocol/event_json.hpp"
#include "protocol/hex.hpp"
#include "protocol/signature.hpp"
#include "support/test_data.hpp"

using namespace comb::protocol;
namespace json = boost::json;

namespace {

json::array nostr_tools_vectors() {
  return json::parse(comb::test::read_file(comb::test::data_path("nostr_tools_vectors.json")))
    .as_array();
}

event parse_ok(const json::value& v) {
  auto ev = event_from_json(v, protocol_limits{});
  INFO((ev ? std::string() : ev.error().text()));
  REQUIRE(ev);
  return ev.value();
}

event signed_event(std::uint32_t kind, std::vector<tag> tags, std::string content = "x") {
  static const auto author = key_pair::generate();
  event ev;
  ev.pubkey = author.public_key();
  ev.created_at = 1700000000;
  ev.kind = kind;
  ev.tags = std::move(tags);
  ev.content = std::move(content);
  ev.id = compute_id(ev);
  ev.sig = author.sign(ev.id);
  return ev;
}

} // namespace

TEST_CASE("lowercase hex decodes; any other character anywhere is refused", "[protocol][hex]") {
  std::string hex;
  for (int i = 0; i < 32; ++i)
    hex += "0123456789abcdef"[i % 16], hex += "fedcba9876543210"[i % 16];
  auto bytes = array_from_hex<32>(hex);
  REQUIRE(bytes);
  CHECK(to_hex(*bytes) == hex);
  for (char bad : {'A', 'F', 'g', 'G', ' ', '\0', '/', ':', '`', static_cast<char>(0xff)})
    for (std::size_t at : {std::size_t{0}, std::size_t{1}, std::size_t{33}, std::size_t{63}}) {
      auto broken = hex;
      broken[at] = bad;
      CHECK_FALSE(array_from_hex<32>(broken));
    }
  CHECK_FALSE(array_from_hex<32>(hex.substr(1)));
}

TEST_CASE("hex decoding takes exactly the lowercase digits, at every place of its words",
          "[protocol][hex]") {
  // Positions 0-7 fall in the first eight-character word, 8-9 in the rest of a 5-byte value.
  const std::string valid = "0123456789";
  std::array<std::uint8_t, 5> out{};
  REQUIRE(decode_lower_hex(valid, out));
  CHECK(out == std::array<std::uint8_t, 5>{0x01, 0x23, 0x45, 0x67, 0x89});
  for (int c = 0; c < 256; ++c) {
    const bool is_hex = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
    for (std::size_t at = 0; at < valid.size(); ++at) {
      auto text = valid;
      text[at] = static_cast<char>(c);
      INFO("character " << c << " at " << at);
      CHECK(decode_lower_hex(text, out) == is_hex);
      if (is_hex) {
        unsigned value = c <= '9' ? static_cast<unsigned>(c - '0') : static_cast<unsigned>(c - 'a' + 10);
        unsigned byte = out[at / 2];
        CHECK((at % 2 == 0 ? byte >> 4 : byte & 0x0f) == value);
      }
    }
  }
}

TEST_CASE("events signed by nostr-tools parse, hash and verify identically",
          "[protocol][event]") {
  auto vectors = nostr_tools_vectors();
  REQUIRE(vectors.size() == 30);
  for (const auto& vector : vectors) {
    const auto& v = vector.as_object();
    event ev = parse_ok(v.at("event"));
    INFO("content: " << ev.content.substr(0, 60));
    CHECK(canonical_serialization(ev) == v.at("serialized").as_string());
    CHECK(to_hex(compute_id(ev)) == v.at("event").at("id").as_string());
    CHECK_FALSE(verify_event(ev));
    // Our rendering must parse back to the same event nostr-tools produced.
    CHECK(parse_ok(json::parse(render_event_json(ev))) == ev);
  }
}

TEST_CASE("an event we sign verifies, and any change breaks it", "[protocol][event]") {
  event ev = signed_event(1, {{"t", "bees"}}, "hello \"hive\"\n");
  REQUIRE_FALSE(verify_event(ev));

  SECTION("content changed") {
    ev.content += "!";
    CHECK(verify_event(ev)->text() == "invalid: event id does not match its content");
  }
  SECTION("tag changed") {
    ev.tags[0][1] = "wasps";
    CHECK(verify_event(ev));
  }
  SECTION("signature changed") {
    ev.sig[10] ^= 1;
    CHECK(verify_event(ev)->text() == "invalid: signature verification failed");
  }
  SECTION("pubkey swapped for another valid key") {
    ev.pubkey = key_pair::generate().public_key();
    CHECK(verify_event(ev));
  }
}

TEST_CASE("NIP-01 escaping matches JSON.stringify", "[protocol][event]") {
  std::string out;
  append_json_string(out, std::string("a\"b\\c\nd\re\tf\bg\fh\x01i\x1fj\x7fk/l", 23));
  CHECK(out == R"("a\"b\\c\nd\re\tf\bg\fh\u0001i\u001fj)" "\x7f" R"(k/l")");
  out.clear();
  append_json_string(out, std::string("\0", 1));
  CHECK(out == R"("\u0000")");
}

TEST_CASE("kinds fall into NIP-01's classes", "[protocol][event]") {
  CHECK(classify(1) == kind_class::regular);
  CHECK(classify(0) == kind_class::replaceable);
  CHECK(classify(3) == kind_class::replaceable);
  CHECK(classify(2) == kind_class::regular);
  CHECK(classify(9999) == kind_class::regular);
  CHECK(classify(10000) == kind_class::replaceable);
  CHECK(classify(13534) == kind_class::replaceable);
  CHECK(classify(19999) == kind_class::replaceable);
  CHECK(classify(20000) == kind_class::ephemeral);
  CHECK(classify(28934) == kind_class::ephemeral);
  CHECK(classify(29999) == kind_class::ephemeral);
  CHECK(classify(30000) == kind_class::addressable);
  CHECK(classify(39999) == kind_class::addressable);
  CHECK(classify(40000) == kind_class::regular);
}

TEST_CASE("tag helpers read d, protected and expiration", "[protocol][event]") {
  event ev = signed_event(30023, {{"d", "post-1"}, {"-"}, {"expiration", "1800000000"}});
  CHECK(d_tag(ev) == "post-1");
  CHECK(is_protected(ev));
  CHECK(expiration_of(ev) == 1800000000);
  CHECK(address_of(ev) == "30023:" + to_hex(ev.pubkey) + ":post-1");
  // Read back by its grammar: the d keeps any colon; a key must be 64 lowercase hex digits.
  const std::string value = address_of(ev) + ":part";
  auto named = parse_address_value(value);
  REQUIRE(named);
  CHECK(named->kind == 30023);
  CHECK(named->pubkey == ev.pubkey);
  CHECK(named->d == "post-1:part");
  CHECK(parse_address_value("0:" + to_hex(ev.pubkey) + ":")->d.empty());
  for (const std::string& bad : {"30023:" + to_hex(ev.pubkey), "x:" + to_hex(ev.pubkey) + ":d",
                                 "30023:" + std::string(64, 'A') + ":d", "30023:" + std::string(63, 'a') + "::d"})
    CHECK_FALSE(parse_address_value(bad));

  event plain = signed_event(30023, {{"expiration", "soon"}, {"e", "-"}});
  CHECK(d_tag(plain).empty());
  CHECK_FALSE(is_protected(plain));
  CHECK_FALSE(expiration_of(plain));
}

TEST_CASE("created_at outside the window is refused", "[protocol][event]") {
  event ev = signed_event(1, {});
  created_at_window window{900, 3600};
  CHECK_FALSE(check_created_at(ev, ev.created_at, window));
  CHECK_FALSE(check_created_at(ev, ev.created_at - 900, window));
  CHECK(check_created_at(ev, ev.created_at - 901, window)->text()
        == "invalid: created_at is too far in the future");
  CHECK(check_created_at(ev, ev.created_at + 3601, window));
  CHECK_FALSE(check_created_at(ev, ev.created_at + 1000000, created_at_window{900, 0}));
}

TEST_CASE("event parsing refuses limits breaches", "[protocol][event]") {
  protocol_limits limits;
  limits.max_tags_per_event = 2;
  limits.max_content_bytes = 4;
  json::value ok = json::parse(render_event_json(signed_event(1, {{"a", "1"}, {"b", "2"}}, "1234")));
  CHECK(event_from_json(ok, limits));
  json::value many = json::parse(render_event_json(signed_event(1, {{"a"}, {"b"}, {"c"}})));
  CHECK(event_from_json(many, limits).error().text() == "invalid: too many tags");
  json::value big = json::parse(render_event_json(signed_event(1, {}, "12345")));
  CHECK(event_from_json(big, limits).error().text() == "invalid: content too long");
  limits.max_tag_elements_per_event = 4;
  CHECK(event_from_json(ok, limits));
  json::value wide = json::parse(render_event_json(signed_event(1, {{"a", "", ""}, {"b", ""}})));
  CHECK(event_from_json(wide, limits).error().text() == "invalid: too many strings in tags");
}

TEST_CASE("an event's parsed size counts each tag string", "[protocol][event]") {
  event small = signed_event(1, {{"a", "1"}});
  event wide = signed_event(1, {{"a", "", "", "", "", "", "", "", "", ""}});
  CHECK(parsed_bytes(wide) >= parsed_bytes(small) + 8 * sizeof(std::string));
  event long_text = signed_event(1, {}, std::string(1000, 'x'));
  CHECK(parsed_bytes(long_text) >= 1000);
}

TEST_CASE("a rendered event's author and id are read without parsing it", "[protocol][event]") {
  // Content and tags that spell the keys do not mislead: their quotes are escaped.
  event ev = signed_event(1, {{"id", "00"}, {"pubkey", std::string(64, 'f')}},
                          "\"id\":\"" + std::string(64, 'a') + "\",\"pubkey\":\"" + std::string(64, 'b'));
  auto identity = identity_of_rendered(render_event_json(ev));
  REQUIRE(identity);
  CHECK(identity->id == ev.id);
  CHECK(identity->pubkey == ev.pubkey);
  CHECK_FALSE(identity_of_rendered(R"({"id":"0a","pubkey":"0b"})"));
  CHECK_FALSE(identity_of_rendered(R"({"kind":1})"));
  CHECK_FALSE(identity_of_rendered(""));
}
