// SPDX-License-Identifier: MIT
#include "storage/store_plan.hpp"

#include <algorithm>

#include "protocol/hex.hpp"
#include "protocol/kind_rules.hpp"
#include "protocol/nip62.hpp"
#include "protocol/room.hpp"

namespace comb::storage {

static_assert(protocol::max_rooms_per_event == 16, "msg_borrows_too_many_rooms names the bound");
namespace {

using protocol::deletion_kind;

store_outcome outcome(store_outcome::status status, const char* message) {
  return store_outcome{status, message};
}

/// NIP-01: the newest version wins; in the same second, the lowest id.
bool stored_version_wins(const stored_event& old,
                         const protocol::bytes32& old_id,
                         const protocol::event& incoming) {
  return protocol::wins_as_version(old.created_at, old_id, incoming.created_at, incoming.id);
}

/// The addresses a deletion's `a` tags name that are the author's own: all it may delete.
std::vector<address> deleted_addresses_of(const event_write& w) {
  std::vector<address> out;
  for (const auto& t : w.ev->tags)
    if (t.size() >= 2 && t[0] == "a")
      if (auto a = parse_a_tag(w.community_id, t[1]); a && a->pubkey == w.ev->pubkey)
        out.push_back(std::move(*a));
  return out;
}

/// Whether an `a` or `e` value names another key than `author`, read as apps match it against
/// any event (`<kind>:<pubkey>:<d>` whatever the kind, so `9:<pubkey>:` names that key's
/// messages, in either tag), not only as an address comb would delete (parse_a_tag).
bool names_other_key(std::string_view value, const protocol::bytes32& author) {
  auto first = value.find(':');
  if (first == std::string_view::npos)
    return false;
  auto key = value.substr(first + 1, value.find(':', first + 1) - first - 1);
  auto named = protocol::array_from_hex<32>(key);
  return named && *named != author;
}

template <class T>
void sort_unique(std::vector<T>& values) {
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
}

/// The `h` values of an event the batch writes: its rooms as the stored `h` rows of a referent
/// give them (batch_sql.cpp reads only those).
void append_h_values(const protocol::event& ev, std::vector<std::string>& out) {
  for (const auto& t : ev.tags)
    if (t.size() >= 2 && t[0] == "h")
      out.push_back(t[1]);
}

/// The rooms of an event's referents (protocol::room_referents): as stored (the snapshot), or
/// the `h` of one written in the batch (`written(key)`: its write, or nullptr).
template <class WrittenReferent>
std::vector<std::string> rooms_of_referents(std::int64_t community_id,
                                            const std::vector<protocol::bytes32>& referents,
                                            const batch_snapshot& snapshot, WrittenReferent written) {
  std::vector<std::string> rooms;
  for (const auto& referent : referents) {
    const event_key key{community_id, referent};
    if (auto stored = snapshot.referent_rooms.find(key); stored != snapshot.referent_rooms.end())
      rooms.insert(rooms.end(), stored->second.begin(), stored->second.end());
    else if (const event_write* w = written(key))
      append_h_values(*w->ev, rooms);
  }
  sort_unique(rooms);
  return rooms;
}

/// A comment and a poll vote post in the rooms they borrow, so a restricted one must let their
/// author post there (a report only points at what it reports). An import restores what the
/// community held.
bool posting_checked(const event_write& w) {
  return w.recheck_access && (w.ev->kind == protocol::comment_kind || w.ev->kind == protocol::poll_vote_kind);
}

/// An edit without its `h` that may keep the rooms of the version it replaces
/// (protocol::keeps_rooms_of_replaced). A borrower (a pin) keeps them only where what it names
/// lends it none (batch_replay::consider): a new version pinning another message is in that
/// message's rooms, not also in the last one's, but one whose message was deleted since stays
/// where the pin was.
bool may_keep_rooms_of_replaced(const protocol::event& ev) {
  return protocol::keeps_rooms_of_replaced(ev.kind) && !protocol::room_of(ev);
}

/// Whether an edit keeping the rooms it replaces posts there again, so its author must still
/// be allowed to post there: not a pin, which anyone who reads may write, as a reaction.
bool edit_posts_again(const protocol::event& ev) {
  return may_keep_rooms_of_replaced(ev) && !protocol::borrows_rooms(ev.kind);
}

/// The rooms a write names whose posting rule the batch checks again: the pod's cache admitted
/// it, and may lag a removal from the room. A deletion is not posting (someone who left deletes
/// what they posted there); a reaction is, where only members read (protocol::room_write_allowed:
/// whoever reads the room reacts; poster_needed); an import restores what the community held.
std::span<const std::string> own_rooms_checked(const event_write& w) {
  if (!w.recheck_access || w.ev->kind == deletion_kind)
    return {};
  return w.rooms;
}

/// Whether `w` posting in restricted `room` needs its author among the room's posters: all but
/// a reaction where outsiders read the room's messages.
bool poster_needed(const event_write& w, const std::pair<std::int64_t, std::string>& room,
                   const batch_snapshot& snapshot) {
  return w.ev->kind != protocol::reaction_kind || snapshot.unread_by_outsiders.contains(room);
}

/// The referents whose rooms a write needs: its whole thread when its posting is checked (a room
/// of its own does not take it out of the thread), else only those it borrows rooms from.
std::vector<protocol::bytes32> referents_read(const event_write& w) {
  return posting_checked(w) ? protocol::thread_referents(*w.ev) : protocol::room_referents(*w.ev);
}

/// The addresses whose live versions' rooms a write needs (protocol::referent_addresses: a
/// comment's roots, what another borrower names by address), read as its referents by id are
/// (referents_read).
std::vector<address> referent_addresses_read(const event_write& w) {
  std::vector<address> roots;
  if (!posting_checked(w) && protocol::room_of(*w.ev))
    return roots;
  for (auto value : protocol::referent_addresses(*w.ev))
    if (auto root = parse_a_tag(w.community_id, value))
      roots.push_back(std::move(*root));
  return roots;
}

/// The rooms of the live version of `addr`, as stored (its `h`, or those it borrowed), and the
/// `h` of every write of the batch at that address but `except` (a superset of the version the
/// replay will find there).
std::vector<std::string> rooms_at_address(const address& addr, std::span<const event_write> writes,
                                          const batch_snapshot& snapshot, const event_write* except) {
  std::vector<std::string> rooms;
  if (auto current = snapshot.current.find(addr); current != snapshot.current.end())
    if (auto stored = snapshot.version_rooms.find(current->second); stored != snapshot.version_rooms.end())
      rooms = stored->second;
  for (const auto& w : writes)
    if (&w != except && address_of_event(w.community_id, *w.ev) == addr)
      append_h_values(*w.ev, rooms);
  return rooms;
}

/// Replays the batch in order against the snapshot, so later writes see earlier ones (a
/// deletion after its target, a newer version after an older one, the same event twice).
class batch_replay {
public:
  batch_replay(std::span<const event_write> writes, const batch_snapshot& snapshot)
    : writes_(writes), state_(snapshot) {}

