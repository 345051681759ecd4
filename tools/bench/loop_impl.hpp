// SPDX-License-Identifier: MIT
#pragma once
// The event loop's insides, shared by the two kinds of client link (ws_link.cpp, plain_link.cpp).

#include <exception>
#include <memory>
#include <string>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "tools/bench/ws_link.hpp"

namespace comb::bench {

struct event_loop::impl {
  boost::asio::io_context ioc{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{ioc.get_executor()};
};

/// The completion of a link's run coroutine: the link finishes with "closed" or with what ended
/// it (both link kinds share it).
template <typename Link>
auto finish_when_done(std::shared_ptr<Link> self) {
  return [self = std::move(self)](std::exception_ptr error) {
    if (!error)
      return self->finish("closed");
    try {
      std::rethrow_exception(error);
    } catch (const std::exception& e) {
      self->finish(e.what());
    }
  };
}

/// A client link without extensions that frames and splits WebSocket frames itself
/// (plain_link.cpp): what comb-bench uses unless permessage-deflate is asked for.
[[nodiscard]] std::shared_ptr<link> open_plain_link(event_loop& loop, const endpoint& where,
                                                    link_handlers handlers);

} // namespace comb::bench
