// SPDX-License-Identifier: MIT
#include "protocol/invite_code.hpp"

#include <boost/url/parse.hpp>
#include <boost/url/url_view.hpp>
#include <optional>

namespace comb::protocol {

std::string_view without_blanks(std::string_view text) {
  constexpr std::string_view blanks = " \t\r\n";
  auto first = text.find_first_not_of(blanks);
  return first == std::string_view::npos ? std::string_view{}
                                         : text.substr(first, text.find_last_not_of(blanks) - first + 1);
}

namespace {

/// The `c` parameter of an http(s) link, decoded; nothing for anything else.
std::optional<std::string> code_in_link(std::string_view text) {
  auto parsed = boost::urls::parse_uri(text);
  if (!parsed
      || (parsed->scheme_id() != boost::urls::scheme::https && parsed->scheme_id() != boost::urls::scheme::http))
    return std::nullopt;
  auto params = parsed->params();
  auto code = params.find("c");
  if (code == params.end() || !(*code).has_value)
    return std::nullopt;
  return std::string((*code).value);
}

} // namespace

std::string typed_invite_code(std::string_view claim) {
  auto text = without_blanks(claim);
  if (auto code = code_in_link(text); code && !without_blanks(*code).empty())
    return std::string(without_blanks(*code));
  return std::string(text);
}

} // namespace comb::protocol
