// SPDX-License-Identifier: MIT
// libFuzzer target for the frame parser and the address parser behind Host headers: any bytes a
// client may send must yield a message or a rejection, never a crash, a hang or an exception.
// Built and run by tools/fuzz.sh.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "protocol/client_message.hpp"
#include "protocol/event_check.hpp"
#include "protocol/host.hpp"
#include "protocol/relay_message.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const comb::protocol::protocol_limits limits;
  std::string_view frame(reinterpret_cast<const char*>(data), size);
  // The same bytes as a Host header and as the `relay` tag of an AUTH: client text too.
  (void)comb::protocol::normalize_host(frame);
  (void)comb::protocol::host_of_relay_url(frame);
  auto parsed = comb::protocol::parse_client_message(frame, limits);
  if (!parsed) {
    // The rejection must always render into a frame.
    (void)comb::protocol::render_notice(parsed.error().why.text());
    return 0;
  }
  if (auto* message = std::get_if<comb::protocol::event_message>(&parsed.value()))
    (void)comb::protocol::verify_event(message->ev);
  return 0;
}
