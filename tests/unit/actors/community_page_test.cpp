// SPDX-License-Identifier: MIT
// The HTML page at `/`: what it says, and that nothing an admin types can run in a browser.
#include <catch2/catch.hpp>

#include "actors/gateway/community_page.hpp"

using namespace comb::actors;

namespace {

community_page sample() {
  community_page page;
  page.name = "Hive";
  page.description = "A place for bees";
  page.icon = "https://hive.example.com/icon.png";
  page.relay_url = "wss://hive.example.com";
  page.relay_npub = "npub1relay";
  page.owner_npub = "npub1owner";
  return page;
}

bool has(const std::string& html, const std::string& part) {
  return html.find(part) != std::string::npos;
}

} // namespace

TEST_CASE("the page names the community, its URL, its access and the relay key", "[page]") {
  auto open = render_community_page(sample());
  CHECK(has(open, "<title>Hive</title>"));
  CHECK(has(open, "<h1 id=\"name\">Hive</h1>"));
  CHECK(has(open, "A place for bees"));
  CHECK(has(open, "<code id=\"url\">wss://hive.example.com</code>"));
  CHECK(has(open, "Open: anyone may read and post."));
  CHECK(has(open, "<img class=\"icon\" src=\"https://hive.example.com/icon.png\""));
  CHECK(has(open, "npub1relay"));
  CHECK(has(open, "npub1owner"));

  auto page = sample();
  page.closed = true;
  page.owner_npub.clear();
  auto closed = render_community_page(page);
  CHECK(has(closed, "Closed: only members read and post."));
  CHECK(has(closed, "invite code"));
  CHECK_FALSE(has(closed, "id=\"owner\""));
}

TEST_CASE("everything on the page is escaped; only http(s) icons are shown", "[page]") {
  auto page = sample();
  page.name = "<script>alert(1)</script>";
  page.description = "\"><img src=x onerror=alert(1)>";
  page.icon = "javascript:alert(1)";
  auto html = render_community_page(page);
  CHECK_FALSE(has(html, "<script>"));
  CHECK_FALSE(has(html, "<img src=x"));
  CHECK_FALSE(has(html, "javascript:"));
  CHECK(has(html, "&lt;script&gt;alert(1)&lt;/script&gt;"));
  CHECK(has(html, "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;"));

  page.icon = "https://x.example/\"onload=\"alert(1)";
  CHECK_FALSE(has(render_community_page(page), "\"onload=\""));
  CHECK(html_escape("a&'b") == "a&amp;&#39;b");
}

TEST_CASE("a browser's Accept asks for HTML; an app's and curl's do not", "[page]") {
  CHECK(wants_html("text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8"));
  CHECK_FALSE(wants_html("*/*"));
  CHECK_FALSE(wants_html(""));
  CHECK_FALSE(wants_html("application/nostr+json"));
}
