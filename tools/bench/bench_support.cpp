// SPDX-License-Identifier: MIT
#include "tools/bench/bench_support.hpp"

#include <algorithm>
#include <boost/json.hpp>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <sys/resource.h>

#include "protocol/address.hpp"
#include "protocol/canonical_json.hpp"
#include "protocol/hex.hpp"
#include "protocol/nip42.hpp"

namespace comb::bench {
namespace json = boost::json;

std::optional<endpoint> parse_loopback_url(std::string_view url) {
  auto fail = [&](std::string_view why) -> std::optional<endpoint> {
    std::fprintf(stderr, "comb-bench: refusing relay URL %.*s: %.*s\n", static_cast<int>(url.size()),
                 url.data(), static_cast<int>(why.size()), why.data());
    return std::nullopt;
  };
  auto parsed = protocol::parse_url(url);
  if (!parsed)
    return fail(parsed.error());
  if (parsed->scheme != "ws")
    return fail("only ws:// URLs (loopback, no TLS)");
  if (parsed->has_userinfo || parsed->has_query || parsed->has_fragment)
    return fail("a relay URL has no user, query or fragment");
  const auto& where = parsed->where;
  // A literal 127.x.y.z, ::1 or localhost: "127.evil.com" is a name, not a loopback address.
  const bool loopback = where.host == "localhost" || (where.ipv6 && where.host == "::1")
                        || (!where.ipv6 && where.literal() && where.host.starts_with("127."));
  if (!loopback)
    return fail("comb-bench talks to loopback hosts only (127.0.0.0/8, ::1, localhost)");
  endpoint out;
  out.url = std::string(url);
  out.host = where.host == "localhost" ? "127.0.0.1" : where.host;
  out.port = std::to_string(where.port.value_or(80));
  out.authority = where.authority();
  out.target = parsed->path.empty() ? "/" : parsed->path;
  return out;
}

std::int64_t unix_now() {
  return std::chrono::duration_cast<std::chrono::seconds>(
           std::chrono::system_clock::now().time_since_epoch()).count();
}

signed_event sign_event(const protocol::key_pair& author, protocol::event ev) {
  ev.pubkey = author.public_key();
  ev.id = protocol::compute_id(ev);
  ev.sig = author.sign(ev.id);
  return {protocol::to_hex(ev.id), "[\"EVENT\"," + protocol::render_event_json(ev) + "]"};
}

std::string auth_frame(const protocol::key_pair& key, const std::string& relay_url,
                       std::string_view challenge) {
  protocol::event ev;
  ev.kind = protocol::auth_kind;
  ev.created_at = unix_now();
  ev.tags = {{"relay", relay_url}, {"challenge", std::string(challenge)}};
  auto frame = sign_event(key, std::move(ev)).frame;
  return "[\"AUTH\"" + frame.substr(std::string_view("[\"EVENT\"").size());
}

std::vector<protocol::key_pair> make_keys(std::size_t n, const std::optional<protocol::key_pair>& given) {
  std::vector<protocol::key_pair> keys;
  keys.reserve(n);
  for (std::size_t i = 0; i < n; ++i)
    keys.push_back(given ? *given : protocol::key_pair::generate());
  return keys;
}

protocol::event note(const protocol::key_pair& author, long n, std::string_view run_tag,
                     std::int64_t created_at, std::uint32_t kind) {
  protocol::event ev;
  ev.pubkey = author.public_key();
  ev.created_at = created_at;
  ev.kind = kind;
  ev.tags = {{"e", std::string(64, 'a'), "", "root"}, {"p", std::string(64, 'b')},
             {"t", std::string(run_tag)}};
  ev.content = "comb-bench note " + std::to_string(n)
               + ": the hive hums along; a typical short text note with some words in it, "
                 "an emoji \xF0\x9F\x90\x9D and a \"quote\" to escape.";
  return ev;
}

relay_frame parse_relay_frame(std::string_view frame) {
  relay_frame out;
  out.raw = frame;
  constexpr std::string_view event_prefix = "[\"EVENT\",\"";
  if (frame.starts_with(event_prefix)) {
    out.kind = relay_frame::type::event;
    auto rest = frame.substr(event_prefix.size());
    auto quote = rest.find('"');
    out.subscription = std::string(rest.substr(0, quote));
    auto at = frame.find("\"id\":\"");
    if (at != std::string_view::npos && at + 6 + 64 <= frame.size())
      out.event_id = frame.substr(at + 6, 64);
    return out;
  }
  boost::system::error_code ec;
  auto value = json::parse(frame, ec);
  if (ec || !value.is_array() || value.as_array().empty() || !value.as_array()[0].is_string())
    return out;
  const auto& items = value.as_array();
  auto text = [&](std::size_t i) -> std::string {
    return i < items.size() && items[i].is_string() ? std::string(items[i].as_string()) : std::string();
  };
  auto name = text(0);
  if (name == "OK") {
    out.kind = relay_frame::type::ok;
    out.text = text(1);
    out.accepted = items.size() > 2 && items[2].is_bool() && items[2].as_bool();
    out.message = text(3);
  } else if (name == "EOSE") {
    out.kind = relay_frame::type::eose;
    out.subscription = text(1);
  } else if (name == "AUTH") {
    out.kind = relay_frame::type::auth;
    out.text = text(1);
  } else if (name == "CLOSED") {
    out.kind = relay_frame::type::closed;
    out.subscription = text(1);
    out.text = text(2);
  } else if (name == "NOTICE") {
    out.kind = relay_frame::type::notice;
    out.text = text(1);
  }
  return out;
}

double samples::quantile(double q) {
  if (values_.empty())
    return 0;
  if (!sorted_)
    std::sort(values_.begin(), values_.end());
  sorted_ = true;
  auto index = static_cast<std::size_t>(q * static_cast<double>(values_.size() - 1) + 0.5);
  return values_[std::min(index, values_.size() - 1)];
}

double cpu_seconds() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto tv = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
  return tv(usage.ru_utime) + tv(usage.ru_stime);
}