  store_plan run() {
    for (std::size_t i = 0; i < writes_.size(); ++i)
      plan_.outcomes.push_back(consider(i));
    for (const auto& [key, index] : pending_)
      plan_.inserts.push_back(index);
    std::sort(plan_.inserts.begin(), plan_.inserts.end());
    return std::move(plan_);
  }

private:
  store_outcome consider(std::size_t index) {
    const event_write& w = writes_[index];
    const protocol::event& ev = *w.ev;
    const event_key key{w.community_id, ev.id};
    // An event never outlives its community (what the foreign key of migration 1 kept).
    if (state_.missing_communities.contains(w.community_id))
      return outcome(store_outcome::status::failed, msg_failed);
    // NIP-62: whatever the author's standing, and never kept as an event of the community.
    if (ev.kind == protocol::vanish_kind)
      return vanish(w);
    if (state_.events.contains(key))
      return outcome(store_outcome::status::duplicate, msg_already_have);
    if (const char* refused = refused_access(w))
      return outcome(store_outcome::status::refused, refused);
    if (state_.banned_ids.contains(key))
      return outcome(store_outcome::status::refused, msg_banned_event);
    if (state_.banned_authors.contains({w.community_id, ev.pubkey}))
      return outcome(store_outcome::status::refused, msg_banned_author);
    if (auto vanished = state_.vanished_until.find({w.community_id, ev.pubkey});
        vanished != state_.vanished_until.end() && ev.created_at <= vanished->second)
      return outcome(store_outcome::status::refused, msg_vanished);
    for (const auto& room : w.rooms)
      if (!state_.rooms.contains({w.community_id, room}))
        return outcome(store_outcome::status::refused, msg_room_deleted);
    if (posts_where_not_allowed(w, own_rooms_checked(w)))
      return outcome(store_outcome::status::refused, msg_room_restricted);
    std::optional<std::vector<std::string>> borrowed_rooms;
    bool too_many_rooms = false;
    if (auto rooms = rooms_of_thread(w)) {
      auto thread_rooms = std::move(*rooms);
      if (posting_checked(w) && posts_where_not_allowed(w, thread_rooms))
        return outcome(store_outcome::status::refused, msg_room_restricted);
      if (!protocol::room_of(ev)) { // one with rooms of its own is stored in those
        too_many_rooms = thread_rooms.size() > protocol::max_rooms_per_event;
        // A deletion is still carried out, only not kept: its author takes back what they
        // posted, however many rooms it was in.
        if (too_many_rooms && ev.kind != deletion_kind)
          return outcome(store_outcome::status::refused, msg_borrows_too_many_rooms);
        if (!too_many_rooms)
          borrowed_rooms = std::move(thread_rooms);
      }
    }
    if (ev.kind == deletion_kind && names_other_keys(w))
      return outcome(store_outcome::status::refused, msg_deletes_others);
    if (ev.kind == deletion_kind) {
      const bool not_its_own = names_ids_not_its_own(w);
      if (not_its_own || too_many_rooms) {
        apply_deletion(w);
        return outcome(store_outcome::status::applied,
                       not_its_own ? msg_deletion_not_kept : msg_deletion_in_too_many_rooms);
      }
    }
    // NIP-09: deleting a deletion has no effect, so a kind 5 is never refused as deleted.
    if (ev.kind != deletion_kind && state_.tombstones.contains(tombstone{key, ev.pubkey}))
      return outcome(store_outcome::status::refused, msg_deleted_id);
    auto addr = address_of_event(w.community_id, ev);
    bool replaced = false;
    if (addr) {
      if (auto until = state_.deleted_until.find(*addr);
          until != state_.deleted_until.end() && ev.created_at <= until->second)
        return outcome(store_outcome::status::refused, msg_deleted_address);
      if (auto current = state_.current.find(*addr); current != state_.current.end()) {
        auto old = state_.events.find(current->second);
        if (old != state_.events.end() && stored_version_wins(old->second, current->second.id, ev))
          return outcome(store_outcome::status::duplicate, msg_have_newer);
        if (may_keep_rooms_of_replaced(ev) && (!borrowed_rooms || borrowed_rooms->empty())) {
          borrowed_rooms = with_rooms_of_version(std::move(borrowed_rooms), current->second);
          // It posts there again: someone removed from a restricted room does not edit into it.
          if (w.recheck_access && edit_posts_again(ev) && borrowed_rooms
              && posts_where_not_allowed(w, *borrowed_rooms))
            return outcome(store_outcome::status::refused, msg_room_restricted);
        }
        remove(current->second);
        replaced = true;
      }
      state_.current[*addr] = key;
    }
    state_.events[key] = stored_event{ev.pubkey, ev.kind, ev.created_at, addr};
    pending_[key] = index;
    if (ev.kind == deletion_kind)
      apply_deletion(w);
    store_outcome stored = outcome(store_outcome::status::stored, "");
    stored.replaced = replaced;
    stored.borrowed_rooms = std::move(borrowed_rooms);
    return stored;
  }

