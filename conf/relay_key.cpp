// SPDX-License-Identifier: MIT
#include "conf/relay_key.hpp"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <sys/stat.h>
#include <filesystem>
#include <algorithm>
#include <cctype>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "protocol/nip19.hpp"

namespace comb::conf {
namespace {

std::string trimmed(std::string text) {
  auto not_space = [](unsigned char c) { return !std::isspace(c); };
  text.erase(text.begin(), std::find_if(text.begin(), text.end(), not_space));
  text.erase(std::find_if(text.rbegin(), text.rend(), not_space).base(), text.end());
  return text;
}

bool write_new_key(const std::string& path, const protocol::key_pair& pair, std::string& error) {
  std::error_code ec;
  auto parent = std::filesystem::path(path).parent_path();
  if (!parent.empty())
    std::filesystem::create_directories(parent, ec);
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  if (fd < 0) {
    error = "cannot create relay key file " + path + ": " + std::strerror(errno);
    return false;
  }
  std::string text = protocol::to_hex(pair.secret()) + "\n";
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ok = ::fsync(fd) == 0 && ok;
  ::close(fd);
  if (!ok)
    error = "cannot write relay key file " + path;
  return ok;
}

} // namespace

std::optional<protocol::key_pair> load_relay_key(const std::string& path, bool create,
                                                 std::string& error) {
  std::ifstream in(path);
  if (!in) {
    if (!create) {
      error = "relay key file " + path + " does not exist";
      return std::nullopt;
    }
    auto pair = protocol::key_pair::generate();
    if (!write_new_key(path, pair, error))
      return std::nullopt;
    return pair;
  }
  // A secret others may read is no longer a secret: refuse rather than use it.
  struct ::stat info {};
  if (::stat(path.c_str(), &info) == 0 && (info.st_mode & (S_IRWXG | S_IRWXO)) != 0) {
    error = "relay key file " + path + " is readable by group or others; run: chmod 600 " + path;
    return std::nullopt;
  }
  std::stringstream text;
  text << in.rdbuf();
  auto secret = protocol::parse_secret_key(trimmed(text.str()));
  if (!secret) {
    error = "relay key file " + path + " must hold 64 lowercase hex characters or an nsec";
    return std::nullopt;
  }
  auto pair = protocol::key_pair::from_secret(*secret);
  if (!pair)
    error = "relay key file " + path + " holds an invalid secret key";
  return pair;
}

} // namespace comb::conf
