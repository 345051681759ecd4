// SPDX-License-Identifier: MIT
// Redis URLs: credentials and database parsed, the password never shown.
#include <catch2/catch.hpp>

#include "storage/redis/redis_url.hpp"

using namespace comb::storage::redis_detail;

TEST_CASE("a Redis URL may carry a user, a password and a database", "[redis]") {
  redis_endpoint e;
  REQUIRE_FALSE(parse_redis_url("redis://comb:p%40ss%3Aword@10.0.0.5:6380/3", e));
  CHECK(e.host == "10.0.0.5");
  CHECK(e.port == 6380);
  CHECK(e.user == "comb");
  CHECK(e.password == "p@ss:word");
  CHECK(e.database == 3);

  REQUIRE_FALSE(parse_redis_url("redis://:only-a-password@[::1]", e));
  CHECK(e.host == "::1");
  CHECK(e.user.empty());
  CHECK(e.password == "only-a-password");
  CHECK(e.database == 0);

  REQUIRE_FALSE(parse_redis_url("redis://host", e)); // credentials of an earlier parse are gone
  CHECK(e.password.empty());
  CHECK(e.port == 6379);
}

TEST_CASE("an unencoded '@' in a password still ends at the last one", "[redis]") {
  redis_endpoint e;
  REQUIRE_FALSE(parse_redis_url("redis://u:a@b@host:1", e));
  CHECK(e.password == "a@b");
  CHECK(e.host == "host");
}

TEST_CASE("errors and redaction never show the password", "[redis]") {
  redis_endpoint e;
  for (const char* url : {"redis://u:hunter2@host:notaport", "redis://u:hunter2@host:1/99",
                          "redis://u:hunter2@host?x=1", "redis://u:hunter2@", "redis://:hunter2@host/x"}) {
    auto error = parse_redis_url(url, e);
    INFO(url);
    REQUIRE(error);
    CHECK(error->find("hunter2") == std::string::npos);
    CHECK(error->find("***") != std::string::npos);
  }
  CHECK(redact_redis_url("redis://comb:hunter2@h:1/2") == "redis://comb:***@h:1/2");
  CHECK(redact_redis_url("redis://:hunter2@h") == "redis://:***@h");
  CHECK(redact_redis_url("redis://hunter2@h") == "redis://***@h");
  CHECK(redact_redis_url("redis://h:1") == "redis://h:1");
  CHECK(redact_redis_url("not a url") == "not a url");
  // A password holding a '/' (not encoded) is hidden too, and the URL's error never shows it.
  CHECK(redact_redis_url("redis://comb:pa/ss@10.0.0.5:6379") == "redis://comb:***@10.0.0.5:6379");
  CHECK(redact_redis_url("redis://comb:12/ss@h:6379/0") == "redis://comb:***@h:6379/0");
  for (const char* url : {"redis://comb:pa/ss@10.0.0.5:6379", "redis://comb:12/ss@h:6379/0"}) {
    redis_endpoint endpoint;
    auto error = parse_redis_url(url, endpoint);
    REQUIRE(error);
    CHECK(error->find("ss@") == std::string::npos);
  }
}