  /// `rooms` with the rooms of the live version `key` of an address: as stored (its `h`, or
  /// those it borrowed), or as written earlier in this batch. Nothing when neither has any.
  [[nodiscard]] std::optional<std::vector<std::string>> with_rooms_of_version(
    std::optional<std::vector<std::string>> rooms, const event_key& key) const {
    std::vector<std::string> kept;
    if (auto stored = state_.version_rooms.find(key); stored != state_.version_rooms.end())
      kept = stored->second;
    if (auto pending = pending_.find(key); pending != pending_.end()) {
      append_h_values(*writes_[pending->second].ev, kept);
      if (const auto& borrowed = plan_.outcomes[pending->second].borrowed_rooms)
        kept.insert(kept.end(), borrowed->begin(), borrowed->end());
    }
    if (kept.empty())
      return rooms;
    if (rooms)
      kept.insert(kept.end(), rooms->begin(), rooms->end());
    sort_unique(kept);
    return kept;
  }

  /// The rooms of a write's referents, by id and by address (referents_read, referent_addresses_read);
  /// nothing when it names none.
  [[nodiscard]] std::optional<std::vector<std::string>> rooms_of_thread(const event_write& w) const {
    auto referents = referents_read(w);
    auto roots = referent_addresses_read(w);
    if (referents.empty() && roots.empty())
      return std::nullopt;
    std::optional<std::vector<std::string>> rooms = rooms_of_referents_here(w.community_id, referents);
    for (const auto& root : roots)
      if (auto current = state_.current.find(root); current != state_.current.end())
        rooms = with_rooms_of_version(std::move(rooms), current->second);
    return rooms;
  }

