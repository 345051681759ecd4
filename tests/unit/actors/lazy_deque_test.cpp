// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <string>
#include <vector>

#include "actors/lazy_deque.hpp"

using comb::actors::lazy_deque;

TEST_CASE("a lazy deque is a queue, empty until its first element", "[unit][connection]") {
  lazy_deque<std::string> queue;
  CHECK(queue.empty());
  CHECK(queue.size() == 0);
  CHECK(erase_if(queue, [](const std::string&) { return true; }) == 0);
  queue.push_back("a");
  queue.emplace_back(2, 'b');
  queue.push_back("c");
  CHECK(queue.size() == 3);
  CHECK(queue.front() == "a");
  CHECK(erase_if(queue, [](const std::string& s) { return s == "bb"; }) == 1);
  std::vector<std::string> seen;
  for (auto it = queue.begin(); it != queue.end();)
    if (*it == "a")
      it = queue.erase(it);
    else
      seen.push_back(*it++);
  CHECK(seen == std::vector<std::string>{"c"});
  queue.pop_front();
  CHECK(queue.empty());
  queue.push_back("d"); // used again once emptied
  CHECK(queue.front() == "d");
  CHECK(queue.size() == 1);
}
