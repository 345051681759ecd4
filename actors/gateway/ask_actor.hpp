// SPDX-License-Identifier: MIT
#pragma once

#include <boost/asio/async_result.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/this_coro.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <caf/all.hpp>
#include <functional>
#include <memory>

namespace comb::actors {

/// Sends (`atom`, `args`..., a callback) to `actor` and resumes the calling coroutine on its own
/// executor with what the callback is given: how the socket edge asks the actors that answer
/// through a `std::function<void(Reply)>` (the directory, the management actor).
template <class Reply, class Atom, class... Args>
boost::asio::awaitable<Reply> ask_actor(caf::actor actor, Atom atom, Args... args) {
  auto executor = co_await boost::asio::this_coro::executor;
  // The arguments live in this coroutine's frame until the answer comes.
  auto ask = [&](auto handler) {
    auto shared = std::make_shared<decltype(handler)>(std::move(handler));
    std::function<void(Reply)> reply = [shared, executor](Reply answer) {
      boost::asio::post(executor, [shared, answer = std::move(answer)]() mutable {
        std::move (*shared)(std::move(answer));
      });
    };
    caf::anon_send(actor, atom, std::move(args)..., std::move(reply));
  };
  Reply answer = co_await boost::asio::async_initiate<decltype(boost::asio::use_awaitable), void(Reply)>(
    ask, boost::asio::use_awaitable);
  co_return answer;
}

} // namespace comb::actors
