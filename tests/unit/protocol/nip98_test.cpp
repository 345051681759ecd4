// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/canonical_json.hpp"
#include "protocol/nip98.hpp"
#include "protocol/sha256.hpp"
#include "protocol/signature.hpp"

using namespace comb::protocol;

namespace {

constexpr std::int64_t now = 1700000000;
const std::string body = R"({"method":"supportedmethods","params":[]})";

const key_pair& caller() {
  static const auto key = *key_pair::from_secret(*array_from_hex<32>(std::string(63, '0') + "7"));
  return key;
}

std::string base64(std::string_view bytes) {
  static constexpr char alphabet[] =
    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::string out;
  std::uint32_t buffer = 0;
  int bits = 0;
  for (unsigned char c : bytes) {
    buffer = (buffer << 8) | c;
    bits += 8;
    while (bits >= 6) {
      bits -= 6;
      out.push_back(alphabet[(buffer >> bits) & 63]);
    }
  }
  if (bits > 0)
    out.push_back(alphabet[(buffer << (6 - bits)) & 63]);
  while (out.size() % 4 != 0)
    out.push_back('=');
  return out;
}

struct auth_fields {
  std::string url = "https://hive.example.com";
  std::string method = "POST";
  std::string payload = to_hex(sha256(body));
  std::int64_t created_at = now;
  std::uint32_t kind = http_auth_kind;
};

event auth_event(const auth_fields& f) {
  event ev;
  ev.pubkey = caller().public_key();
  ev.created_at = f.created_at;
  ev.kind = f.kind;
  ev.tags = {{"u", f.url}, {"method", f.method}, {"payload", f.payload}};
  ev.id = compute_id(ev);
  ev.sig = caller().sign(ev.id);
  return ev;
}

std::string header_of(const event& ev) {
  return "Nostr " + base64(render_event_json(ev));
}

http_auth_expectation expected() {
  return {"hive.example.com", "POST", body, now, 60};
}

std::string refusal(const result<event>& checked) {
  REQUIRE_FALSE(checked.ok());
  CHECK(checked.error().why == reason::auth_required);
  return checked.error().detail;
}

} // namespace

TEST_CASE("a NIP-98 event for this host, method and body passes", "[protocol][nip98]") {
  for (std::string url : {"https://hive.example.com", "https://hive.example.com/",
                          "http://hive.example.com", "wss://hive.example.com",
                          "ws://HIVE.example.com:80/"}) {
    auth_fields f;
    f.url = url;
    auto checked = check_http_auth(header_of(auth_event(f)), expected());
    INFO(url);
    REQUIRE(checked.ok());
    CHECK(checked->pubkey == caller().public_key());
  }
}

TEST_CASE("a NIP-98 event naming another host is refused", "[protocol][nip98]") {
  auth_fields f;
  f.url = "https://other.example.com";
  CHECK(refusal(check_http_auth(header_of(auth_event(f)), expected())) == "u tag does not name this relay");
  f.url = "https://hive.example.com/admin";
  CHECK(refusal(check_http_auth(header_of(auth_event(f)), expected())) == "u tag does not name this relay");
  f.url = "ftp://hive.example.com";
  CHECK(refusal(check_http_auth(header_of(auth_event(f)), expected())) == "u tag does not name this relay");
}

TEST_CASE("a stale or future NIP-98 event is refused", "[protocol][nip98]") {
  auth_fields f;
  f.created_at = now - 61;
  CHECK(refusal(check_http_auth(header_of(auth_event(f)), expected()))
        == "auth event created_at is too far from now");
  f.created_at = now + 61;
  CHECK_FALSE(check_http_auth(header_of(auth_event(f)), expected()).ok());
  f.created_at = now - 60;
  CHECK(check_http_auth(header_of(auth_event(f)), expected()).ok());
}

TEST_CASE("a NIP-98 event for another method is refused", "[protocol][nip98]") {
  auth_fields f;
  f.method = "GET";
  CHECK(refusal(check_http_auth(header_of(auth_event(f)), expected())) == "method tag must be POST");
}

TEST_CASE("a NIP-98 event whose payload is not the body's hash is refused", "[protocol][nip98]") {
  auth_fields f;
  f.payload = to_hex(sha256(body + " "));
  CHECK(refusal(check_http_auth(header_of(auth_event(f)), expected()))
        == "payload tag does not match the request body");
}

TEST_CASE("a NIP-98 event with a bad signature or wrong kind is refused", "[protocol][nip98]") {
  auto ev = auth_event({});
  ev.sig[0] ^= 1;
  CHECK(refusal(check_http_auth(header_of(ev), expected())).starts_with("bad auth event:"));
  auto tampered = auth_event({});
  tampered.created_at += 1; // the id no longer matches
  CHECK_FALSE(check_http_auth(header_of(tampered), expected()).ok());
  auth_fields f;
  f.kind = 22242;
  CHECK(refusal(check_http_auth(header_of(auth_event(f)), expected()))
        == "auth event must be of kind 27235");
}

TEST_CASE("a malformed Authorization header is refused, never thrown", "[protocol][nip98]") {
  CHECK(refusal(check_http_auth("", expected())) == "missing Authorization header");
  CHECK(refusal(check_http_auth("Bearer abc", expected()))
        == "Authorization must use the Nostr scheme (NIP-98)");
  CHECK(refusal(check_http_auth("Nostr !!!!", expected())) == "Authorization is not base64");
  CHECK(refusal(check_http_auth("Nostr " + base64("[1,2"), expected()))
        == "Authorization does not hold a JSON event");
  CHECK(refusal(check_http_auth("Nostr " + base64("{}"), expected())).starts_with("bad auth event"));
  CHECK(refusal(check_http_auth("Nostr " + std::string(9000, 'A'), expected()))
        == "Authorization header is too large");
  // The scheme is case-insensitive (RFC 7235) and URL-safe base64 without padding is accepted.
  auto header = header_of(auth_event({}));
  std::string lowered = "nostr " + header.substr(6);
  CHECK(check_http_auth(lowered, expected()).ok());
}

TEST_CASE("base64 decodes both alphabets with or without padding", "[protocol][nip98]") {
  CHECK(decode_base64("aGk=") == "hi");
  CHECK(decode_base64("aGk") == "hi");
  CHECK(decode_base64("-_8") == std::string("\xfb\xff", 2));
  CHECK_FALSE(decode_base64("a").has_value());
  CHECK_FALSE(decode_base64("a b=").has_value());
}

TEST_CASE("mutated Authorization headers are refused, never thrown", "[protocol][nip98]") {
  const std::string valid = header_of(auth_event({}));
  const std::string decoded = render_event_json(auth_event({}));
  std::uint32_t state = 12345; // a fixed LCG: the same mutations on every run
  auto next = [&state] { return state = state * 1664525u + 1013904223u; };
  int accepted = 0;
  for (int round = 0; round < 2000; ++round) {
    bool inside = round % 2 == 0; // mutate the event JSON, or the header text itself
    std::string text = inside ? decoded : valid;
    for (int flips = 1 + next() % 4; flips > 0; --flips)
      text[next() % text.size()] = static_cast<char>(next() % 256);
    if (next() % 5 == 0)
      text.resize(next() % text.size());
    std::string header = inside ? "Nostr " + base64(text) : text;
    REQUIRE_NOTHROW(accepted += check_http_auth(header, expected()).ok() ? 1 : 0);
  }
  // A flipped byte may land where it changes nothing (e.g. the scheme's case); anything that
  // changes the signed content must be refused.
  CHECK(accepted < 100);
}
