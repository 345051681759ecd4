// SPDX-License-Identifier: MIT
#include "admin/import_tally.hpp"

#include <boost/json/array.hpp>
#include <unistd.h>

namespace comb::admin {

std::uint64_t import_tally::refused_total() const {
  std::uint64_t total = 0;
  for (const auto& [reason, count] : refused)
    total += count;
  return total;
}

void import_tally::describe(boost::json::object& fields) const {
  fields["read"] = read;
  fields["stored"] = stored;
  fields["replaced"] = replaced;
  fields["duplicate"] = duplicate;
  fields["vanished"] = vanished;
  fields["bad_lines"] = bad_lines;
  boost::json::object by_reason;
  for (const auto& [reason, count] : refused)
    by_reason[reason] = count;
  fields["refused"] = std::move(by_reason);
  boost::json::array numbers;
  for (auto number : bad_line_numbers)
    numbers.push_back(number);
  fields["bad_line_numbers"] = std::move(numbers);
}

import_progress::import_progress(std::FILE* stream, std::chrono::seconds plain_every)
  : stream_(stream),
    terminal_(::isatty(::fileno(stream)) == 1),
    every_(terminal_ ? std::chrono::steady_clock::duration(std::chrono::milliseconds(200))
                     : std::chrono::steady_clock::duration(plain_every)),
    started_(std::chrono::steady_clock::now()),
    last_shown_(started_) {}

void import_progress::tick(const import_tally& tally) {
  if (std::chrono::steady_clock::now() - last_shown_ >= every_)
    show(tally);
}

void import_progress::clear_line() {
  if (terminal_ && shown_)
    std::fputs("\r\033[K", stream_);
}

void import_progress::done(const import_tally& tally) {
  if (!terminal_)
    return;
  show(tally);
  std::fputc('\n', stream_);
  std::fflush(stream_);
}

void import_progress::show(const import_tally& tally) {
  auto now = std::chrono::steady_clock::now();
  last_shown_ = now;
  double seconds = std::chrono::duration<double>(now - started_).count();
  double rate = seconds > 0 ? static_cast<double>(tally.read) / seconds : 0;
  std::fprintf(stream_, "%sread %llu  stored %llu  duplicate %llu  refused %llu  %.0f lines/s%s",
               terminal_ ? "\r" : "import: ", static_cast<unsigned long long>(tally.read),
               static_cast<unsigned long long>(tally.stored),
               static_cast<unsigned long long>(tally.duplicate),
               static_cast<unsigned long long>(tally.refused_total()), rate,
               terminal_ ? "\033[K" : "\n");
  std::fflush(stream_);
  shown_ = true;
}

void say_summary(const import_tally& tally, const reporter& out) {
  out.say("read " + std::to_string(tally.read));
  out.say("stored " + std::to_string(tally.stored));
  out.say("replaced " + std::to_string(tally.replaced));
  out.say("duplicate " + std::to_string(tally.duplicate));
  out.say("refused " + std::to_string(tally.refused_total()));
  for (const auto& [reason, count] : tally.refused)
    out.say("refused " + reason + " " + std::to_string(count));
}

} // namespace comb::admin
