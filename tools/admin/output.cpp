// SPDX-License-Identifier: MIT
#include "admin/output.hpp"

#include <boost/json/serialize.hpp>
#include <iostream>

namespace comb::admin {

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
