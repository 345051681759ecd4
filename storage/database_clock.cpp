// SPDX-License-Identifier: MIT
#include "storage/database_clock.hpp"

#include <chrono>

#include "storage/pg_connection.hpp"

namespace comb::storage {

namespace {

std::int64_t local_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
           std::chrono::system_clock::now().time_since_epoch())
    .count();
}

} // namespace

std::optional<std::int64_t> database_clock_offset_ms(pg_connection& connection) {
  const auto before = local_ms();
  auto reply = connection.exec("SELECT (extract(epoch FROM clock_timestamp()) * 1000)::bigint");
  const auto after = local_ms();
  if (!reply.ok() || reply.rows() != 1 || after - before > 1000)
    return std::nullopt;
  return reply.integer(0, 0) - (before + after) / 2;
}

} // namespace comb::storage
