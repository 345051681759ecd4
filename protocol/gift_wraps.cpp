// SPDX-License-Identifier: MIT
#include "protocol/gift_wraps.hpp"

#include <algorithm>

#include "protocol/hex.hpp"

namespace comb::protocol {
namespace {

/// Its `#p` names the reader and no one else.
bool addressed_to(const filter& f, const bytes32& reader) {
  std::string reader_hex = to_hex(reader);
  for (const auto& tag : f.tags)
    if (tag.name == 'p')
      return !tag.values.empty()
             && std::all_of(tag.values.begin(), tag.values.end(),
                            [&](const std::string& value) { return value == reader_hex; });
  return false;
}

bool names_gift_wraps(const filter& f) {
  return f.kinds && std::any_of(f.kinds->begin(), f.kinds->end(), is_gift_wrap_kind);
}

} // namespace

bool is_gift_wrap_kind(std::uint32_t kind) noexcept {
  return kind == gift_wrap_kind || kind == ephemeral_gift_wrap_kind;
}

std::optional<rejection> guard_gift_wraps(std::vector<filter>& filters,
                                          const std::optional<bytes32>& reader) {
  for (auto& f : filters) {
    // Decided afresh each time: a REQ refused for AUTH is guarded again once its reader is known.
    f.gift_wraps_hidden = false;
    if (reader && addressed_to(f, *reader))
      continue;
    if (names_gift_wraps(f)) {
      if (!reader)
        return rejection{reason::auth_required, "gift wraps are served to their recipient only; authenticate"};
      return rejection{reason::restricted, "gift wraps are served to their recipient only: ask with #p naming you"};
    }
    f.gift_wraps_hidden = true;
  }
  return std::nullopt;
}

} // namespace comb::protocol
