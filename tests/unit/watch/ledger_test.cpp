// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "tests/unit/watch/watch_fixtures.hpp"
#include "tools/watch/ledger_file.hpp"

using namespace comb::watch;
using namespace comb::watch::testing;

namespace {

/// A fresh folder under the system temp dir, removed at the end of the test.
struct temporary_folder {
  std::filesystem::path path;
  temporary_folder() {
    auto pattern = (std::filesystem::temp_directory_path() / "comb-watch-test-XXXXXX").string();
    path = ::mkdtemp(pattern.data());
  }
  ~temporary_folder() { std::filesystem::remove_all(path); }
};

std::string contents_of(const std::filesystem::path& file) {
  std::ifstream in(file);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

} // namespace

TEST_CASE("a ledger survives serialization, seeded bit included", "[watch][ledger]") {
  auto seeded_empty = ledger{}.after({}, 10);
  CHECK(seeded_empty.seeded());
  CHECK(seeded_empty.keys().empty());
  CHECK(ledger::parse(seeded_empty.serialize()) == seeded_empty);
  CHECK_FALSE(ledger::parse(ledger{}.serialize())->seeded());

  auto full = ledger{}.after(keys({3, 2, 5}), 10);
  auto back = ledger::parse(full.serialize());
  REQUIRE(back);
  CHECK(*back == full);
  CHECK(back->keys() == keys({3, 2, 5}));
  CHECK(back->contains(key(2)));
}

TEST_CASE("a damaged ledger is refused rather than read as empty", "[watch][ledger]") {
  CHECK_FALSE(ledger::parse(""));
  CHECK_FALSE(ledger::parse("comb-watch ledger 1\n"));
  CHECK_FALSE(ledger::parse("comb-watch ledger 2\nseeded yes\n"));
  CHECK_FALSE(ledger::parse("comb-watch ledger 1\nseeded maybe\n"));
  CHECK_FALSE(ledger::parse("comb-watch ledger 1\nseeded yes\nnot-a-key\n"));
  CHECK(ledger::parse("comb-watch ledger 1\nseeded yes\n" + key(7) + "\n"));
}

TEST_CASE("unseen keys are the roster's new ones, each once, in order", "[watch][ledger]") {
  auto known = ledger{}.after(keys({1, 2}), 10);
  CHECK(known.unseen(keys({2, 4, 3, 4, 1})) == keys({4, 3}));
  CHECK(known.unseen(keys({1, 2})).empty());
}

TEST_CASE("departed keys are capped, oldest first; keys on the list never", "[watch][ledger]") {
  auto before = ledger{}.after(keys({1, 2, 3, 4, 5, 6}), 100);
  // 2, 3 and 5 left; with room for one departed key, the longest-known two go.
  auto next = before.after(keys({1, 4, 6, 7}), 1);
  CHECK(next.keys() == keys({1, 4, 5, 6, 7}));
  CHECK_FALSE(next.contains(key(2)));
  CHECK(next.contains(key(5)));

  // A cap of zero still keeps every key on a list larger than any cap.
  auto big = ledger{}.after(keys({10, 11, 12, 13}), 0);
  CHECK(big.after(keys({10, 11, 12, 13}), 0).keys() == keys({10, 11, 12, 13}));
  CHECK(big.unseen(keys({10, 11, 12, 13})).empty());
}

TEST_CASE("ledger files are written whole, loaded back, and named per community and viewer",
          "[watch][ledger]") {
  temporary_folder folder;
  auto file = ledger_path(folder.path, "hive.example.com:7777", key(1));
  CHECK(file.filename() == "hive.example.com_7777." + key(1) + ".ledger");
  CHECK(load_ledger(file) == ledger{});  // no file yet: unseeded

  ledger_file store(file);
  auto written = ledger{}.after(keys({1, 2}), 10);
  REQUIRE(store.save(written));
  CHECK(load_ledger(file) == written);
  CHECK_FALSE(std::filesystem::exists(file.string() + ".tmp"));

  std::ofstream(file) << "garbage";
  CHECK_FALSE(load_ledger(file));
}

TEST_CASE("a failed write leaves the ledger file as it was", "[watch][ledger]") {
  temporary_folder folder;
  auto file = ledger_path(folder.path, "hive", key(1));
  REQUIRE(ledger_file(file).save(ledger{}.after(keys({1}), 10)));
  auto before = contents_of(file);
  ledger_file broken(file, [](const std::filesystem::path&, const std::string&) { return false; });
  CHECK_FALSE(broken.save(ledger{}.after(keys({1, 2}), 10)));
  CHECK(contents_of(file) == before);

  // A folder that does not exist makes the real writer fail too, without leaving anything.
  CHECK_FALSE(write_file_atomically(folder.path / "missing" / "x.ledger", "x"));
}
