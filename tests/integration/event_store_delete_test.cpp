// SPDX-License-Identifier: MIT
#include <catch2/catch.hpp>

#include "storage/store_plan.hpp"
#include "support/pg_test_database.hpp"
#include "support/test_events.hpp"

using namespace comb;
using comb::test::author;
using comb::test::event_ptr;
using comb::test::hex;
using comb::test::json_of;
using comb::test::store_one;
using status = comb::storage::store_outcome::status;

namespace {

constexpr std::int64_t now = 1'700'000'000;

struct delete_fixture : test::store_fixture {
  author alice{6};
  author mallory{7};

  void expect(const event_ptr& ev, status expected, const std::string& message = "") {
    test::check_outcome(store_one(events, community, ev), expected, message);
  }

  bool present(const event_ptr& ev) {
    protocol::filter f;
    f.ids = std::vector{ev->id};
    auto result = events.query(community, {f}, now, 10);
    REQUIRE(result.ok);
    return !result.events.empty();
  }
};

const std::string deleted_id = "blocked: this event was deleted by its author";
const std::string deleted_address = "blocked: this address was deleted";
const std::string not_kept = storage::msg_deletion_not_kept;

} // namespace

TEST_CASE_METHOD(delete_fixture, "a deletion by e removes the author's event and is stored",
                 "[integration][event_store][nip09]") {
  auto note = alice.sign(1, now - 10, {{"t", "x"}});
  auto keep = alice.sign(1, now - 9);
  expect(note, status::stored);
  expect(keep, status::stored);
  auto deletion = alice.sign(5, now, {{"e", hex(note->id)}});
  expect(deletion, status::stored);
  CHECK_FALSE(present(note));
  CHECK(present(keep));
  CHECK(present(deletion));
  CHECK(test::scalar(connection, "SELECT count(*) FROM event_tags WHERE value = 'x'") == "0");
  // Re-posting the deleted event is refused, whoever relays it.
  expect(note, status::refused, deleted_id);
  CHECK_FALSE(present(note));
}

TEST_CASE_METHOD(delete_fixture, "another author's deletion deletes nothing",
                 "[integration][event_store][nip09]") {
  auto note = alice.sign(1, now - 10);
  auto profile = alice.sign(30023, now - 10, {{"d", "post"}});
  expect(note, status::stored);
  expect(profile, status::stored);
  // Naming her key in an address is refused: served, apps that hide whatever a kind 5 names would
  // hide alice's events.
  const std::string others = "invalid: a deletion may name only its author's events";
  expect(mallory.sign(5, now, {{"a", "30023:" + alice.pubkey_hex() + ":post"}}), status::refused, others);
  // Apps match an `a` against any event of that key and kind: `9:<key>:` names her messages,
  // and they read an `e` value the same way.
  for (const std::string kind : {"9", "1", "11", "7", "5", "0"}) {
    expect(mallory.sign(5, now, {{"a", kind + ":" + alice.pubkey_hex() + ":"}}), status::refused, others);
    expect(mallory.sign(5, now, {{"e", kind + ":" + alice.pubkey_hex() + ":"}}), status::refused, others);
  }
  expect(mallory.sign(5, now, {{"a", "9:" + alice.pubkey_hex()}}), status::refused, others);
  expect(mallory.sign(5, now, {{"a", "30023:" + mallory.pubkey_hex() + ":post"},
                               {"a", "1:" + alice.pubkey_hex() + ":x:y"}}), status::refused, others);
  // Naming her stored event by id, in an `e` or an `a` (apps read an id in either), is carried
  // out but not kept, as naming an id not stored here is: the answer must not tell whether an id
  // is stored here.
  auto forged = mallory.sign(5, now, {{"e", hex(note->id)}});
  expect(forged, status::applied, not_kept);
  auto as_address = mallory.sign(5, now + 1, {{"a", hex(note->id)}});
  expect(as_address, status::applied, not_kept);
  CHECK_FALSE(present(forged));
  CHECK_FALSE(present(as_address));
  CHECK(present(note));
  CHECK(present(profile));
  // One naming an event not stored here is carried out but not kept (it may name another
  // community's message, or one whose id is predictable before it exists), and blocks neither a
  // later copy of the event nor a newer version of the address. Sent again, it is answered the
  // same: its first left marks, which must not tell it apart from one naming her stored note.
  auto later = alice.sign(1, now - 5);
  auto in_advance = mallory.sign(5, now, {{"e", hex(later->id)}});
  expect(in_advance, status::applied, not_kept);
  expect(mallory.sign(5, now + 1, {{"e", hex(later->id)}}), status::applied, not_kept);
  expect(mallory.sign(5, now + 2, {{"e", hex(note->id)}}), status::applied, not_kept);
  CHECK_FALSE(present(in_advance));
  expect(later, status::stored);
  expect(note, status::duplicate, "duplicate: already have this event");
  expect(alice.sign(30023, now + 1, {{"d", "post"}}), status::stored);
  SECTION("also when the event it names comes earlier in the same batch") {
    auto first = alice.sign(1, now - 3);
    auto deletion = mallory.sign(5, now + 1, {{"e", hex(first->id)}});
    std::vector writes{test::write_of(community, first), test::write_of(community, deletion)};
    auto outcomes = events.store_batch(writes);
    CHECK(outcomes.at(0).result == status::stored);
    CHECK(outcomes.at(1).result == status::applied);
    CHECK(outcomes.at(1).message == not_kept);
    CHECK(present(first));
    CHECK_FALSE(present(deletion));
  }
  SECTION("her own deletion naming her event by id in an `a` is kept") {
    auto own = alice.sign(5, now + 2, {{"a", hex(note->id)}});
    expect(own, status::stored);
    CHECK(present(own));
  }
}