  /// The rooms of an event's referents: as stored, or as written earlier in this batch.
  [[nodiscard]] std::vector<std::string> rooms_of_referents_here(
    std::int64_t community_id, const std::vector<protocol::bytes32>& referents) const {
    return rooms_of_referents(community_id, referents, state_, [&](const event_key& key) {
      auto pending = pending_.find(key);
      return pending == pending_.end() ? nullptr : &writes_[pending->second];
    });
  }

  /// A write into one of `rooms` that is restricted by someone who may not post there.
  [[nodiscard]] bool posts_where_not_allowed(const event_write& w,
                                             std::span<const std::string> rooms) const {
    for (const auto& room : rooms)
      if (state_.restricted_rooms.contains({w.community_id, room})
          && poster_needed(w, {w.community_id, room}, state_)
          && !state_.room_posters.contains(room_poster{w.community_id, room, w.ev->pubkey}))
        return true;
    return false;
  }

  /// What the database's access says of a write the pod admitted with its cache. Join and
  /// room requests never come here (the membership and room stores take them).
  [[nodiscard]] const char* refused_access(const event_write& w) const {
    if (!w.recheck_access)
      return nullptr;
    if (state_.archived_communities.contains(w.community_id))
      return msg_archived;
    if (state_.closed_communities.contains(w.community_id)
        && !state_.member_authors.contains({w.community_id, w.admitted_as.value_or(w.ev->pubkey)}))
      return msg_not_member;
    return nullptr;
  }

  /// The author's events up to the request go (those stored, by write_plan; those written
  /// earlier in this batch, here), with the gift wraps addressed to them; a request older than
  /// one carried out before changes nothing.
  store_outcome vanish(const event_write& w) {
    const protocol::bytes32& author = w.ev->pubkey;
    auto known = state_.vanished_until.try_emplace({w.community_id, author}, w.ev->created_at).first;
    known->second = std::max(known->second, w.ev->created_at);
    const std::int64_t until = known->second;
    const std::string addressee = protocol::to_hex(author);
    std::vector<event_key> gone;
    for (const auto& [key, stored] : state_.events)
      if (key.community_id == w.community_id
          && ((stored.pubkey == author && stored.created_at <= until) || wraps_for(key, addressee)))
        gone.push_back(key);
    for (const auto& key : gone) {
      // A wrap written earlier in this batch is remembered as deleted, as carry_out_vanish
      // remembers a stored one: its author is a key used once, and no line stops it coming back.
      if (wraps_for(key, addressee))
        remember_deleted(tombstone{key, state_.events.at(key).pubkey});
      remove(key);
    }
    plan_.vanishes.push_back(
      vanish_request{w.community_id, author, until, w.ev->id, w.json, !gone.empty() || !w.recheck_access});
    return outcome(store_outcome::status::applied, "");
  }

  /// A gift wrap (NIP-59) written earlier in this batch and addressed (`p`, lowercase hex) to
  /// `addressee`.
  [[nodiscard]] bool wraps_for(const event_key& key, const std::string& addressee) const {
    auto pending = pending_.find(key);
    if (pending == pending_.end())
      return false;
    const protocol::event& ev = *writes_[pending->second].ev;
    if (ev.kind != protocol::gift_wrap_kind)
      return false;
    return std::any_of(ev.tags.begin(), ev.tags.end(),
                       [&](const protocol::tag& t) { return t.size() >= 2 && t[0] == "p" && t[1] == addressee; });
  }

  void remember_deleted(const tombstone& mark) {
    if (state_.tombstones.insert(mark).second)
      plan_.tombstones.push_back(mark);
  }