long rss_kib(int pid) {
  std::ifstream status("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(status, line))
    if (line.starts_with("VmRSS:"))
      return std::stol(line.substr(6));
  return -1;
}

double verify_rate(double seconds) {
  auto keys = make_keys(16, std::nullopt);
  std::vector<protocol::event> events;
  for (long i = 0; i < 256; ++i) {
    auto ev = note(keys[static_cast<std::size_t>(i) % keys.size()], i, "verify", unix_now());
    ev.id = protocol::compute_id(ev);
    ev.sig = keys[static_cast<std::size_t>(i) % keys.size()].sign(ev.id);
    events.push_back(std::move(ev));
  }
  long done = 0;
  int ok = 0;
  auto start = clock_type::now();
  while (seconds_since(start) < seconds)
    for (const auto& ev : events) {
      ok += protocol::verify_schnorr(ev.pubkey, ev.id, ev.sig);
      ++done;
    }
  if (ok != done)
    std::fprintf(stderr, "comb-bench: verify self-check failed\n");
  return static_cast<double>(done) / seconds_since(start);
}

void report::figure(const std::string& name, double value, const char* unit) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.6g", value);
  fields_.emplace_back(name, buffer);
  std::printf("%-28s %14.3f %s\n", name.c_str(), value, unit);
  std::fflush(stdout);
}

void report::note(const std::string& name, const std::string& value) {
  fields_.emplace_back(name, json::serialize(json::value(value)));
  std::printf("%-28s %s\n", name.c_str(), value.c_str());
}

void report::print_json() const {
  std::string out = "{\"scenario\":" + json::serialize(json::value(scenario_));
  for (const auto& [name, value] : fields_)
    out += ",\"" + name + "\":" + value;
  std::printf("%s}\n", out.c_str());
  std::fflush(stdout);
}

std::shared_ptr<client> connect_client(event_loop& loop, const options& opts,
                                       const protocol::key_pair& key, frame_handler on_frame) {
  auto c = std::make_shared<client>();
  std::weak_ptr<client> weak = c;
  link_handlers handlers;
  handlers.on_open = [weak] {
    if (auto self = weak.lock())
      self->open = true;
  };
  handlers.on_close = [weak](const std::string&) {
    if (auto self = weak.lock())
      self->open = false, self->closed = true;
  };
  handlers.on_text = [weak, key, url = opts.where.url, on_frame = std::move(on_frame)](std::string_view text) {
    auto self = weak.lock();
    if (!self)
      return;
    static const bool trace = std::getenv("COMB_BENCH_TRACE") != nullptr;
    if (trace)
      std::fprintf(stderr, "<- %.*s\n", static_cast<int>(std::min<std::size_t>(text.size(), 300)), text.data());
    auto frame = parse_relay_frame(text);
    if (frame.kind == relay_frame::type::auth) {
      self->challenge = frame.text;
      auto answer = auth_frame(key, url, frame.text);
      auto at = answer.find("\"id\":\"");
      self->auth_id = answer.substr(at + 6, 64);
      self->conn->send(std::move(answer));
      return;
    }
    if (frame.kind == relay_frame::type::ok && !self->auth_id.empty() && frame.text == self->auth_id) {
      self->authed = frame.accepted;
      if (!frame.accepted)
        std::fprintf(stderr, "comb-bench: AUTH refused: %s\n", frame.message.c_str());
      return;
    }
    if (on_frame)
      on_frame(frame);
  };
  c->conn = open_link(loop, opts.where, opts.deflate, std::move(handlers));
  return c;
}

} // namespace comb::bench
