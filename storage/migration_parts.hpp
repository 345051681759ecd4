// SPDX-License-Identifier: MIT
#pragma once

#include <span>

#include "storage/migrations.hpp"

namespace comb::storage {

/// Migrations 1 to 21 (storage/migrations.cpp): the schema's foundation.
[[nodiscard]] std::span<const migration> first_migrations() noexcept;

/// Migrations 22 to 47 (storage/migrations_later.cpp).
[[nodiscard]] std::span<const migration> later_migrations() noexcept;

/// Migrations 48 on (storage/migrations_latest.cpp).
[[nodiscard]] std::span<const migration> latest_migrations() noexcept;

} // namespace comb::storage