  /// By value: callers pass the key held by a node of `state_.current`, which this erases.
  void remove(const event_key key) {
    auto it = state_.events.find(key);
    if (it == state_.events.end())
      return;
    if (it->second.addr) {
      auto current = state_.current.find(*it->second.addr);
      if (current != state_.current.end() && current->second == key)
        state_.current.erase(current);
    }
    state_.events.erase(it);
    if (auto pending = pending_.find(key); pending != pending_.end()) {
      // Written earlier in this batch: never inserted, and so neither delivered live nor
      // bridged (a reader would keep what the store never held). Its sender still gets OK true.
      plan_.outcomes[pending->second].result = store_outcome::status::applied;
      pending_.erase(pending);
    } else {
      plan_.deletes.push_back(key);
    }
  }

  /// Whether a deletion names another author's key in an address (`a` or `e`, as apps read
  /// either). NIP-09 lets it delete nothing of theirs, but apps (welshman 0.8.1, which
  /// Flotilla 1.6 ships) hide whatever a stored kind 5 names, whoever signed it: served, it would
  /// hide another member's messages or the relay's room state for everyone. Read from the tags
  /// alone, so the refusal says nothing of what is stored.
  [[nodiscard]] static bool names_other_keys(const event_write& w) {
    const protocol::event& ev = *w.ev;
    return std::ranges::any_of(ev.tags, [&](const protocol::tag& t) {
      return t.size() >= 2 && (t[0] == "a" || t[0] == "e") && names_other_key(t[1], ev.pubkey);
    });
  }

  /// Whether a deletion names an id that is not its author's event here: another author's, or
  /// one this community does not hold. Such a deletion is carried out (the author's events it
  /// names here, and marks that refuse the rest from them later) but not kept: those apps hide
  /// what a served one names wherever they read it, and an unknown id may be another community's
  /// message, or one predictable before it exists (the relay's member delta after a join). Both
  /// get the same answer, so that a deletion cannot tell its sender whether an id is stored here
  /// (the relay's NIP-43 lists and deltas have predictable ids). A mark of the author's does not
  /// make an id theirs: a deletion not kept leaves one for every id it names. Imports restore
  /// what a community kept, deletions of gone events included.
  [[nodiscard]] bool names_ids_not_its_own(const event_write& w) const {
    const protocol::event& ev = *w.ev;
    return std::ranges::any_of(deletion_named_ids(ev), [&](const protocol::bytes32& id) {
      if (auto target = state_.events.find({w.community_id, id}); target != state_.events.end())
        return target->second.pubkey != ev.pubkey;
      return w.recheck_access;
    });
  }

  void apply_deletion(const event_write& w) {
    const protocol::event& ev = *w.ev;
    for (const auto& id : e_tag_ids(ev)) {
      tombstone mark{{w.community_id, id}, ev.pubkey};
      remember_deleted(mark);
      auto target = state_.events.find(mark.key);
      if (target != state_.events.end() && target->second.pubkey == ev.pubkey
          && target->second.kind != deletion_kind)
        remove(mark.key);
    }
    for (auto& addr : deleted_addresses_of(w)) {
      auto until = state_.deleted_until.try_emplace(addr, ev.created_at).first;
      until->second = std::max(until->second, ev.created_at);
      auto planned = plan_.address_deletions.try_emplace(addr, ev.created_at).first;
      planned->second = std::max(planned->second, ev.created_at);
      auto current = state_.current.find(addr);
      if (current == state_.current.end())
        continue;
      auto version = state_.events.find(current->second);
      if (version != state_.events.end() && version->second.created_at <= ev.created_at)
        remove(current->second);
    }
  }

