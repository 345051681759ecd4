// SPDX-License-Identifier: MIT
// Micro-benchmark: what accepting one EVENT frame costs (parse + id + signature verify), printed
// next to the raw libsecp256k1 verify measured in the same run. Usage:
//   comb-protocol-bench [events] [rounds]
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <secp256k1.h>
#include <secp256k1_extrakeys.h>
#include <secp256k1_schnorrsig.h>
#include <string>
#include <vector>

#include "protocol/canonical_json.hpp"
#include "protocol/client_message.hpp"
#include "protocol/event_check.hpp"
#include "protocol/signature.hpp"

using namespace comb::protocol;
using clock_type = std::chrono::steady_clock;

namespace {

event typical_note(const key_pair& author, int n) {
  event ev;
  ev.pubkey = author.public_key();
  ev.created_at = 1700000000 + n;
  ev.kind = 1;
  ev.tags = {{"e", std::string(64, 'a'), "wss://relay.example.com", "root"},
             {"p", std::string(64, 'b')},
             {"t", "bees"}};
  ev.content = "Note " + std::to_string(n)
               + ": the hive hums along; a typical short text note with some words in it, "
                 "an emoji 🐝 and a \"quote\" to escape.";
  ev.id = compute_id(ev);
  ev.sig = author.sign(ev.id);
  return ev;
}

template <class Body>
double seconds_for(int count, Body body) {
  auto start = clock_type::now();
  for (int i = 0; i < count; ++i)
    body(i);
  return std::chrono::duration<double>(clock_type::now() - start).count();
}

int sink = 0;

} // namespace

int main(int argc, char** argv) {
  int count = argc > 1 ? std::atoi(argv[1]) : 20000;
  int rounds = argc > 2 ? std::atoi(argv[2]) : 3;
  std::vector<key_pair> authors;
  for (int i = 0; i < 16; ++i)
    authors.push_back(key_pair::generate());
  std::vector<event> events;
  std::vector<std::string> frames;
  for (int i = 0; i < count; ++i) {
    events.push_back(typical_note(authors[static_cast<std::size_t>(i) % authors.size()], i));
    frames.push_back("[\"EVENT\"," + render_event_json(events.back()) + "]");
  }
  auto* ctx = secp256k1_context_create(SECP256K1_CONTEXT_NONE);
  std::vector<secp256k1_xonly_pubkey> parsed_keys(authors.size());
  for (std::size_t i = 0; i < authors.size(); ++i)
    if (!secp256k1_xonly_pubkey_parse(ctx, &parsed_keys[i], authors[i].public_key().data()))
      return 1;
  protocol_limits limits;
  auto raw = [&](int i) {
    const auto& ev = events[static_cast<std::size_t>(i)];
    sink += secp256k1_schnorrsig_verify(ctx, ev.sig.data(), ev.id.data(), 32,
                                        &parsed_keys[static_cast<std::size_t>(i) % authors.size()]);
  };
  auto raw_with_key_parse = [&](int i) {
    const auto& ev = events[static_cast<std::size_t>(i)];
    secp256k1_xonly_pubkey key;
    sink += secp256k1_xonly_pubkey_parse(ctx, &key, ev.pubkey.data());
    sink += secp256k1_schnorrsig_verify(ctx, ev.sig.data(), ev.id.data(), 32, &key);
  };
  auto parse_and_id = [&](int i) {
    auto parsed = parse_client_message(frames[static_cast<std::size_t>(i)], limits);
    sink += parsed.ok();
    sink += compute_id(std::get<event_message>(parsed.value()).ev)[0];
  };
  auto full = [&](int i) {
    auto parsed = parse_client_message(frames[static_cast<std::size_t>(i)], limits);
    if (!parsed || verify_event(std::get<event_message>(parsed.value()).ev))
      std::abort();
  };
  // The machines are shared and noisy: the four measurements alternate in small batches so
  // that a neighbour's burst lands on all of them alike.
  double t_raw = 0, t_raw_parse = 0, t_parse = 0, t_full = 0;
  constexpr int batch = 250;
  for (int round = 0; round < rounds; ++round) {
    for (int first = 0; first < count; first += batch) {
      int n = std::min(batch, count - first);
      auto shifted = [first](auto& body) { return [&body, first](int i) { body(first + i); }; };
      t_raw += seconds_for(n, shifted(raw));
      t_raw_parse += seconds_for(n, shifted(raw_with_key_parse));
      t_parse += seconds_for(n, shifted(parse_and_id));
      t_full += seconds_for(n, shifted(full));
    }
  }
  count *= rounds;
  double best_raw = t_raw, best_raw_parse = t_raw_parse, best_parse = t_parse, best_full = t_full;
  secp256k1_context_destroy(ctx);
  auto per_us = [&](double s) { return s / count * 1e6; };
  std::printf("events: %d (%d rounds), frame bytes: %zu, interleaved batches of 250\n", count, rounds, frames[0].size());
  std::printf("raw schnorrsig_verify (pre-parsed key)     %8.2f us  %9.0f /s\n", per_us(best_raw), count / best_raw);
  std::printf("raw xonly_pubkey_parse + schnorrsig_verify %8.2f us  %9.0f /s\n", per_us(best_raw_parse), count / best_raw_parse);
  std::printf("frame parse + id (no verify)               %8.2f us  %9.0f /s\n", per_us(best_parse), count / best_parse);
  std::printf("frame parse + id + verify (comb)           %8.2f us  %9.0f /s\n", per_us(best_full), count / best_full);
  std::printf("overhead vs raw verify:            %+.1f%%\n", (best_full / best_raw - 1) * 100);
  std::printf("overhead vs raw key parse + verify: %+.1f%%\n", (best_full / best_raw_parse - 1) * 100);
  std::printf("{\"events\":%d,\"raw_verify_us\":%.3f,\"raw_parse_verify_us\":%.3f,\"parse_id_us\":%.3f,"
              "\"full_us\":%.3f,\"overhead_vs_raw\":%.4f}\n",
              count, per_us(best_raw), per_us(best_raw_parse), per_us(best_parse), per_us(best_full),
              best_full / best_raw - 1);
  std::printf("(checksum %d)\n", sink);
  return 0;
}
