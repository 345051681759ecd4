// SPDX-License-Identifier: MIT
// comb-admin pushes what it wrote to every pod through the Redis bridge channel.
#include <catch2/catch.hpp>
#include <cstdlib>
#include <hiredis/hiredis.h>
#include <memory>

#include "cli_fixture.hpp"
#include "protocol/limits.hpp"
#include "storage/bridge_envelope.hpp"
#include "storage/member_list.hpp"
#include "storage/redis/redis_url.hpp"

using namespace comb::test;

namespace {

struct context_free {
  void operator()(redisContext* c) const noexcept { redisFree(c); }
};

const std::string secret = "cli test cluster secret 0123456789";

std::string redis_url() {
  const char* url = std::getenv("COMB_TEST_REDIS_URL");
  if (!url || !*url)
    FAIL("COMB_TEST_REDIS_URL is not set: start the test servers with tools/services.sh");
  return url;
}

/// A blocking subscriber to comb:events, the channel every pod listens on.
std::unique_ptr<redisContext, context_free> subscribe(const std::string& url) {
  comb::storage::redis_detail::redis_endpoint endpoint;
  REQUIRE_FALSE(comb::storage::redis_detail::parse_redis_url(url, endpoint));
  std::unique_ptr<redisContext, context_free> c(redisConnect(endpoint.host.c_str(), endpoint.port));
  REQUIRE(c);
  REQUIRE(c->err == 0);
  auto* reply = static_cast<redisReply*>(redisCommand(c.get(), "SUBSCRIBE comb:events"));
  REQUIRE(reply);
  freeReplyObject(reply);
  const timeval timeout{5, 0};
  redisSetTimeout(c.get(), timeout);
  return c;
}

/// The next message's payload; fails after the timeout.
std::string next_message(redisContext* c) {
  void* raw = nullptr;
  REQUIRE(redisGetReply(c, &raw) == REDIS_OK);
  std::unique_ptr<redisReply, decltype(&freeReplyObject)> reply(static_cast<redisReply*>(raw),
                                                                &freeReplyObject);
  REQUIRE(reply->type == REDIS_REPLY_ARRAY);
  REQUIRE(reply->elements == 3);
  CHECK(std::string(reply->element[1]->str) == "comb:events");
  return {reply->element[2]->str, reply->element[2]->len};
}

} // namespace

TEST_CASE("member add pushes the new list and its delta to the bridge channel", "[cli]") {
  const auto url = redis_url();
  cli_fixture f;
  auto [owner, owner_npub] = random_pubkey();
  auto [alice, alice_npub] = random_pubkey();
  f.admin_ok({"community", "create", "c.example", "--owner", owner});
  auto community_id = std::stoll(f.sql("SELECT id FROM communities"));
  auto subscriber = subscribe(url);

  auto added = f.admin({"member", "add", "c.example", alice_npub, "--json"},
                       {{"COMB_REDIS_URL", url}, {"COMB_CLUSTER_SECRET", secret}});
  REQUIRE(added.exit_code == 0);
  CHECK(added.json().at("pushed_live").as_bool());
  CHECK(added.err.find("Postgres notification") == std::string::npos);

  // The list comes first, then the 8000, exactly as a pod publishes them.
  auto list = comb::storage::decode_envelope(next_message(subscriber.get()), {}, secret);
  REQUIRE(list);
  CHECK(list.value().origin.starts_with("comb-admin-"));
  CHECK(list.value().community_id == community_id);
  // The state version the change wrote: a pod that has not read it yet waits for it.
  CHECK(std::to_string(list.value().access_version)
        == f.sql("SELECT state_version FROM communities"));
  REQUIRE(list.value().ev->kind == comb::storage::member_list_kind);
  CHECK(list.value().ev->pubkey == f.signer("c.example").public_key());
  auto members = comb::storage::members_of_list(*list.value().ev);
  REQUIRE(members);
  REQUIRE(members->size() == 2);
  CHECK(comb::protocol::to_hex(members->back().pubkey) == alice);
  // It is the stored list, not another one.
  CHECK(f.sql("SELECT encode(id, 'hex') FROM events WHERE kind = 13534")
        == comb::protocol::to_hex(list.value().ev->id));
  auto delta = comb::storage::decode_envelope(next_message(subscriber.get()), {}, secret);
  REQUIRE(delta);
  CHECK(delta.value().ev->kind == comb::storage::member_added_kind);
  CHECK(delta.value().origin == list.value().origin);
}

