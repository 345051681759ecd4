// SPDX-License-Identifier: MIT
#pragma once

#include <caf/all.hpp>
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <unordered_map>

#include "actors/community/community_registry.hpp"
#include "storage/community_store.hpp"
#include "storage/pg_connection.hpp"

namespace comb::actors {

/// The answer to "which community serves this host?"; `answered` is false when the database
/// could not be asked (the client then gets 503, not 404).
struct host_lookup {
  bool answered = false;
  std::optional<storage::community_row> community;
};

using lookup_callback = std::function<void(host_lookup)>;

/// Host -> community answers shared by every socket thread, kept for `ttl` so that archiving or
/// creating a community takes effect within that time on every pod (at most `max_entries`). An
/// unknown host is kept a second only, apart (at most `max_unknown_entries`): any client can
/// send any Host header, but one sent again and again (a misconfigured client, a flood) costs
/// one database query a second, not one per request.
class community_directory {
public:
  static constexpr std::size_t max_entries = 10000;
  static constexpr std::size_t max_unknown_entries = 10000;
  static constexpr std::chrono::milliseconds unknown_ttl{1000};

  explicit community_directory(std::chrono::milliseconds ttl) : ttl_(ttl) {}

  [[nodiscard]] std::size_t size() const;

  /// A fresh answer, or nothing when the directory actor must be asked.
  [[nodiscard]] std::optional<host_lookup> cached(const std::string& host) const;

  /// The last answer naming a community for `host`, however old; nothing for a host not known
  /// (since the last forget_all, or its community's forget_community).
  [[nodiscard]] std::optional<host_lookup> last_known(const std::string& host) const;

  /// Which forgets the answers now cached follow: a lookup takes it before it asks the
  /// database and gives it to `remember`.
  [[nodiscard]] std::uint64_t generation() const;

  /// Keeps `answer` unless forget_all, or forget_community of the community it names, ran
  /// after `asked_in` was taken: an answer read before an archive, a deletion or an access
  /// switch that has since been applied would otherwise stay for the whole ttl.
  void remember(const std::string& host, const host_lookup& answer, std::uint64_t asked_in);

  /// Drops every cached answer. No pod change calls it since each names its community
  /// (forget_community); kept for tests that start from an empty cache.
  void forget_all();

  /// Drops the answers naming `community_id` (its access, archive, hosts or info changed):
  /// one community's admin, changing its name in a loop, must not make every other
  /// community's requests wait on the database.
  void forget_community(std::int64_t community_id);

private:
  struct entry {
    host_lookup answer;
    std::chrono::steady_clock::time_point at;
  };
  std::chrono::milliseconds ttl_;
  mutable std::mutex mutex_;
  std::unordered_map<std::string, entry> entries_;
  std::unordered_map<std::string, std::chrono::steady_clock::time_point> unknown_;
  std::uint64_t generation_ = 0;
  std::uint64_t all_forgotten_at_ = 0;
  /// The generation of each community's last forget_community (one entry per community served).
  std::unordered_map<std::int64_t, std::uint64_t> community_forgotten_at_;
};

/// Ends a community's connections; set once the server exists, called by the directory.
class community_closer {
public:
  void set(std::function<void(std::int64_t)> close) {
    std::lock_guard lock(mutex_);
    close_ = std::move(close);
  }

  /// False when nobody can be closed yet.
  bool operator()(std::int64_t community_id) {
    std::lock_guard lock(mutex_);
    if (!close_)
      return false;
    close_(community_id);
    return true;
  }

private:
  std::mutex mutex_;
  std::function<void(std::int64_t)> close_;
};

struct directory_args {
  std::string database_url;
  std::shared_ptr<community_directory> cache;
  /// Gets each community's actor and member cache ready before its first connection.
  std::shared_ptr<community_registry> registry;
  /// Ends every connection of a community that was archived or deleted (set by the server).
  std::shared_ptr<community_closer> close_community;
};

struct directory_state {
  directory_args args;
  std::unique_ptr<storage::pg_connection> connection;
  std::unique_ptr<storage::community_store> store;
  std::set<std::int64_t> closed; ///< communities whose connections were already ended
  static inline const char* name = "community-directory";
};

/// Looks hosts up in Postgres (run detached) and answers through the callback it is given.
caf::behavior directory_actor(caf::stateful_actor<directory_state>* self, directory_args args);

} // namespace comb::actors

CAF_ALLOW_UNSAFE_MESSAGE_TYPE(comb::actors::lookup_callback)
