// SPDX-License-Identifier: MIT
#pragma once

#include <boost/json/object.hpp>
#include <string>
#include <string_view>

namespace comb::admin {

/// comb-admin's documented exit codes (README.md, `--help`). Scripts rely on them: keep them.
enum class exit_code : int {
  ok = 0,
  usage = 1,       ///< bad arguments or input: bad npub/hex, bad host, missing key file
  not_found = 2,   ///< unknown host, member or invite
  is_owner = 3,    ///< the owner cannot be removed or demoted
  not_allowed = 4, ///< role mismatch, or a change the rules refuse
  conflict = 5,    ///< already so: host exists, already a member/owner/role/state
  database = 6,    ///< the database could not be reached or refused a statement
  differences = 7, ///< verify: a live list differs from its stored members
};

[[nodiscard]] constexpr int as_int(exit_code code) noexcept {
  return static_cast<int>(code);
}

/// `text` with every control character (C0, DEL, and C1 as UTF-8) written as `\u00XX`: what
/// users wrote (a room's name) must not move the operator's cursor, run a terminal's escape
/// sequences or add rows to a tab-separated listing.
[[nodiscard]] std::string terminal_safe(std::string_view text);

/// Where a command's results go. Human mode: results on stdout, messages on stderr. JSON mode
/// (`--json`): exactly one JSON object on stdout per command, successful or not, and the same
/// messages on stderr, so a script never has to parse prose.
class reporter {
public:
  explicit reporter(bool json) : json_(json) {}

  [[nodiscard]] bool json() const noexcept { return json_; }

  /// The command's result fields, printed in JSON mode.
  [[nodiscard]] boost::json::object& fields() noexcept { return fields_; }

  /// A human result line on stdout; JSON mode prints `fields()` instead.
  void say(std::string_view line) const;

  /// Information or a warning on stderr, in both modes.
  void note(std::string_view message) const;

  /// Reports a failure on stderr (and as `error` in JSON) and returns `code` for `main`.
  int fail(exit_code code, std::string_view message);

  /// The code of the last `fail`, for early returns after a helper reported the failure.
  [[nodiscard]] int failed_code() const noexcept { return failed_code_; }

  /// Ends the command: prints the JSON object in JSON mode. Returns `code`.
  int finish(int code);

private:
  bool json_;
  int failed_code_ = as_int(exit_code::usage);
  boost::json::object fields_;
};

} // namespace comb::admin
