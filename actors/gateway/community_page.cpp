// SPDX-License-Identifier: MIT
#include "actors/gateway/community_page.hpp"

#include "protocol/address.hpp"

namespace comb::actors {
namespace {

/// An icon a page may load: an absolute http(s) URL. Anything else (javascript:, data:, a
/// relative path) is left out rather than escaped into something a browser would still follow.
bool safe_icon(std::string_view icon) {
  auto url = protocol::parse_url(icon);
  return url && (url->scheme == "https" || url->scheme == "http") && !url->has_userinfo;
}

std::string access_section(const community_page& page) {
  const std::string url = html_escape(page.relay_url);
  if (page.closed)
    return "<p class=\"access\" id=\"access\">Closed: only members read and post.</p>\n"
           "<h2>How to join</h2>\n<ol>\n"
           "<li>Ask the owner or an admin for an invite code.</li>\n"
           "<li>In a community app such as <a href=\"https://flotilla.social\">Flotilla</a>, "
           "add the space <code>" + url + "</code> and enter the code. Any Nostr app that "
           "speaks NIP-42 and NIP-43 can send the join request.</li>\n"
           "<li>Once you are a member, sign in when the app asks (NIP-42).</li>\n</ol>\n";
  return "<p class=\"access\" id=\"access\">Open: anyone may read and post.</p>\n"
         "<h2>How to join</h2>\n<p>Add <code>" + url + "</code> in a Nostr app, such as "
         "<a href=\"https://flotilla.social\">Flotilla</a> for community spaces or any client "
         "that lets you choose relays.</p>\n";
}

constexpr std::string_view style =
  "body{font-family:system-ui,sans-serif;max-width:40rem;margin:2rem auto;padding:0 1rem;"
  "line-height:1.5;color:#222}img.icon{width:4rem;height:4rem;border-radius:.5rem;"
  "object-fit:cover}code{background:#f3f3f3;padding:.1rem .3rem;border-radius:.2rem;"
  "word-break:break-all}.access{font-weight:600}footer{margin-top:2rem;font-size:.85rem;"
  "color:#666}";

} // namespace

std::string html_escape(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  for (char c : text) {
    switch (c) {
    case '&': out += "&amp;"; break;
    case '<': out += "&lt;"; break;
    case '>': out += "&gt;"; break;
    case '"': out += "&quot;"; break;
    case '\'': out += "&#39;"; break;
    default: out += c;
    }
  }
  return out;
}

bool wants_html(std::string_view accept) {
  return accept.find("text/html") != std::string_view::npos;
}

std::string render_community_page(const community_page& page) {
  const std::string name = html_escape(page.name);
  std::string html = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
                     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
                     "<title>" + name + "</title>\n<style>" + std::string(style) + "</style>\n"
                     "</head>\n<body>\n<header>\n";
  if (safe_icon(page.icon))
    html += "<img class=\"icon\" src=\"" + html_escape(page.icon) + "\" alt=\"\">\n";
  html += "<h1 id=\"name\">" + name + "</h1>\n</header>\n";
  if (!page.description.empty())
    html += "<p id=\"description\">" + html_escape(page.description) + "</p>\n";
  html += "<p>Nostr relay: <code id=\"url\">" + html_escape(page.relay_url) + "</code></p>\n";
  html += access_section(page);
  html += "<footer>\n<p>Relay key: <code id=\"relay\">" + html_escape(page.relay_npub) + "</code></p>\n";
  if (!page.owner_npub.empty())
    html += "<p>Owner: <code id=\"owner\">" + html_escape(page.owner_npub) + "</code></p>\n";
  html += "<p>Served by comb. Apps read this relay's NIP-11 document at the same address.</p>\n"
          "</footer>\n</body>\n</html>\n";
  return html;
}

} // namespace comb::actors
