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

/// "NAME=value" entries for --exec: COMB_ALERT_COMMUNITY, COMB_ALERT_MEMBERS (space-separated
/// hex), COMB_ALERT_COUNT and COMB_ALERT_JSON.
[[nodiscard]] std::vector<std::string> alert_environment(const alert& a,
                                                         std::string_view community,
                                                         std::string_view json);

} // namespace comb::watch
