// SPDX-License-Identifier: MIT
#pragma once

#include <filesystem>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "tools/watch/ledger.hpp"

namespace comb::watch {

/// Replaces `file` with `contents`; false on any failure. Injected so tests can make it fail.
using file_writer =
  std::function<bool(const std::filesystem::path& file, const std::string& contents)>;

/// Write a temporary file beside `file`, fsync it, rename it over `file`, fsync the folder: a
/// crash leaves the old ledger or the new one, never a mix, and a reboot keeps the rename.
[[nodiscard]] bool write_file_atomically(const std::filesystem::path& file,
                                         const std::string& contents);

/// `<state dir>/<community>.<viewer hex>.ledger`, the community's characters other than
/// letters, digits, '.' and '-' replaced by '_' so a host with a port is a valid file name.
[[nodiscard]] std::filesystem::path ledger_path(const std::filesystem::path& state_dir,
                                                std::string_view community,
                                                std::string_view viewer_hex);

/// $XDG_STATE_HOME/comb-watch, else ~/.local/state/comb-watch, else ./comb-watch-state.
[[nodiscard]] std::filesystem::path default_state_dir();

/// The ledger stored in `file`: an empty unseeded one when there is no file yet, nothing when
/// the file cannot be read or is not a ledger (the caller must not silently start over, which
/// would re-seed and swallow joins).
[[nodiscard]] std::optional<ledger> load_ledger(const std::filesystem::path& file);

/// Persists ledgers of one community and viewer through a writer.
class ledger_file {
public:
  explicit ledger_file(std::filesystem::path file, file_writer writer = write_file_atomically)
    : file_(std::move(file)), writer_(std::move(writer)) {}

  [[nodiscard]] bool save(const ledger& value) const { return writer_(file_, value.serialize()); }

  [[nodiscard]] const std::filesystem::path& path() const noexcept { return file_; }

private:
  std::filesystem::path file_;
  file_writer writer_;
};

} // namespace comb::watch
