// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/canonical_json.hpp"
#include "protocol/client_message.hpp"
#include "protocol/signature.hpp"
#include "support/test_data.hpp"

using namespace comb::protocol;

namespace {

event signed_note() {
  static const auto author = key_pair::generate();
  event ev;
  ev.pubkey = author.public_key();
  ev.created_at = 1700000000;
  ev.kind = 1;
  ev.content = "hi";
  ev.id = compute_id(ev);
  ev.sig = author.sign(ev.id);
  return ev;
}

auto parse(std::string_view frame) {
  return parse_client_message(frame, protocol_limits{});
}

reply_kind expected_reply(const std::string& file_name) {
  if (file_name.starts_with("ok_"))
    return reply_kind::ok;
  if (file_name.starts_with("closed_"))
    return reply_kind::closed;
  return reply_kind::notice;
}

} // namespace

TEST_CASE("the five client messages parse", "[protocol][client_message]") {
  event ev = signed_note();
  std::string json = render_event_json(ev);

  auto as_event = parse("[\"EVENT\"," + json + "]");
  REQUIRE(as_event);
  CHECK(std::get<event_message>(as_event.value()).ev == ev);

  auto as_auth = parse("[\"AUTH\"," + json + "]");
  REQUIRE(as_auth);
  CHECK(std::get<auth_message>(as_auth.value()).ev == ev);

  auto req = parse(R"(["REQ","feed",{"kinds":[1]},{"#t":["x"]}])");
  REQUIRE(req);
  CHECK(std::get<req_message>(req.value()).subscription_id == "feed");
  CHECK(std::get<req_message>(req.value()).filters.size() == 2);

  auto count = parse(R"(["COUNT","c",{}])");
  REQUIRE(count);
  CHECK(std::get<count_message>(count.value()).filters.size() == 1);

  auto close = parse(R"(["CLOSE","feed"])");
  REQUIRE(close);
  CHECK(std::get<close_message>(close.value()).subscription_id == "feed");
}

TEST_CASE("every malformed frame in the corpus becomes one rejection of the right kind",
          "[protocol][client_message]") {
  std::size_t seen = 0;
  for (const auto& entry : std::filesystem::directory_iterator(comb::test::data_path("malformed"))) {
    std::string name = entry.path().filename().string();
    INFO(name);
    auto parsed = parse(comb::test::read_file(entry.path()));
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().reply == expected_reply(name));
    // A filter field the relay does not implement is unsupported (NIP-01's example), not invalid.
    const bool unknown_field = name == "closed_req_unknown_field.json" || name == "closed_req_tag_long_name.json";
    CHECK(parsed.error().why.why == (unknown_field ? reason::unsupported : reason::invalid));
    CHECK_FALSE(parsed.error().why.detail.empty());
    if (parsed.error().reply == reply_kind::ok)
      CHECK(parsed.error().reference == std::string(64, 'a'));
    if (parsed.error().reply == reply_kind::closed)
      CHECK_FALSE(parsed.error().reference.empty());
    ++seen;
  }
  CHECK(seen >= 60);
}

TEST_CASE("an EVENT that is not valid JSON but declares its id is answered with an OK", "[protocol][client_message]") {
  // JavaScript cut a string inside an emoji: a lone surrogate, which JSON parsers refuse.
  const std::string id(64, 'a');
  const std::string event = R"({"tags":[["alt","id"]],"id": ")" + id + R"(","pubkey":")" + std::string(64, 'b')
                            + R"(","created_at":1,"kind":1,"content":"cut \ud83d","sig":")"
                            + std::string(128, 'c') + "\"}";
  for (const auto& frame : {R"(["EVENT",)" + event + "]", R"( [ "AUTH",)" + event + "]"}) {
    INFO(frame);
    auto parsed = parse(frame);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().reply == reply_kind::ok);
    CHECK(parsed.error().reference == id);
    CHECK(parsed.error().why.text().starts_with("invalid: the event is not valid JSON"));
  }
  // Without a readable id (or for another message type) there is nothing to answer but a NOTICE.
  for (const std::string frame : {R"(["EVENT",{"id":"short","content":"\ud83d"}])",
                                  R"(["REQ","s",{"#t":["\ud83d"]}])", R"(["EVENT",{"content":"\ud83d"}])"}) {
    INFO(frame);
    auto parsed = parse(frame);
    REQUIRE_FALSE(parsed);
    CHECK(parsed.error().reply == reply_kind::notice);
  }
}

TEST_CASE("a 10 MB string is refused by size before it is parsed", "[protocol][client_message]") {
  std::string frame = "[\"CLOSE\",\"" + std::string(10 * 1024 * 1024, 'x') + "\"]";
  auto parsed = parse(frame);
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().why.text() == "invalid: message too large");

  protocol_limits roomy;
  roomy.max_message_bytes = 20 * 1024 * 1024;
  auto long_id = parse_client_message(frame, roomy);
  REQUIRE_FALSE(long_id);
  CHECK(long_id.error().reply == reply_kind::notice);
}

TEST_CASE("nesting deeper than the limit is refused", "[protocol][client_message]") {
  std::string deep = R"(["REQ","s",{"#t":)" + std::string(20, '[') + std::string(20, ']') + "}]";
  auto parsed = parse(deep);
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().why.text() == "invalid: malformed JSON");
}

TEST_CASE("a bad filter closes the subscription it names", "[protocol][client_message]") {
  auto parsed = parse(R"(["REQ","mine",{"kinds":[1]},{"limit":-1}])");
  REQUIRE_FALSE(parsed);
  CHECK(parsed.error().reply == reply_kind::closed);
  CHECK(parsed.error().reference == "mine");
  CHECK(parsed.error().why.text() == "invalid: limit must be a non-negative integer");
}

TEST_CASE("a frame refused unread is answered by a scan of its head", "[protocol][client_message]") {
  const protocol_limits limits;
  const rejection why{reason::rate_limited, "slow down"};
  auto note = signed_note();
  auto event = refusal_of_unread("[\"EVENT\"," + render_event_json(note) + "]", why, limits);
  CHECK(event.reply == reply_kind::ok);
  CHECK(event.reference == to_hex(note.id));
  CHECK(event.why.text() == "rate-limited: slow down");
  auto req = refusal_of_unread(R"( [ "REQ" , "feed",{"authors":["...cut)", why, limits);
  CHECK(req.reply == reply_kind::closed);
  CHECK(req.reference == "feed");
  CHECK(refusal_of_unread(R"(["COUNT","n",{)", why, limits).reference == "n");
  // What only a parse would read right, or what names no subscription: a NOTICE.
  for (const char* frame : {R"(["REQ","a\"b",{}])", R"(["REQ",5,{}])", R"(["CLOSE","feed"])", R"({"REQ":"x"})",
                            R"(["REQ")", R"(["REQ","unterminated)", ""}) {
    INFO(frame);
    CHECK(refusal_of_unread(frame, why, limits).reply == reply_kind::notice);
  }
  CHECK(refusal_of_unread("[\"REQ\",\"" + std::string(65, 'x') + "\",{}]", why, limits).reply == reply_kind::notice);
}

TEST_CASE("random mutations of a valid frame never throw", "[protocol][client_message]") {
  std::string base = "[\"EVENT\"," + render_event_json(signed_note()) + "]";
  std::uint32_t state = 12345;
  for (int i = 0; i < 20000; ++i) {
    std::string frame = base;
    for (int k = 0; k < 3; ++k) {
      state = state * 1664525u + 1013904223u;
      frame[state % frame.size()] = static_cast<char>(state >> 24);
    }
    CHECK_NOTHROW(parse(frame));
  }
}
