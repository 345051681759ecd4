// SPDX-License-Identifier: MIT
#include "storage/redis/hiredis_asio.hpp"

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/posix/stream_descriptor.hpp>
#include <hiredis/async.h>
#include <utility>

namespace comb::storage::redis_detail {
namespace {

namespace asio = boost::asio;
using wait_type = asio::posix::descriptor_base::wait_type;

/// The Asio side of one attached context. Shared by every pending wait, because hiredis may free
/// the context (calling `cleanup`) from inside redisAsyncHandleRead while another wait is queued.
struct watcher : std::enable_shared_from_this<watcher> {
  watcher(asio::io_context& io, strand_type s, std::weak_ptr<void> o)
      : descriptor(io), strand(std::move(s)), owner(std::move(o)) {}

  redisAsyncContext* ac = nullptr; ///< null once hiredis has called cleanup
  asio::posix::stream_descriptor descriptor;
  strand_type strand;
  std::weak_ptr<void> owner;
  bool want_read = false;
  bool want_write = false;
  bool read_armed = false;
  bool write_armed = false;
  std::shared_ptr<watcher> self; ///< hiredis's reference (through ev.data), dropped in cleanup

  bool& wanted(wait_type type) { return type == wait_type::wait_read ? want_read : want_write; }
  bool& armed(wait_type type) { return type == wait_type::wait_read ? read_armed : write_armed; }

  /// One outstanding wait per direction: hiredis calls addRead after every read.
  void arm(wait_type type) noexcept {
    if (armed(type) || ac == nullptr)
      return;
    try {
      auto ready = [w = shared_from_this(), type](const boost::system::error_code& error) {
        w->on_ready(type, error);
      };
      descriptor.async_wait(type, asio::bind_executor(strand, std::move(ready)));
      armed(type) = true;
    } catch (...) {
      // Only allocation can fail here; the connect timeout or the next addRead recovers.
    }
  }

  void on_ready(wait_type type, const boost::system::error_code& error) {
    // Lock the owner first: once it is gone it has freed the context, and nothing here is valid.
    const auto keep_owner = owner.lock();
    if (!keep_owner)
      return;
    armed(type) = false;
    // Waits fail only when cleanup released the descriptor; a wanted-flag cleared after arming
    // (delRead/delWrite) means hiredis no longer cares about this direction.
    if (error || ac == nullptr || !wanted(type))
      return;
    if (type == wait_type::wait_read)
      redisAsyncHandleRead(ac);
    else
      redisAsyncHandleWrite(ac);
    if (ac != nullptr && wanted(type)) // hiredis may have freed the context just now
      arm(type);
  }
};

watcher& of(void* data) {
  return *static_cast<watcher*>(data);
}

void add_read(void* data) {
  of(data).want_read = true;
  of(data).arm(wait_type::wait_read);
}

void del_read(void* data) {
  of(data).want_read = false;
}

void add_write(void* data) {
  of(data).want_write = true;
  of(data).arm(wait_type::wait_write);
}

void del_write(void* data) {
  of(data).want_write = false;
}

void cleanup(void* data) {
  auto& w = of(data);
  w.ac = nullptr;
  w.want_read = w.want_write = false;
  // release(), never close(): hiredis owns and closes the fd right after this hook. Releasing
  // removes it from epoll first (so a reused fd number is not confused) and aborts the waits.
  static_cast<void>(w.descriptor.release());
  const auto last_reference = std::move(w.self); // may destroy w at the end of this scope
}

} // namespace

bool attach_to_asio(redisAsyncContext* ac, asio::io_context& io, const strand_type& strand,
                    std::weak_ptr<void> owner) noexcept {
  if (ac == nullptr || ac->ev.data != nullptr)
    return false;
  try {
    auto w = std::make_shared<watcher>(io, strand, std::move(owner));
    boost::system::error_code error;
    w->descriptor.assign(ac->c.fd, error);
    if (error)
      return false;
    w->ac = ac;
    w->self = w;
    ac->ev.data = w.get();
    ac->ev.addRead = add_read;
    ac->ev.delRead = del_read;
    ac->ev.addWrite = add_write;
    ac->ev.delWrite = del_write;
    ac->ev.cleanup = cleanup;
    return true;
  } catch (...) {
    return false;
  }
}

} // namespace comb::storage::redis_detail
