// SPDX-License-Identifier: MIT
#pragma once

#include <cstddef>
#include <deque>
#include <memory>
#include <utility>

namespace comb::actors {

/// A queue that allocates nothing until its first element. libstdc++'s std::deque allocates a
/// map and a block (576 bytes) as it is constructed, and each connection holds queues that an
/// idle connection never fills (docs/benchmarks.md, idle memory per connection). Once used it
/// keeps its storage, as a deque keeps its last block.
template <class T>
class lazy_deque {
public:
  using iterator = typename std::deque<T>::iterator;

  [[nodiscard]] bool empty() const noexcept { return !items_ || items_->empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return items_ ? items_->size() : 0; }

  [[nodiscard]] T& front() { return items_->front(); }

  void push_back(T value) { used().push_back(std::move(value)); }

  template <class... Args>
  T& emplace_back(Args&&... args) {
    return used().emplace_back(std::forward<Args>(args)...);
  }

  void pop_front() { items_->pop_front(); }

  iterator begin() { return used().begin(); }
  iterator end() { return used().end(); }
  iterator erase(iterator at) { return items_->erase(at); }

  /// Removes the elements `drop` holds true of; how many.
  template <class Drop>
  friend std::size_t erase_if(lazy_deque& queue, Drop drop) {
    return queue.items_ ? std::erase_if(*queue.items_, drop) : 0;
  }

private:
  std::deque<T>& used() {
    if (!items_)
      items_ = std::make_unique<std::deque<T>>();
    return *items_;
  }

  std::unique_ptr<std::deque<T>> items_;
};

} // namespace comb::actors
