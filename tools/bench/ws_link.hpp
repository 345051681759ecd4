// SPDX-License-Identifier: MIT
#pragma once
// The only parts of comb-bench that touch Asio/Beast (ws_link.cpp, plain_link.cpp). Everything
// else drives connections through these callbacks on one single-threaded event loop, so the
// heavy headers are compiled once.

#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace comb::bench {

/// Where to connect: a loopback ws:// URL, split.
struct endpoint {
  std::string url;        ///< as given; the NIP-42 `relay` tag names it
  std::string host;       ///< address to connect to (IPv6 without brackets)
  std::string port;
  std::string authority;  ///< Host header: host[:port], lowercase, IPv6 in brackets
  std::string target;     ///< path, "/" when empty
};

/// One thread, one io_context. Callbacks of every link and timer run on it.
class event_loop {
public:
  event_loop();
  ~event_loop();
  event_loop(const event_loop&) = delete;
  event_loop& operator=(const event_loop&) = delete;

  /// Runs handlers until `done()` holds (checked every few milliseconds) or `max_seconds` pass.
  /// Returns whether `done()` held.
  bool run_until(const std::function<bool()>& done, double max_seconds);
  /// Runs `fn` on the loop after `seconds` (while some run_until is running).
  void after(double seconds, std::function<void()> fn);

  struct impl;
  std::unique_ptr<impl> impl_;
};

struct link_handlers {
  std::function<void()> on_open;
  std::function<void(std::string_view)> on_text;
  /// Called once, when the connect fails or the connection ends; the reason is for humans.
  std::function<void(const std::string&)> on_close;
};

/// A WebSocket client connection. Frames are queued and written in order.
class link {
public:
  virtual ~link() = default;
  virtual void send(std::string frame) = 0;
  virtual void close() = 0;
  [[nodiscard]] virtual bool is_open() const = 0;
};

/// Starts connecting at once; `handlers` fire on the loop. `deflate` offers permessage-deflate
/// (zlib defaults on the client side; the relay picks what it accepts) through Beast; without it
/// the link frames and splits frames itself (plain_link.cpp), a fraction of Beast's cost per frame.
[[nodiscard]] std::shared_ptr<link> open_link(event_loop& loop, const endpoint& where,
                                              bool deflate, link_handlers handlers);

} // namespace comb::bench
