// SPDX-License-Identifier: MIT
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>

namespace comb::protocol {

/// The header of one final, unmasked text frame as a server sends it (RFC 6455 section 5.2):
/// FIN and the text opcode, then the payload length in 7, 16 or 64 bits. Written by the relay
/// itself so that many frames can leave in one gathered write (no extension is negotiated
/// on such a connection, so the payload follows as it is).
struct text_frame_header {
  std::array<std::uint8_t, 10> bytes{};
  std::uint8_t size = 0;
};

[[nodiscard]] text_frame_header make_text_frame_header(std::size_t payload_bytes);

} // namespace comb::protocol
