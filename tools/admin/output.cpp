// SPDX-License-Identifier: MIT
#include "admin/output.hpp"

#include <boost/json/serialize.hpp>
#include <iostream>

namespace comb::admin {

std::string terminal_safe(std::string_view text) {
  auto escaped = [](unsigned code) {
    static constexpr char digits[] = "0123456789abcdef";
    return std::string("\\u00") + digits[code >> 4] + digits[code & 0xf];
  };
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size(); ++i) {
    auto byte = static_cast<unsigned char>(text[i]);
    auto next = i + 1 < text.size() ? static_cast<unsigned char>(text[i + 1]) : 0u;
    if (byte < 0x20 || byte == 0x7f) {
      out += escaped(byte);
    } else if (byte == 0xc2 && next >= 0x80 && next <= 0x9f) { // U+0080 to U+009F
      out += escaped(next);
      ++i;
    } else {
      out += static_cast<char>(byte);
    }
  }
  return out;
}

void reporter::say(std::string_view line) const {
  if (!json_)
    std::cout << line << '\n';
}

void reporter::note(std::string_view message) const {
  std::cerr << "comb-admin: " << message << '\n';
}

int reporter::fail(exit_code code, std::string_view message) {
  note(message);
  fields_["error"] = message;
  failed_code_ = as_int(code);
  return failed_code_;
}

int reporter::finish(int code) {
  if (json_) {
    fields_["ok"] = code == 0;
    fields_["exit_code"] = code;
    std::cout << boost::json::serialize(fields_) << '\n';
  }
  std::cout.flush();
  return code;
}

} // namespace comb::admin
