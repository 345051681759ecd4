// SPDX-License-Identifier: MIT
#pragma once
// The event loop's insides, shared by the two kinds of client link (ws_link.cpp, plain_link.cpp).

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include "tools/bench/ws_link.hpp"

namespace comb::bench {

struct event_loop::impl {
  boost::asio::io_context ioc{1};
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> guard{ioc.get_executor()};
};

/// A client link without extensions that frames and splits WebSocket frames itself
/// (plain_link.cpp): what comb-bench uses unless permessage-deflate is asked for.
[[nodiscard]] std::shared_ptr<link> open_plain_link(event_loop& loop, const endpoint& where,
                                                    link_handlers handlers);

} // namespace comb::bench
