// SPDX-License-Identifier: MIT
#pragma once

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

namespace comb::test {

/// Path of a file under tests/data.
inline std::filesystem::path data_path(const std::string& name) {
  return std::filesystem::path(COMB_TEST_DATA) / name;
}

/// Whole contents of a file, bytes as they are.
inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream out;
  out << in.rdbuf();
  return out.str();
}

} // namespace comb::test
