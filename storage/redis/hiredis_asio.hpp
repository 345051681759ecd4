// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <memory>

struct redisAsyncContext;

namespace comb::storage::redis_detail {

using strand_type = boost::asio::strand<boost::asio::io_context::executor_type>;

/// Drives one hiredis 0.14 async context from Asio (hiredis ships no Asio adapter). The socket
/// is watched through a `stream_descriptor` that never owns the fd (hiredis closes it), and every
/// `redisAsyncHandleRead/Write` runs on `strand`, because hiredis is not thread-safe.
///
/// `owner` is the object whose members the context's callbacks touch: a readiness handler runs
/// only while it can lock `owner`, so a handler that was queued before the owner died does
/// nothing. Returns false when the fd cannot be registered; the caller then frees the context.
[[nodiscard]] bool attach_to_asio(redisAsyncContext* ac, boost::asio::io_context& io,
                                  const strand_type& strand, std::weak_ptr<void> owner) noexcept;

} // namespace comb::storage::redis_detail
