// SPDX-License-Identifier: MIT
// comb-bench's own WebSocket client for connections without extensions: it reads whatever the
// socket holds into one buffer and splits the frames itself. Beast's read (a composed operation
// and a UTF-8 check per message, a coroutine resumption per frame) made the fan-out subscribers
// the generator's ceiling at saturation; issue 16's method asks that the generator never is.
// Both relays are measured with the same client, so the comparison stays fair.
#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>
#include <deque>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <boost/asio.hpp>

#include "tools/bench/loop_impl.hpp"

namespace comb::bench {
namespace asio = boost::asio;
using asio::ip::tcp;

namespace {

constexpr std::uint8_t op_continuation = 0x0, op_text = 0x1, op_binary = 0x2, op_close = 0x8,
                       op_ping = 0x9;
constexpr std::uint64_t max_message_bytes = 64u << 20;
/// The receive buffer starts small (an idle connection holds little) and doubles, up to
/// `busy_buffer`, while reads fill it: a busy subscriber then takes many frames per read.
constexpr std::size_t first_buffer = 16 * 1024;
constexpr std::size_t busy_buffer = 256 * 1024;

/// A frame header found at the front of the receive buffer.
struct frame_header {
  bool fin = false;
  std::uint8_t opcode = 0;
  std::size_t header_bytes = 0;
  std::uint64_t payload_bytes = 0;
  std::optional<std::array<std::uint8_t, 4>> mask; ///< a server never masks; undone if it does
};

std::uint64_t big_endian(const std::uint8_t* at, int count) {
  std::uint64_t value = 0;
  for (int i = 0; i < count; ++i)
    value = value << 8 | at[i];
  return value;
}

/// The header at `data`, or nothing while its bytes have not all arrived (RFC 6455 5.2).
std::optional<frame_header> parse_header(const std::uint8_t* data, std::size_t size) {
  if (size < 2)
    return std::nullopt;
  frame_header h;
  h.fin = (data[0] & 0x80) != 0;
  h.opcode = data[0] & 0x0f;
  bool masked = (data[1] & 0x80) != 0;
  std::uint8_t length = data[1] & 0x7f;
  std::size_t at = 2;
  int extended = length == 126 ? 2 : length == 127 ? 8 : 0;
  if (size < at + static_cast<std::size_t>(extended) + (masked ? 4 : 0))
    return std::nullopt;
  h.payload_bytes = extended ? big_endian(data + at, extended) : length;
  at += static_cast<std::size_t>(extended);
  if (masked) {
    h.mask.emplace();
    std::memcpy(h.mask->data(), data + at, 4);
    at += 4;
  }
  h.header_bytes = at;
  return h;
}

/// A client frame: always masked (RFC 6455 5.3), the key chosen per link.
std::string client_frame(std::uint8_t opcode, std::string_view payload,
                         const std::array<std::uint8_t, 4>& mask) {
  std::string out;
  out.reserve(payload.size() + 14);
  out += static_cast<char>(0x80 | opcode);
  if (payload.size() <= 125) {
    out += static_cast<char>(0x80 | payload.size());
  } else if (payload.size() <= 0xffff) {
    out += static_cast<char>(0x80 | 126);
    for (int shift = 8; shift >= 0; shift -= 8)
      out += static_cast<char>((payload.size() >> shift) & 0xff);
  } else {
    out += static_cast<char>(0x80 | 127);
    for (int shift = 56; shift >= 0; shift -= 8)
      out += static_cast<char>((static_cast<std::uint64_t>(payload.size()) >> shift) & 0xff);
  }
  out.append(reinterpret_cast<const char*>(mask.data()), mask.size());
  std::size_t start = out.size();
  out.append(payload);
  for (std::size_t i = 0; i < payload.size(); ++i)
    out[start + i] = static_cast<char>(out[start + i] ^ static_cast<char>(mask[i % 4]));
  return out;
}

/// The key is a fixed 16-byte nonce in base64 (RFC 6455 4.1): a benchmark has nothing to prove
/// by checking the accept hash.
std::string upgrade_request(const endpoint& where) {
  return "GET " + where.target + " HTTP/1.1\r\nHost: " + where.authority
         + "\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
           "Sec-WebSocket-Key: Y29tYi1iZW5jaC1rZXkhIQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";
}

class plain_link final : public link, public std::enable_shared_from_this<plain_link> {
public:
  plain_link(asio::io_context& ioc, link_handlers handlers)
    : socket_(ioc), handlers_(std::move(handlers)) {
    std::random_device random;
    auto key = random();
    std::memcpy(mask_.data(), &key, mask_.size());
  }

  void start(const endpoint& where) {
    asio::co_spawn(socket_.get_executor(), run(shared_from_this(), where),
                   finish_when_done(shared_from_this()));
  }

  void send(std::string frame) override {
    if (open_ && !closing_)
      queue(client_frame(op_text, frame, mask_));
  }

  void close() override {
    if (!open_ || closing_)
      return;
    queue(client_frame(op_close, std::string_view("\x03\xe8", 2), mask_)); // 1000, normal
    closing_ = true;
  }

  bool is_open() const override { return open_; }

private:
  static asio::awaitable<void> run(std::shared_ptr<plain_link> self, endpoint where) {
    tcp::resolver resolver(self->socket_.get_executor());
    auto addresses = co_await resolver.async_resolve(where.host, where.port, asio::use_awaitable);
    co_await asio::async_connect(self->socket_, addresses, asio::use_awaitable);
    self->socket_.set_option(tcp::no_delay(true));
    co_await self->handshake(where);
    self->open_ = true;
    if (self->handlers_.on_open)
      self->handlers_.on_open();
    while (co_await self->read_more())
      if (!self->split_frames())
        co_return;
  }