TEST_CASE_METHOD(delete_fixture, "a deletion that arrives first blocks the event it names",
                 "[integration][event_store][nip09]") {
  auto note = alice.sign(1, now - 10);
  auto own = alice.sign(1, now - 20);
  expect(own, status::stored);
  // Not kept (it names what this community does not hold), but carried out: her stored event
  // goes, and the one not stored yet is refused when it comes.
  auto deletion = alice.sign(5, now, {{"e", hex(own->id)}, {"e", hex(note->id)}});
  expect(deletion, status::applied, not_kept);
  CHECK_FALSE(present(deletion));
  CHECK_FALSE(present(own));
  expect(note, status::refused, deleted_id);
  // Naming what she deleted before is not kept either: the mark her first deletion left for an
  // id nobody held must not let a second one be served (it would tell her the id is not stored
  // here, and hide it in apps if it comes elsewhere).
  auto again = alice.sign(5, now + 1, {{"e", hex(note->id)}});
  expect(again, status::applied, not_kept);
  CHECK_FALSE(present(again));
  SECTION("also within one batch") {
    auto later = alice.sign(1, now - 5);
    std::vector writes{test::write_of(community, alice.sign(5, now + 1, {{"e", hex(later->id)}})),
                       test::write_of(community, later)};
    auto outcomes = events.store_batch(writes);
    CHECK(outcomes.at(0).result == status::applied);
    CHECK(outcomes.at(1).result == status::refused);
    CHECK(outcomes.at(1).message == deleted_id);
  }
  SECTION("an event its deletion follows in one batch is accepted, never inserted nor delivered") {
    auto posted = alice.sign(1, now - 4);
    auto unknown = alice.sign(1, now - 3);
    std::vector writes{test::write_of(community, posted),
                       test::write_of(community, alice.sign(5, now + 1, {{"e", hex(posted->id)},
                                                                          {"e", hex(unknown->id)}}))};
    auto outcomes = events.store_batch(writes);
    test::check_outcome(outcomes.at(0), status::applied, "");
    test::check_outcome(outcomes.at(1), status::applied, not_kept);
    CHECK_FALSE(present(posted));
    expect(posted, status::refused, deleted_id);
  }
  SECTION("an import keeps it: a community restored from its export holds deletions of what is gone") {
    auto gone = alice.sign(1, now - 7);
    auto imported = test::write_of(community, alice.sign(5, now, {{"e", hex(gone->id)}}));
    imported.recheck_access = false;
    auto outcomes = events.store_batch(std::vector{imported});
    CHECK(outcomes.at(0).result == status::stored);
    expect(gone, status::refused, deleted_id);
  }
}

TEST_CASE_METHOD(delete_fixture, "deleting a deletion has no effect",
                 "[integration][event_store][nip09]") {
  auto note = alice.sign(1, now - 10);
  auto deletion = alice.sign(5, now - 5, {{"e", hex(note->id)}});
  expect(note, status::stored);
  expect(deletion, status::stored);
  expect(alice.sign(5, now, {{"e", hex(deletion->id)}}), status::stored);
  CHECK(present(deletion));
  CHECK_FALSE(present(note));
  // Not even in advance: a deletion named by an earlier-arriving deletion is still accepted.
  auto second_note = alice.sign(1, now - 8);
  auto late_deletion = alice.sign(5, now - 4, {{"e", hex(second_note->id)}});
  expect(alice.sign(5, now + 1, {{"e", hex(late_deletion->id)}}), status::applied, not_kept);
  expect(second_note, status::stored);
  expect(late_deletion, status::stored);
  CHECK(present(late_deletion));
  CHECK_FALSE(present(second_note));
}

TEST_CASE_METHOD(delete_fixture, "a deletion by a removes versions up to its time",
                 "[integration][event_store][nip09]") {
  auto article = alice.sign(30023, now - 10, {{"d", "post"}});
  auto other = alice.sign(30023, now - 10, {{"d", "other"}});
  expect(article, status::stored);
  expect(other, status::stored);
  expect(alice.sign(5, now, {{"a", "30023:" + alice.pubkey_hex() + ":post"}}), status::stored);
  CHECK_FALSE(present(article));
  CHECK(present(other));
  // Versions at or before the deletion are refused; a newer one is welcome.
  expect(alice.sign(30023, now - 20, {{"d", "post"}}), status::refused, deleted_address);
  expect(alice.sign(30023, now, {{"d", "post"}}), status::refused, deleted_address);
  auto newer = alice.sign(30023, now + 1, {{"d", "post"}});
  expect(newer, status::stored);
  CHECK(present(newer));
}

TEST_CASE_METHOD(delete_fixture, "a deletion by a covers replaceable kinds with an empty d",
                 "[integration][event_store][nip09]") {
  auto list = alice.sign(10002, now - 10);
  expect(list, status::stored);
  expect(alice.sign(5, now, {{"a", "10002:" + alice.pubkey_hex() + ":"}}), status::stored);
  CHECK_FALSE(present(list));
  expect(alice.sign(10002, now - 1), status::refused, deleted_address);
  expect(alice.sign(10002, now + 1), status::stored);
}

TEST_CASE_METHOD(delete_fixture, "a newer version stored after a deletion is not deleted by it",
                 "[integration][event_store][nip09]") {
  auto newer = alice.sign(30023, now + 100, {{"d", "post"}});
  expect(newer, status::stored);
  expect(alice.sign(5, now, {{"a", "30023:" + alice.pubkey_hex() + ":post"}}), status::stored);
  CHECK(present(newer));
}
