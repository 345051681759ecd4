// SPDX-License-Identifier: MIT
// comb-intruder: a plain CAF 0.17 node that knows no cluster secret, for the multi-process tests.
// It dials a pod's cluster port (over TLS when given a certificate) and tries every way in that
// worked against the first cluster links: Redis and envelope messages without a handshake, an
// unearned welcome, a reflected challenge and proof, and exit/down messages meant to stop the
// actor it reached, and CAF's own named actors (ConfigServ, SpawnServ), which CAF reaches by name
// beside any handshake. Then it listens for a while and prints one JSON line: whether it connected,
// what came back, and whether any envelope (an event) reached it.
//
//   comb-intruder HOST PORT ENVELOPE_FILE [--cert C --key K --ca A] [--listen-ms N]
#include <caf/all.hpp>
#include <caf/io/all.hpp>
#include <caf/openssl/all.hpp>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <future>
#include <iostream>
#include <memory>
#include <thread>
#include <sstream>
#include <string>
#include <vector>

namespace {

// The pods' message names (actors/messages.hpp), written out: an intruder has only the wire.
using redis_atom = caf::atom_constant<caf::atom("redis")>;
using envelope_atom = caf::atom_constant<caf::atom("envelope")>;
using welcome_atom = caf::atom_constant<caf::atom("welcome")>;
using hello_atom = caf::atom_constant<caf::atom("hello")>;
using challenge_atom = caf::atom_constant<caf::atom("challenge")>;
using prove_atom = caf::atom_constant<caf::atom("prove")>;
using peer_atom = caf::atom_constant<caf::atom("peer")>;
using ready_atom = caf::atom_constant<caf::atom("ready")>;

struct options {
  std::string host;
  std::uint16_t port = 0;
  std::string envelope;
  std::string cert, key, ca;
  int listen_ms = 3000;
};

std::string json_string(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\')
      out += '\\';
    if (static_cast<unsigned char>(c) >= 0x20)
      out += c;
  }
  return out + "\"";
}

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

struct observed {
  std::vector<std::string> named; ///< CAF's named actors of the pod that answered a lookup
  bool lookup_pending = false;    ///< a lookup the pod never answered (the pod dropped it)
  std::vector<std::string> replies;
  int envelopes = 0;
  std::string acceptor_id;
  std::string nonce;
  std::string proof;
};

void listen(caf::scoped_actor& self, observed& seen, int ms) {
  bool waiting = true;
  while (waiting)
    self->receive(
      [&](challenge_atom, const std::string& id, const std::string& nonce, const std::string& proof) {
        seen.replies.push_back("challenge");
        seen.acceptor_id = id;
        seen.nonce = nonce;
        seen.proof = proof;
      },
      [&](envelope_atom, const std::string&) {
        seen.replies.push_back("envelope");
        ++seen.envelopes;
      },
      [&](welcome_atom) { seen.replies.push_back("welcome"); },
      [&](caf::message& other) { seen.replies.push_back(caf::to_string(other).substr(0, 60)); },
      caf::after(std::chrono::milliseconds(ms)) >> [&] { waiting = false; });
}

/// Every attempt, in order; `seen` collects what the pod sent back.
void attack(caf::scoped_actor& self, const caf::actor& pod, const options& o, observed& seen) {
  // 1. The bridge's local-only handlers, straight away.
  self->send(pod, redis_atom::value, o.envelope);
  self->send(pod, ready_atom::value);
  self->send(pod, peer_atom::value, caf::actor_cast<caf::actor>(self));
  // 2. An envelope and a welcome without any handshake.
  self->send(pod, envelope_atom::value, o.envelope);
  self->send(pod, welcome_atom::value);
  // 3. Start a handshake to get the pod's challenge and proof...
  self->send(pod, hello_atom::value, std::string("intruder"), std::string(32, 'a'));
  listen(self, seen, 500);
  // ...then reflect them: the proof as our own, the pod's id as ours, the challenge back.
  self->send(pod, challenge_atom::value, seen.acceptor_id, seen.nonce, seen.proof);
  self->send(pod, prove_atom::value, seen.acceptor_id, seen.proof);
  self->send(pod, hello_atom::value, seen.acceptor_id, seen.nonce);
  self->send(pod, prove_atom::value, std::string("intruder"), seen.proof);
  self->send(pod, envelope_atom::value, o.envelope);
  // 4. Try to stop the actor we reached.
  self->send(pod, caf::down_msg{pod.address(), caf::exit_reason::kill});
  self->send_exit(pod, caf::exit_reason::kill);
  self->send_exit(pod, caf::exit_reason::user_shutdown);
  // 5. Hold the link open and see whether anything arrives.
  listen(self, seen, o.listen_ms);
}

