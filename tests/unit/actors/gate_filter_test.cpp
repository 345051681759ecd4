// SPDX-License-Identifier: MIT
// What may enter the gatekeeper's mailbox: the handshake, envelopes and local orders only.
#include <catch2/catch.hpp>

#include "actors/bridge/gatekeeper.hpp"
#include "actors/messages.hpp"

using namespace comb::actors;

namespace {

bool admitted(const caf::message& msg) {
  return admitted_at_gate(msg.content());
}

} // namespace

TEST_CASE("the gate admits the handshake, envelopes and local orders", "[bridge]") {
  const std::string s = "x";
  CHECK(admitted(caf::make_message(hello_atom_v, s, s)));
  CHECK(admitted(caf::make_message(challenge_atom_v, s, s, s)));
  CHECK(admitted(caf::make_message(prove_atom_v, s, s)));
  CHECK(admitted(caf::make_message(welcome_atom_v)));
  CHECK(admitted(caf::make_message(envelope_atom_v, s)));
  CHECK(admitted(caf::make_message(gate_order{gate_order::kind::tick, {}, {}})));
}

TEST_CASE("the gate refuses the bridge's local handlers, system messages and other shapes",
          "[bridge]") {
  const std::string s = "x";
  CHECK_FALSE(admitted(caf::make_message(redis_atom_v, s)));
  CHECK_FALSE(admitted(caf::make_message(ready_atom_v)));
  CHECK_FALSE(admitted(caf::make_message(caf::exit_msg{{}, caf::exit_reason::kill})));
  CHECK_FALSE(admitted(caf::make_message(caf::down_msg{{}, caf::exit_reason::kill})));
  CHECK_FALSE(admitted(caf::make_message(hello_atom_v, s)));          // wrong arity
  CHECK_FALSE(admitted(caf::make_message(envelope_atom_v, s, s)));    // wrong arity
  CHECK_FALSE(admitted(caf::make_message(welcome_atom_v, s)));
  CHECK_FALSE(admitted(caf::make_message(s)));
  // An empty message from the network (CAF gives its mailbox element an empty tuple).
  auto empty = caf::make_mailbox_element(nullptr, caf::make_message_id(), {}, caf::message{});
  CHECK_FALSE(admitted_at_gate(empty->content()));
}