TEST_CASE("an unreachable Redis is only a warning and the change is stored", "[cli]") {
  cli_fixture f;
  f.admin_ok({"community", "create", "c.example", "--owner", random_pubkey().first});
  auto alice = random_pubkey().first;
  auto added = f.admin({"member", "add", "c.example", alice, "--json"},
                       {{"COMB_REDIS_URL", "redis://127.0.0.1:1"},
                        {"COMB_CLUSTER_SECRET", secret}});
  CHECK(added.exit_code == 0);
  CHECK_FALSE(added.json().at("pushed_live").as_bool());
  CHECK_THAT(added.err, Catch::Contains("warning: could not push"));
  CHECK(f.stored("c.example").size() == 2);
  CHECK(f.listed("c.example") == f.stored("c.example"));
}

TEST_CASE("without the cluster secret nothing is pushed, and the note says why", "[cli]") {
  cli_fixture f;
  f.admin_ok({"community", "create", "c.example", "--owner", random_pubkey().first});
  auto added = f.admin({"member", "add", "c.example", random_pubkey().first, "--json"},
                       {{"COMB_REDIS_URL", redis_url()}});
  CHECK(added.exit_code == 0);
  CHECK_FALSE(added.json().at("pushed_live").as_bool());
  CHECK_THAT(added.err, Catch::Contains("COMB_CLUSTER_SECRET"));
  CHECK(f.listed("c.example") == f.stored("c.example"));
}

TEST_CASE("an envelope made with another secret does not decode", "[cli]") {
  const auto url = redis_url();
  cli_fixture f;
  f.admin_ok({"community", "create", "c.example", "--owner", random_pubkey().first});
  auto subscriber = subscribe(url);
  auto added = f.admin({"member", "add", "c.example", random_pubkey().first, "--json"},
                       {{"COMB_REDIS_URL", url}, {"COMB_CLUSTER_SECRET", secret}});
  REQUIRE(added.exit_code == 0);
  auto decoded = comb::storage::decode_envelope(next_message(subscriber.get()), {},
                                                "some other secret of the cluster");
  REQUIRE_FALSE(decoded);
  CHECK(decoded.error().unauthenticated);
}

TEST_CASE("a wrong Redis password is a warning that never shows the password", "[cli]") {
  cli_fixture f;
  f.admin_ok({"community", "create", "c.example", "--owner", random_pubkey().first});
  comb::storage::redis_detail::redis_endpoint endpoint;
  REQUIRE_FALSE(comb::storage::redis_detail::parse_redis_url(redis_url(), endpoint));
  // The test Redis has no password: AUTH with one is refused ("without any password configured").
  const std::string with_password = "redis://:hunter2-not-this-one@" + endpoint.host + ":"
                                    + std::to_string(endpoint.port);
  auto added = f.admin({"member", "add", "c.example", random_pubkey().first, "--json"},
                       {{"COMB_REDIS_URL", with_password}, {"COMB_CLUSTER_SECRET", secret}});
  CHECK(added.exit_code == 0);
  CHECK_FALSE(added.json().at("pushed_live").as_bool());
  CHECK_THAT(added.err, Catch::Contains("AUTH refused"));
  CHECK(added.err.find("hunter2") == std::string::npos);
  CHECK(added.out.find("hunter2") == std::string::npos);
}
