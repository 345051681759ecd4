// SPDX-License-Identifier: MIT
#include "actors/gateway/gathered_buffers.hpp"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>
#include <climits>

#include <boost/asio/error.hpp>


namespace comb::actors {
namespace asio = boost::asio;
using boost::system::error_code;

error_code gathered_buffers::send_some(int fd) {
  msghdr message{};
  message.msg_iov = buffers_.data() + first_;
  message.msg_iovlen = std::min<std::size_t>(buffers_.size() - first_, IOV_MAX);
  ssize_t sent = ::sendmsg(fd, &message, MSG_DONTWAIT | MSG_NOSIGNAL);
  if (sent < 0)
    return errno == EAGAIN || errno == EWOULDBLOCK ? error_code(asio::error::would_block)
                                                   : error_code(errno, boost::system::system_category());
  advance(static_cast<std::size_t>(sent));
  return {};
}

std::array<asio::const_buffer, gathered_buffers::asio_max_buffers> gathered_buffers::next_buffers() const {
  std::array<asio::const_buffer, asio_max_buffers> next{};
  for (std::size_t i = 0; i < next.size() && first_ + i < buffers_.size(); ++i)
    next[i] = asio::const_buffer(buffers_[first_ + i].iov_base, buffers_[first_ + i].iov_len);
  return next;
}

outbound_frame gathered_buffers::rest() const {
  outbound_frame left;
  left.framed = true;
  for (std::size_t i = first_; i < buffers_.size(); ++i)
    left.text.append(static_cast<const char*>(buffers_[i].iov_base), buffers_[i].iov_len);
  return left;
}

void gathered_buffers::advance(std::size_t n) {
  // Past whole buffers, then the start of a partly written one.
  while (first_ < buffers_.size() && n >= buffers_[first_].iov_len)
    n -= buffers_[first_++].iov_len;
  if (first_ < buffers_.size()) {
    buffers_[first_].iov_base = static_cast<char*>(buffers_[first_].iov_base) + n;
    buffers_[first_].iov_len -= n;
  }
}

bool gathered_buffers::add_prefix(const outbound_frame& frame, bool event_open) {
  close_event(event_open);
  if (!frame.framed) {
    auto header = protocol::make_text_frame_header(frame.size());
    append(reinterpret_cast<const char*>(header.bytes.data()), header.size);
  }
  if (frame.json)
    append(frame.head->data(), frame.head->size());
  return frame.json != nullptr;
}

void gathered_buffers::close_event(bool event_open) {
  if (event_open)
    append(shared_event_frame::tail.data(), shared_event_frame::tail.size());
}

} // namespace comb::actors