/// Asks the pod for CAF's named actors. A pod that erased them drops the lookup unanswered, and
/// CAF's lookup then blocks for good: each waits a second on a thread of its own, left behind.
void look_up_named(caf::actor_system& system, const caf::actor& pod, observed& seen) {
  const std::pair<caf::atom_value, const char*> names[] = {{caf::atom("ConfigServ"), "ConfigServ"},
                                                          {caf::atom("SpawnServ"), "SpawnServ"}};
  for (const auto& [atom, name] : names) {
    auto found = std::make_shared<std::promise<caf::strong_actor_ptr>>();
    auto answer = found->get_future();
    std::thread([&system, found, node = pod.node(), atom = atom] {
      found->set_value(system.middleman().remote_lookup(atom, node));
    }).detach();
    if (answer.wait_for(std::chrono::seconds(1)) != std::future_status::ready) {
      seen.lookup_pending = true;
      continue;
    }
    if (auto named = answer.get()) {
      seen.named.push_back(name);
      // ConfigServ keeps every key it is given: grow it.
      for (int i = 0; i < 1000; ++i)
        caf::anon_send(caf::actor_cast<caf::actor>(named), caf::put_atom::value,
                       "intruder-" + std::to_string(i), caf::make_message(std::string(1024, 'x')));
    }
  }
}

bool parse(int argc, char** argv, options& o) {
  if (argc < 4)
    return false;
  o.host = argv[1];
  o.port = static_cast<std::uint16_t>(std::stoi(argv[2]));
  o.envelope = read_file(argv[3]);
  for (int i = 4; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    std::string value = argv[i + 1];
    if (flag == "--cert")
      o.cert = value;
    else if (flag == "--key")
      o.key = value;
    else if (flag == "--ca")
      o.ca = value;
    else if (flag == "--listen-ms")
      o.listen_ms = std::stoi(value);
    else
      return false;
  }
  return true;
}

} // namespace

int main(int argc, char** argv) {
  options o;
  if (!parse(argc, argv, o)) {
    std::cerr << "usage: comb-intruder HOST PORT ENVELOPE_FILE [--cert C --key K --ca A] [--listen-ms N]\n";
    return 2;
  }
  const bool tls = !o.ca.empty();
  caf::actor_system_config config;
  config.set("logger.verbosity", caf::atom("quiet"));
  config.load<caf::io::middleman>();
  if (tls) {
    config.load<caf::openssl::manager>();
    config.openssl_certificate = o.cert;
    config.openssl_key = o.key;
    config.openssl_cafile = o.ca;
  }
  caf::actor_system system{config};
  caf::scoped_actor self{system};
  auto pod = tls ? caf::openssl::remote_actor(system, o.host, o.port)
                 : system.middleman().remote_actor(o.host, o.port);
  if (!pod) {
    std::cout << "{\"connected\":false,\"error\":" << json_string(system.render(pod.error()))
              << "}" << std::endl;
    return 0;
  }
  observed seen;
  attack(self, *pod, o, seen);
  look_up_named(system, *pod, seen);
  std::cout << "{\"connected\":true,\"envelopes\":" << seen.envelopes << ",\"named\":[";
  for (std::size_t i = 0; i < seen.named.size(); ++i)
    std::cout << (i ? "," : "") << json_string(seen.named[i]);
  std::cout << "],\"replies\":[";
  for (std::size_t i = 0; i < seen.replies.size(); ++i)
    std::cout << (i ? "," : "") << json_string(seen.replies[i]);
  std::cout << "]}" << std::endl;
  // A lookup still blocked holds the actor system: it would never shut down.
  if (seen.lookup_pending)
    std::_Exit(0);
  return 0;
}