  asio::awaitable<void> handshake(const endpoint& where) {
    co_await asio::async_write(socket_, asio::buffer(upgrade_request(where)), asio::use_awaitable);
    std::string reply;
    auto n = co_await asio::async_read_until(socket_, asio::dynamic_buffer(reply), "\r\n\r\n",
                                             asio::use_awaitable);
    if (!reply.starts_with("HTTP/1.1 101"))
      throw std::runtime_error("upgrade refused: " + reply.substr(0, reply.find('\r')));
    // Frames that came with the reply stay for the first split.
    in_.assign(reply.begin() + static_cast<std::ptrdiff_t>(n), reply.end());
    filled_ = in_.size();
    in_.resize(std::max(filled_, first_buffer));
  }

  /// Appends what the socket holds; false when the connection ended.
  asio::awaitable<bool> read_more() {
    if (in_.size() - filled_ < first_buffer / 4) // the start of a long frame fills it
      in_.resize(std::max(2 * in_.size(), filled_ + first_buffer));
    std::size_t room = in_.size() - filled_;
    auto [ec, n] = co_await socket_.async_read_some(asio::buffer(in_.data() + filled_, room),
                                                    asio::as_tuple(asio::use_awaitable));
    filled_ += n;
    if (n == room && in_.size() < busy_buffer)
      in_.resize(2 * in_.size());
    co_return !ec;
  }

  /// Hands every whole frame in the buffer to its handler and keeps the rest; false once the
  /// relay closed the connection.
  bool split_frames() {
    std::size_t at = 0;
    bool going_on = true;
    while (going_on) {
      auto* data = reinterpret_cast<std::uint8_t*>(in_.data()) + at;
      auto header = parse_header(data, filled_ - at);
      if (!header)
        break;
      if (header->payload_bytes > max_message_bytes)
        throw std::runtime_error("frame over 64 MiB");
      std::size_t total = header->header_bytes + static_cast<std::size_t>(header->payload_bytes);
      if (filled_ - at < total)
        break;
      auto* payload = reinterpret_cast<char*>(data + header->header_bytes);
      if (header->mask)
        for (std::size_t i = 0; i < header->payload_bytes; ++i)
          payload[i] = static_cast<char>(payload[i] ^ static_cast<char>((*header->mask)[i % 4]));
      going_on = on_frame(*header, std::string_view(payload, static_cast<std::size_t>(header->payload_bytes)));
      at += total;
    }
    // Only the start of a frame stays: a few bytes to move, rarely more.
    std::memmove(in_.data(), in_.data() + at, filled_ - at);
    filled_ -= at;
    return going_on;
  }

  /// One frame's payload; false for a close.
  bool on_frame(const frame_header& header, std::string_view payload) {
    switch (header.opcode) {
      case op_text:
      case op_binary:
      case op_continuation:
        if (header.opcode != op_continuation)
          message_.clear();
        if (header.fin && header.opcode != op_continuation) {
          deliver(payload); // the common case: a whole message, read where it lies
        } else {
          message_.append(payload);
          if (header.fin)
            deliver(message_);
        }
        return true;
      case op_close:
        return false;
      case op_ping:
        queue(client_frame(0xA, payload, mask_));
        return true;
      default:
        return true;
    }
  }

  void deliver(std::string_view text) {
    if (handlers_.on_text)
      handlers_.on_text(text);
  }

  void queue(std::string frame) {
    out_.push_back(std::move(frame));
    if (writing_)
      return;
    writing_ = true;
    asio::co_spawn(socket_.get_executor(), write_all(shared_from_this()), asio::detached);
  }

  /// Writes until the queue is empty. `writing_` drops here, not in a completion handler that
  /// may run later: a frame queued in between would otherwise wait for a writer that is gone.
  static asio::awaitable<void> write_all(std::shared_ptr<plain_link> self) {
    while (!self->out_.empty()) {
      auto [ec, n] = co_await asio::async_write(self->socket_, asio::buffer(self->out_.front()),
                                                asio::as_tuple(asio::use_awaitable));
      self->out_.pop_front();
      if (ec) {
        self->out_.clear(); // the connection is gone; its reader reports the end
        self->writing_ = false;
        co_return;
      }
    }
    self->writing_ = false;
    if (self->closing_) {
      boost::system::error_code ignored;
      self->socket_.shutdown(tcp::socket::shutdown_send, ignored);
    }
  }

public:
  /// Ends the link once (from finish_when_done when its coroutine ends).
  void finish(const std::string& reason) {
    open_ = false;
    if (finished_)
      return;
    finished_ = true;
    boost::system::error_code ignored;
    socket_.close(ignored);
    if (handlers_.on_close)
      handlers_.on_close(reason);
    handlers_ = {}; // breaks cycles through captured shared_ptrs
  }

private:
  tcp::socket socket_;
  link_handlers handlers_;
  std::array<std::uint8_t, 4> mask_{};
  std::vector<char> in_; ///< received bytes: whole frames, then the start of the next
  std::size_t filled_ = 0;
  std::string message_; ///< a fragmented message so far
  std::deque<std::string> out_;
  bool open_ = false, writing_ = false, closing_ = false, finished_ = false;
};

} // namespace

std::shared_ptr<link> open_plain_link(event_loop& loop, const endpoint& where, link_handlers handlers) {
  auto made = std::make_shared<plain_link>(loop.impl_->ioc, std::move(handlers));
  made->start(where);
  return made;
}

} // namespace comb::bench
