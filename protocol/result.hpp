// SPDX-License-Identifier: MIT
#pragma once

#include <utility>
#include <variant>

#include "protocol/rejection.hpp"

namespace comb::protocol {

/// A value or the reason there is none. Untrusted input is turned into one of these, never into
/// an exception.
template <class T, class Error = rejection>
class result {
public:
  result(T value) : state_(std::in_place_index<0>, std::move(value)) {}

  result(Error error) : state_(std::in_place_index<1>, std::move(error)) {}

  [[nodiscard]] bool ok() const noexcept { return state_.index() == 0; }

  explicit operator bool() const noexcept { return ok(); }

  [[nodiscard]] T& value() & { return std::get<0>(state_); }

  [[nodiscard]] const T& value() const& { return std::get<0>(state_); }

  [[nodiscard]] T&& value() && { return std::get<0>(std::move(state_)); }

  [[nodiscard]] const Error& error() const { return std::get<1>(state_); }

  T* operator->() { return &value(); }

  const T* operator->() const { return &value(); }

private:
  std::variant<T, Error> state_;
};

} // namespace comb::protocol
