// SPDX-License-Identifier: MIT
#include "admin/jsonl_reader.hpp"

#include <algorithm>

namespace comb::admin {
namespace {

constexpr std::size_t chunk_bytes = 64 * 1024;

bool blank(const std::string& text) {
  return std::all_of(text.begin(), text.end(),
                     [](char c) { return c == ' ' || c == '\t' || c == '\r'; });
}

} // namespace

jsonl_reader::jsonl_reader(std::FILE* file, std::size_t max_bytes)
  : file_(file), max_bytes_(max_bytes), buffer_(chunk_bytes) {}

bool jsonl_reader::fill() {
  if (eof_)
    return false;
  start_ = 0;
  end_ = std::fread(buffer_.data(), 1, buffer_.size(), file_);
  if (end_ == 0) {
    eof_ = true;
    failed_ = std::ferror(file_) != 0;
    return false;
  }
  return true;
}

bool jsonl_reader::next(jsonl_line& line) {
  for (;;) {
    line.text.clear();
    line.complete = false;
    bool any = false;
    while (!line.complete) {
      if (start_ == end_ && !fill())
        break;
      any = true;
      auto begin = buffer_.begin() + static_cast<std::ptrdiff_t>(start_);
      auto stop = buffer_.begin() + static_cast<std::ptrdiff_t>(end_);
      auto newline = std::find(begin, stop, '\n');
      std::size_t room = max_bytes_ + 1 > line.text.size() ? max_bytes_ + 1 - line.text.size() : 0;
      line.text.append(begin, begin + static_cast<std::ptrdiff_t>(
                                        std::min<std::size_t>(room, static_cast<std::size_t>(newline - begin))));
      line.complete = newline != stop;
      start_ = static_cast<std::size_t>(newline - buffer_.begin()) + (line.complete ? 1 : 0);
    }
    if (!any)
      return false;
    ++number_;
    if (!line.text.empty() && line.text.back() == '\r')
      line.text.pop_back();
    if (blank(line.text))
      continue;
    line.number = number_;
    return true;
  }
}

} // namespace comb::admin
