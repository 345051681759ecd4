// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>

namespace comb::actors {

/// What the page at `/` tells a person who opens a community's address in a browser.
struct community_page {
  std::string name;
  std::string description;
  std::string icon;        ///< shown only when it is an http(s) URL
  std::string relay_url;   ///< the wss:// (or ws://) URL to add in an app
  bool closed = false;
  std::string relay_npub;  ///< signs the member lists
  std::string owner_npub;  ///< empty: no owner yet
};

/// A small self-contained HTML page (no scripts, inline style). Every value is escaped: names,
/// descriptions and icons come from community admins over NIP-86.
[[nodiscard]] std::string render_community_page(const community_page& page);

/// `text` with &, <, >, " and ' replaced by entities, for HTML text and quoted attributes.
[[nodiscard]] std::string html_escape(std::string_view text);

/// Whether a browser asked for HTML (`Accept` names text/html).
[[nodiscard]] bool wants_html(std::string_view accept);

} // namespace comb::actors
