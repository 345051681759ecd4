// SPDX-License-Identifier: MIT
#pragma once

#include <string>
#include <string_view>

namespace comb::protocol {

/// A code as typed or pasted: blanks around it (a space, a newline) are not part of it.
[[nodiscard]] std::string_view without_blanks(std::string_view text);

/// The invite code a NIP-43 join's `claim` carries, as the apps send their code box: typed or
/// pasted, so blanks around it are not part of it, and a whole invite link pasted there
/// (Flotilla's `https://app/join?r=<relay>&c=<code>`, which people are given) stands for the
/// code in its `c` parameter. Any other text is the code as it is.
[[nodiscard]] std::string typed_invite_code(std::string_view claim);

} // namespace comb::protocol
