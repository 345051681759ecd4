// SPDX-License-Identifier: MIT
#pragma once
// comb-bench's plain parts: options, the loopback URL check, the signed corpus, relay frames,
// latency statistics, CPU and RSS readings, and the report (text lines + one JSON object).

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "protocol/event.hpp"
#include "protocol/signature.hpp"
#include "tools/bench/ws_link.hpp"

namespace comb::bench {

struct options {
  std::string scenario;
  std::string relay;
  endpoint where;
  long events = -1;         ///< -1: the scenario's default
  int connections = 0;
  int subscribers = 0;
  double seconds = 0;
  double rate = 0;          ///< fan-out: events published per second
  int relay_pid = 0;        ///< 0: none; its CPU is reported per operation, its RSS (connections)
  std::vector<int> db_pids; ///< the relay's database processes: their CPU is reported too
  bool deflate = false;     ///< offer permessage-deflate
  long members = 10000;     ///< membership: grow the community to this many first
  std::optional<protocol::key_pair> key;
  bool json = false;
  std::vector<std::string> shapes; ///< query: the shapes to time (empty: all of them)
};

/// Nothing (with a message on stderr) for anything but a ws:// URL to a loopback host.
[[nodiscard]] std::optional<endpoint> parse_loopback_url(std::string_view url);

using clock_type = std::chrono::steady_clock;
[[nodiscard]] inline double seconds_since(clock_type::time_point start) {
  return std::chrono::duration<double>(clock_type::now() - start).count();
}
[[nodiscard]] std::int64_t unix_now();

/// A signed event and its `["EVENT", ...]` frame, signed before any timing starts.
struct signed_event {
  std::string id_hex;
  std::string frame;
};
[[nodiscard]] signed_event sign_event(const protocol::key_pair& author, protocol::event ev);
/// `["AUTH", <22242 event>]` for `challenge` at the relay URL.
[[nodiscard]] std::string auth_frame(const protocol::key_pair& key, const std::string& relay_url,
                                     std::string_view challenge);
/// n fresh key pairs (or `given` n times when set).
[[nodiscard]] std::vector<protocol::key_pair> make_keys(std::size_t n,
                                                        const std::optional<protocol::key_pair>& given);
/// A typical short text note (~600-byte frame) with a `t` tag naming the run.
[[nodiscard]] protocol::event note(const protocol::key_pair& author, long n, std::string_view run_tag,
                                   std::int64_t created_at, std::uint32_t kind = 1);

/// A relay frame reduced to what the scenarios need. EVENT frames are not parsed as JSON: only
/// the subscription and the event id are cut out, so 1,000 subscribers stay cheap to count.
struct relay_frame {
  enum class type { event, eose, ok, auth, closed, notice, other } kind = type::other;
  std::string subscription;  ///< EVENT, EOSE, CLOSED
  std::string text;          ///< OK: event id; AUTH: challenge; CLOSED/NOTICE: message
  std::string message;       ///< OK: message
  bool accepted = false;     ///< OK
  std::string_view event_id; ///< EVENT: points into the frame given to parse_relay_frame
  std::string_view raw;      ///< the whole frame (valid during the callback only)
};
[[nodiscard]] relay_frame parse_relay_frame(std::string_view frame);

/// Latency samples in milliseconds.
class samples {
public:
  void add(double ms) { values_.push_back(ms); }
  [[nodiscard]] std::size_t size() const { return values_.size(); }
  /// q in [0, 1]; 0 when empty.
  [[nodiscard]] double quantile(double q);
private:
  std::vector<double> values_;
  bool sorted_ = false;
};

/// User + system CPU seconds of this process so far.
[[nodiscard]] double cpu_seconds();
/// VmRSS of a process in KiB, or -1.
[[nodiscard]] long rss_kib(int pid);
/// Single-core BIP-340 verifications per second, measured for about `seconds` now.
[[nodiscard]] double verify_rate(double seconds);

/// Collects figures, prints them as lines as they come, and the JSON object last.
class report {
public:
  explicit report(std::string scenario) : scenario_(std::move(scenario)) {}
  void figure(const std::string& name, double value, const char* unit = "");
  void note(const std::string& name, const std::string& value);
  void print_json() const;
private:
  std::string scenario_;
  std::vector<std::pair<std::string, std::string>> fields_;
};

/// A connection that answers the relay's AUTH challenge with `key` and reports frames.
/// `authed` becomes true when the relay accepts the AUTH event (OK true for its id).
struct client {
  std::shared_ptr<link> conn;
  std::string challenge;
  std::string auth_id;
  bool open = false, authed = false, closed = false;
};
using frame_handler = std::function<void(const relay_frame&)>;
/// Connects; answers AUTH with `key`; hands every other frame to `on_frame`.
[[nodiscard]] std::shared_ptr<client> connect_client(event_loop& loop, const options& opts,
                                                     const protocol::key_pair& key,
                                                     frame_handler on_frame);

} // namespace comb::bench
