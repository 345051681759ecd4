// SPDX-License-Identifier: MIT
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "tools/watch/alert_batcher.hpp"

namespace comb::watch {

/// "new member in <community>: <npub>" or "<n> new members in <community>: <npub>, <npub>,
/// <npub> and <k> more" (the JSON form carries every key).
[[nodiscard]] std::string render_alert_text(const alert& a, std::string_view community);

/// {"community":...,"members":[hex...],"summary":bool,"at":unix seconds}
[[nodiscard]] std::string render_alert_json(const alert& a, std::string_view community,
                                            std::int64_t at);

/// Keys COMB_ALERT_MEMBERS names at most, and the longest COMB_ALERT_JSON: Linux refuses to
/// start a program with one environment entry past 128 KiB (E2BIG), and a summary after a
/// burst of joins can name thousands. The command reads the whole alert on its standard input.
inline constexpr std::size_t members_in_environment = 1000;
inline constexpr std::size_t json_in_environment = 96 * 1024;

/// "NAME=value" entries for --exec: COMB_ALERT_COMMUNITY, COMB_ALERT_MEMBERS (space-separated
/// hex, the first members_in_environment), COMB_ALERT_COUNT (all of them) and COMB_ALERT_JSON
/// (empty past json_in_environment bytes).
[[nodiscard]] std::vector<std::string> alert_environment(const alert& a,
                                                         std::string_view community,
                                                         std::string_view json);

} // namespace comb::watch
