// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "actors/connection/replies_awaiting_state.hpp"

using namespace comb::actors;

namespace {

query_reply chunk_read_at(std::string sub, std::int64_t version) {
  history_chunk_reply reply{std::move(sub), 1, comb::storage::query_result{true, {}, {}}};
  reply.result.state_version = version;
  return reply;
}

query_reply count_read_at(std::uint64_t ticket, std::int64_t version) {
  return count_reply{ticket, comb::storage::count_result{true, 3, {}, false, version}};
}

bool everyone(const query_reply&) { return true; }

std::vector<std::string> names(const std::vector<replies_awaiting_state::released>& out) {
  std::vector<std::string> seen;
  for (const auto& r : out)
    if (auto* chunk = std::get_if<history_chunk_reply>(&r.reply))
      seen.push_back(chunk->sub + (r.late ? " late" : ""));
    else
      seen.push_back("count " + std::to_string(std::get<count_reply>(r.reply).ticket) + (r.late ? " late" : ""));
  return seen;
}

} // namespace

TEST_CASE("a reply waits only when read past the state the pod holds, or behind one that waits",
          "[unit][connection][access]") {
  replies_awaiting_state waiting(5.0);
  CHECK_FALSE(waiting.must_wait(0, 4)); // no row read
  CHECK_FALSE(waiting.must_wait(4, 4));
  CHECK(waiting.must_wait(5, 4));
  waiting.wait(chunk_read_at("a", 5), 100.0);
  CHECK(waiting.must_wait(0, 9)); // in order behind it
  waiting.wait(count_read_at(7, 3), 100.5);
  waiting.wait(chunk_read_at("b", 6), 101.0);

  CHECK(waiting.release(4, 101.0, everyone).empty()); // the front still waits: nothing passes it
  CHECK(names(waiting.release(5, 101.0, everyone)) == std::vector<std::string>{"a", "count 7"});
  CHECK(waiting.release(5, 105.9, everyone).empty());
  CHECK(names(waiting.release(5, 106.0, everyone)) == std::vector<std::string>{"b late"});
  CHECK(waiting.empty());
}

TEST_CASE("a reply that waited past the patience goes as late; those behind it wait their own",
          "[unit][connection][access]") {
  replies_awaiting_state waiting(5.0);
  waiting.wait(chunk_read_at("a", 9), 100.0);
  waiting.wait(chunk_read_at("b", 9), 103.0);
  waiting.wait(chunk_read_at("c", 2), 103.0);
  CHECK(names(waiting.release(2, 105.0, everyone)) == std::vector<std::string>{"a late"});
  CHECK(names(waiting.release(2, 108.0, everyone)) == std::vector<std::string>{"b late", "c"});
}

TEST_CASE("a reply nobody takes any more leaves at once, wherever it waits",
          "[unit][connection][access]") {
  replies_awaiting_state waiting(5.0);
  waiting.wait(chunk_read_at("a", 9), 100.0);
  waiting.wait(chunk_read_at("closed", 9), 100.0);
  waiting.wait(count_read_at(3, 9), 100.0);
  auto all_but_closed = [](const query_reply& reply) {
    const auto* chunk = std::get_if<history_chunk_reply>(&reply);
    return !chunk || chunk->sub != "closed";
  };
  CHECK(names(waiting.release(2, 101.0, all_but_closed)) == std::vector<std::string>{"closed"});
  CHECK(waiting.release(2, 101.0, all_but_closed).empty());
  CHECK(names(waiting.release(9, 101.0, all_but_closed)) == std::vector<std::string>{"a", "count 3"});
}
