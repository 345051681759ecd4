// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "protocol/nip62.hpp"

using namespace comb::protocol;

namespace {

event request_naming(std::vector<tag> tags) {
  event ev;
  ev.kind = vanish_kind;
  ev.tags = std::move(tags);
  return ev;
}

} // namespace

TEST_CASE("a request to vanish reaches every relay with ALL_RELAYS, else the hosts it names",
          "[protocol][nip62]") {
  auto everywhere = reach_of_vanish_request(request_naming({{"relay", "ALL_RELAYS"}, {"relay", "wss://a.test"}}));
  CHECK(everywhere.all_relays);
  CHECK(everywhere.hosts == std::vector<std::string>{"a.test"});

  // Hosts normalized as NIP-42's relay tag is, each once; what is no relay URL names nothing,
  // and ALL_RELAYS is only in uppercase.
  auto named = reach_of_vanish_request(request_naming({{"relay", "wss://B.test/"},
                                                       {"relay", "ws://a.test:80"},
                                                       {"relay", "wss://b.test"},
                                                       {"relay", "https://c.test"},
                                                       {"relay", "wss://d.test/path"},
                                                       {"relay", "all_relays"},
                                                       {"relay"},
                                                       {"r", "wss://e.test"}}));
  CHECK_FALSE(named.all_relays);
  CHECK(named.hosts == std::vector<std::string>{"a.test", "b.test"});

  CHECK_FALSE(check_vanish_request(request_naming({{"relay", "wss://b.test"}}), "b.test"));
  CHECK(check_vanish_request(request_naming({{"relay", "wss://b.test"}}), "a.test")->text()
        == "invalid: this request to vanish names other relays");
  CHECK(check_vanish_request(request_naming({}), "a.test")->text() == "invalid: a request to vanish needs a relay tag");
}