  std::span<const event_write> writes_;
  batch_snapshot state_;
  std::map<event_key, std::size_t> pending_;
  store_plan plan_;
};

} // namespace

batch_keys keys_of(std::span<const event_write> writes) {
  batch_keys keys;
  for (const auto& w : writes) {
    keys.ids.push_back({w.community_id, w.ev->id});
    keys.authors.emplace_back(w.community_id, w.ev->pubkey);
    if (w.admitted_as)
      keys.authors.emplace_back(w.community_id, *w.admitted_as);
    if (auto addr = address_of_event(w.community_id, *w.ev)) {
      if (may_keep_rooms_of_replaced(*w.ev))
        keys.borrowing_addresses.push_back(*addr);
      keys.addresses.push_back(std::move(*addr));
    }
    bool deletes_ids = w.ev->kind == protocol::vanish_kind;
    if (w.ev->kind == deletion_kind) {
      for (const auto& id : deletion_named_ids(*w.ev)) {
        keys.ids.push_back({w.community_id, id});
        deletes_ids = true;
      }
      for (auto& addr : deleted_addresses_of(w))
        keys.addresses.push_back(std::move(addr));
    }
    keys.communities[w.community_id] |= deletes_ids;
    for (const auto& room : w.rooms)
      keys.rooms.emplace_back(w.community_id, room);
    for (const auto& referent : referents_read(w))
      keys.room_referents.push_back({w.community_id, referent});
    for (auto& root : referent_addresses_read(w)) {
      keys.borrowing_addresses.push_back(root);
      keys.read_addresses.push_back(std::move(root));
    }
  }
  sort_unique(keys.room_referents);
  // A referent written in the same batch: whether its rooms are restricted is read with the rest.
  for (const auto& w : writes)
    if (std::binary_search(keys.room_referents.begin(), keys.room_referents.end(),
                           event_key{w.community_id, w.ev->id})) {
      std::vector<std::string> rooms;
      append_h_values(*w.ev, rooms);
      for (auto& room : rooms)
        keys.rooms.emplace_back(w.community_id, std::move(room));
    }
  sort_unique(keys.rooms);
  sort_unique(keys.ids);
  sort_unique(keys.addresses);
  sort_unique(keys.read_addresses);
  std::erase_if(keys.read_addresses, [&](const address& root) {
    return std::binary_search(keys.addresses.begin(), keys.addresses.end(), root);
  });
  keys.addresses.insert(keys.addresses.end(), keys.read_addresses.begin(), keys.read_addresses.end());
  sort_unique(keys.addresses);
  sort_unique(keys.borrowing_addresses);
  sort_unique(keys.authors);
  return keys;
}

std::vector<lock_request> locks_for(const batch_keys& keys) {
  std::map<std::int64_t, bool> wanted;
  for (const auto& [community, deletes_ids] : keys.communities)
    wanted[community_lock_key(community)] |= deletes_ids;
  for (const auto& addr : keys.addresses)
    wanted[address_lock_key(addr)] |= !std::binary_search(keys.read_addresses.begin(), keys.read_addresses.end(), addr);
  std::vector<lock_request> locks;
  for (const auto& [key, exclusive] : wanted)
    locks.push_back({key, exclusive});
  return locks; // ascending by key, from the map
}

namespace {

/// The rooms an edit may keep (protocol::keeps_rooms_of_replaced): those of its address's
/// versions (rooms_at_address).
std::vector<std::string> rooms_of_versions(const event_write& edit, std::span<const event_write> writes,
                                           const batch_snapshot& snapshot) {
  auto addr = address_of_event(edit.community_id, *edit.ev);
  return addr ? rooms_at_address(*addr, writes, snapshot, &edit) : std::vector<std::string>{};
}

} // namespace

std::vector<room_poster> room_posters_to_read(std::span<const event_write> writes,
                                              const batch_snapshot& snapshot) {
  if (snapshot.restricted_rooms.empty())
    return {};
  // Any write of the batch may be a thread's root here: a superset of what the replay will find
  // written before each comment, which costs only a row more to read.
  std::map<event_key, const event_write*> by_id;
  for (const auto& w : writes)
    by_id.emplace(event_key{w.community_id, w.ev->id}, &w);
  std::vector<room_poster> posters;
  auto wanted = [&](const event_write& w, const std::string& room) {
    if (snapshot.restricted_rooms.contains({w.community_id, room})
        && poster_needed(w, {w.community_id, room}, snapshot))
      posters.push_back(room_poster{w.community_id, room, w.ev->pubkey});
  };
  for (const auto& w : writes) {
    for (const auto& room : own_rooms_checked(w))
      wanted(w, room);
    if (w.recheck_access && edit_posts_again(*w.ev))
      for (const auto& room : rooms_of_versions(w, writes, snapshot))
        wanted(w, room);
    if (!posting_checked(w))
      continue;
    auto roots = referents_read(w);
    auto rooms = rooms_of_referents(w.community_id, roots, snapshot, [&](const event_key& key) {
      auto found = by_id.find(key);
      return found == by_id.end() ? nullptr : found->second;
    });
    for (const auto& root : referent_addresses_read(w))
      for (const auto& room : rooms_at_address(root, writes, snapshot, nullptr))
        rooms.push_back(room);
    for (const auto& room : rooms)
      wanted(w, room);
  }
  sort_unique(posters);
  return posters;
}

store_plan plan_batch(std::span<const event_write> writes, const batch_snapshot& snapshot) {
  return batch_replay(writes, snapshot).run();
}

} // namespace comb::storage
