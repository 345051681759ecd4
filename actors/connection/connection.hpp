// SPDX-License-Identifier: MIT
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "actors/community/ban_list.hpp"
#include "actors/frame_sink.hpp"
#include "actors/lazy_deque.hpp"
#include "actors/community/member_cache.hpp"
#include "actors/connection/filter_share.hpp"
#include "actors/connection/ip_table.hpp"
#include "actors/connection/rate_limiter.hpp"
#include "protocol/event.hpp"
#include "protocol/event_check.hpp"
#include "protocol/filter.hpp"
#include "protocol/kind_rules.hpp"
#include "protocol/limits.hpp"
#include "protocol/rejection.hpp"
#include "protocol/room_rules.hpp"
#include "protocol/result.hpp"

namespace comb::actors {

/// What one connection is bound to and bounded by; fixed for its lifetime.
/// NIP-62 requests a pod takes per second over all its connections, and at once: a person asks
/// once per space they are in (Flotilla sends to each), a flood of fresh keys waits.
inline constexpr double pod_vanish_rate = 5;
inline constexpr double pod_vanish_burst = 100;

struct connection_policy {
  std::int64_t community_id = 0;
  std::string host;            ///< normalized; NIP-42's relay tag must name it
  /// AUTH and membership required before REQ, COUNT and EVENT, as when the connection opened;
  /// once the member cache knows the database's access, that decides (closed_community()).
  bool closed_community = false;
  std::string relay_url;         ///< what clients type for this community, e.g. wss://host
  member_cache_ptr members;      ///< the community's members; null: membership is not checked
  ban_list_ptr bans;             ///< the community's NIP-86 bans; null: bans are not checked
  /// The pod's budget of NIP-62 requests (pod_vanish_rate): each probes every community of the
  /// deployment, whoever signs it, so a flood of them with fresh keys would hold the writers.
  /// Null: unbounded.
  std::shared_ptr<shared_rate_limiter> vanish_requests;
  protocol::protocol_limits limits;
  protocol::created_at_window created_at;
  double event_rate = 50;
  double event_burst = 200;
  std::size_t max_events_in_flight = 256;
  /// Their weight (storage_waiting_weight) at most: one connection's share of the pod's bound on
  /// events waiting for the writers (max_storage_waiting_bytes, 256 MiB), which 256 events of
  /// thousands of tags each would otherwise half fill.
  std::int64_t max_storage_bytes_in_flight = 16 * 1024 * 1024;
  /// The same over the sockets of `ip`: an eighth of the pod's bound.
  std::int64_t max_storage_bytes_per_address = 32 * 1024 * 1024;
  /// Live events held for a subscription while its history is still being read, and their
  /// bytes: events of up to a frame each, published while a long history is read, would
  /// otherwise pin gigabytes (the bytes bound the held events' share of memory).
  std::size_t max_buffered_live = 10000;
  std::size_t max_buffered_live_bytes = 16 * 1024 * 1024;
  /// The same over every subscription of the connection: one holding hundreds of REQs that
  /// wait for their history would otherwise hold hundreds of times the bound.
  std::size_t max_buffered_live_per_connection = 20000;
  std::size_t max_buffered_live_bytes_per_connection = 32 * 1024 * 1024;
  /// Every frame takes tokens from this bucket (see frame_cost); AUTH takes `auth_cost` more.
  double frame_rate = 100;
  double frame_burst = 400;
  double auth_cost = 10;
  /// The client address's shared buckets; null: no per-address bound (tests).
  std::shared_ptr<ip_budget> ip;
  /// What the open subscriptions of one connection may hold in the fan-out index.
  std::size_t max_filters = 500;        ///< filters, summed over subscriptions
  std::size_t max_filter_values = 10000; ///< ids, authors, kinds and tag values, summed
  /// Their bytes, summed: the index keeps each tag value twice (the filter and its key), and
  /// 10,000 values of 512 bytes held about 14 MB per connection.
  std::size_t max_filter_value_bytes = 1024 * 1024;
  std::size_t max_broad_filters = 10;   ///< filters with no id, author, kind or tag condition
  std::size_t max_broad_filters_per_address = 100; ///< the same over the sockets of `ip`
  std::size_t max_filters_per_address = 5000;        ///< filters over the sockets of `ip`
  std::size_t max_filter_values_per_address = 200000; ///< their values over the sockets of `ip`
  /// What every connection of the pod holds in the fan-out; null: no pod bound (tests).
  std::shared_ptr<pod_filter_holdings> pod_filters;
  /// Events and addresses one deletion request (kind 5) may name: each becomes a stored mark.
  std::size_t max_deletion_targets = 100;
  /// NIP-29 late publication: events posted to a room older than this are refused.
  std::int64_t room_late_seconds = 900;
  /// REQ and COUNT queries of one connection running at once; more wait their turn.
  std::size_t max_queries_in_flight = 8;
};

/// The bytes of live events one connection may hold for its EOSEs, at most `most`: at an EOSE
/// they go to the socket at once, behind up to `max_history` of history still queued, and a
/// queue past `max_outbound` cuts the reader as a slow one, though it kept up. 64 KiB at least.
[[nodiscard]] std::size_t held_live_bytes_within(std::size_t max_outbound, std::size_t max_history,
                                                 std::size_t most) noexcept;

/// The `e` and `a` tags of an event: what a deletion request names (protocol/kind_rules).
using protocol::deletion_targets;

/// What a frame is, for its cost.
enum class frame_type { event, req, count, close, auth, other };

/// Tokens a frame takes from the connection's bucket: one, plus one per 16 KiB (parsing is paid
/// by the byte), plus `auth_cost` for AUTH (a SHA-256 and a Schnorr verification).
[[nodiscard]] double frame_cost(frame_type type, std::size_t bytes, const connection_policy& policy);

/// Tag rows an event would add to the index, per frame token: its tags cost the writer far
/// more than its bytes say (5,000 short tags fit in 65 KB), so an event pays for them too.
inline constexpr double indexed_tags_per_token = 50;

/// The frame tokens an event's indexed tags (single-letter, with a value) take beyond its bytes.
[[nodiscard]] double tag_rows_cost(const protocol::event& ev) noexcept;

/// REQs a connection holds without a subscription yet (waiting for AUTH, or for their invite):
/// counted as open, so a connection never holds its bounds open and as many again waiting.
struct waiting_requests {
  std::size_t count = 0;
  filter_holding cost;
};

[[nodiscard]] filter_holding cost_of(const std::vector<protocol::filter>& filters);

/// Why filters costing `total` in all are more than `policy` lets one connection hold
/// (`where` says which: "open on this connection", "in one COUNT"); nothing when they fit.
[[nodiscard]] std::optional<protocol::rejection> over_budget(const filter_holding& total,
                                                             const connection_policy& policy,
                                                             std::string_view where);

/// Why a connection holding `open` subscriptions (or REQs held as such) may not hold another;
/// nothing when it may.
[[nodiscard]] std::optional<protocol::rejection> over_subscription_cap(std::size_t open,
                                                                       const connection_policy& policy);

/// Drops the tag values storage never indexes (`storage::is_indexable_tag_value`: too long, or
/// holding a NUL) from tag conditions: they match no stored event, so live delivery must not
/// match them either, and the fan-out must not hold them (a REQ of 400 KB values). A condition
/// left with no value matches nothing, as it would in storage.
void drop_unindexed_tag_values(std::vector<protocol::filter>& filters);

/// A live event as the fan-out hands it out: the event and its JSON rendered once.
struct live_event {
  std::shared_ptr<const protocol::event> ev;
  std::shared_ptr<const std::string> json;
  /// The rooms a comment or report borrows (protocol::room_referents; store_outcome::borrowed_rooms) from the writer
  /// that stored it, here or on the pod that bridged it; null when not known.
  std::shared_ptr<const std::vector<std::string>> borrowed_rooms = nullptr;
};

/// The ids of the events a subscription was sent as history, kept as the hex they have in the
/// stored JSON: copied, not decoded and hashed, since every row of every reply passes here (a
/// hash set cost about 1,000 instructions a row, a fifth of a `#e` reply's). Once the reply
/// ends (`seal`) their first 8 characters are sorted, as integers with the id's place (sorting
/// the 64-character ids themselves cost 560 instructions a row), for the look-ups of the live
/// events that follow it.
class history_ids {
public:
  /// Remembers the event whose stored JSON is `json`; false when its id cannot be read there.
  bool add(std::string_view json);
  void seal();
  /// Whether `id` was added; only after `seal`.
  [[nodiscard]] bool contains(const protocol::bytes32& id) const;
  [[nodiscard]] bool empty() const noexcept { return ids_.empty(); }
  [[nodiscard]] std::size_t size() const noexcept { return ids_.size(); }
  /// Forgets every id and gives their memory back.
  void forget() noexcept {
    decltype(ids_)().swap(ids_);
    decltype(sorted_)().swap(sorted_);
  }

private:
  std::vector<std::array<char, 64>> ids_;
  std::vector<std::pair<std::uint64_t, std::uint32_t>> sorted_; ///< (first 8 characters, place)
};

/// A history reply's part as the socket takes it (frame_sink::send_reply): the stored events,
/// each its subscription's shared head around its shared JSON, then the frames that close it.
struct history_frames {
  std::vector<shared_event_frame> events;
  std::vector<std::string> closing;
};

/// The decisions of one client connection, free of actors and sockets: AUTH state, quotas,
/// subscriptions and the REQ protocol (live first, then history, EOSE, then buffered live events
/// not already sent). The connection actor feeds it messages and sends the frames it returns.
class connection {
public:
  connection(connection_policy policy, std::string challenge);

  [[nodiscard]] const connection_policy& policy() const noexcept { return policy_; }

  [[nodiscard]] const std::string& challenge() const noexcept { return challenge_; }

  [[nodiscard]] const std::optional<protocol::bytes32>& authenticated() const noexcept {
    return authenticated_;
  }

  // -- publishing ---------------------------------------------------------------------------------

  /// Everything that decides whether an EVENT may go to storage or live delivery, cheapest
  /// checks first, the signature last. `now` is unix seconds, `clock` a monotonic second count.
  /// Membership requests need a connection authenticated as their author; in a closed
  /// community every other event needs an author who is a member, but for a zap receipt (9735)
  /// vouched for by a member's zap request in it, and a gift wrap a member publishes (see
  /// admitted_as). A request to vanish (NIP-62) goes by admit_vanish instead.
  [[nodiscard]] std::optional<protocol::rejection> admit_event(const protocol::event& ev,
                                                               std::int64_t now,
                                                               double clock);

  /// NIP-62: a request to vanish is honoured whatever its author's standing (not a member,
  /// banned, not authenticated: it deletes only its signer's own events), when it names this
  /// relay; the bounds on events still count it.
  [[nodiscard]] std::optional<protocol::rejection> admit_vanish(const protocol::event& ev,
                                                                std::int64_t now,
                                                                double clock);

  /// NIP-29: an event posted to rooms (`h` tags) must name rooms of this community, be recent,
  /// and, where one is `restricted`, come from one of its members (every `h` counts). Room requests (9000-9022) are
  /// judged by the room rules in their transaction, not here.
  [[nodiscard]] std::optional<protocol::rejection> check_room_event(const protocol::event& ev,
                                                                    std::int64_t now) const;

  /// A room request its author may not make as this pod's cache knows the roles: the outcome its
  /// transaction would give (the transaction still decides what it lets through), so a request
  /// bound to fail costs no place in the room queue and no transaction. Flotilla's room form
  /// sends a create before every edit: one for a room that exists is answered room_exists.
  [[nodiscard]] std::optional<protocol::room_outcome> refuse_room_request(const protocol::room_request& request) const;

  /// NIP-29: whether this connection may see an event of `kind` naming `rooms` (private and
  /// hidden rooms, invite codes): protocol::event_visible, every room must show it; rooms this
  /// community does not have are not concerned. `names_reader`: the event names this
  /// connection's user in a `p` tag (a 9000 or 9001 then shows: protocol::shown_to_named).
  [[nodiscard]] bool rooms_visible(const std::vector<std::string>& rooms, std::uint32_t kind,
                                   bool names_reader = false) const;

  /// rooms_visible for a live or held event; one stored with borrowed rooms shows as those
  /// (live_event::borrowed_rooms), and a comment or report that carries none shows only to a
  /// reader no room hides anything from. One naming a room the cache does not hold shows to nobody
  /// (gone_rooms::deleted_or_unknown).
  [[nodiscard]] bool event_visible(const live_event& event) const;

  /// NIP-29: what of this community's rooms this connection may not see, for a COUNT the
  /// database answers (the same rule as rooms_visible).
  [[nodiscard]] protocol::room_hiding hidden_rooms() const;

  /// hidden_rooms for a REQ's history, which the database leaves out before the filters'
  /// limits count (storage::bounded_history_sql): hidden after them, a REQ for 50 posts could
  /// get none, and its EOSE would tell the app there are no more. Nothing when no room hides rows.
  [[nodiscard]] protocol::room_hiding history_hiding() const;
  /// history_hiding as subscription `id`'s query starts, kept: a room the reader loses while
  /// the reply is read hides the rows the query's SQL kept for it (history_reply).
  [[nodiscard]] protocol::room_hiding history_hiding_for(const std::string& id, std::uint64_t generation);

  /// NIP-29: a REQ naming (`#h`) a room whose events this connection may not read is refused.
  [[nodiscard]] std::optional<protocol::rejection>
  check_room_filters(const std::vector<protocol::filter>& filters) const;

  /// Room events withheld from this connection since the last call (for /metrics).
  [[nodiscard]] std::size_t take_withheld() noexcept { return std::exchange(withheld_, 0); }

  /// Live events dropped since the last call: past `max_buffered_live` (or its bytes) held for one
  /// subscription still reading its history (for /metrics).
  [[nodiscard]] std::size_t take_dropped_live() noexcept { return std::exchange(dropped_live_, 0); }

  /// NIP-86: a banned author or sender, or a banned event id.
  [[nodiscard]] std::optional<protocol::rejection> check_bans(const protocol::event& ev) const;

  /// The per-connection rate of events and the bound on those awaiting storage.
  [[nodiscard]] std::optional<protocol::rejection> charge_event(double clock);

  /// Book-keeping of events sent to storage and not yet answered, and their weight: the one
  /// writer of a connection answers its events in the order they were sent.
  void event_sent(std::int64_t weight = 0) {
    weights_in_flight_.push_back(weight);
    storage_bytes_in_flight_ += weight;
  }

  void event_answered() noexcept { events_answered(1); }

  void events_answered(std::size_t n) noexcept {
    for (; n > 0 && !weights_in_flight_.empty(); --n) {
      storage_bytes_in_flight_ -= weights_in_flight_.front();
      weights_in_flight_.pop_front();
    }
  }

  [[nodiscard]] std::size_t events_in_flight() const noexcept { return weights_in_flight_.size(); }

  /// Why an event of `weight` more would take this connection past its share of the pod's
  /// storage bound (max_storage_bytes_in_flight), as charge_event says past the count; one
  /// alone always fits, however large the settings let an event be.
  [[nodiscard]] std::optional<protocol::rejection> check_storage_share(std::int64_t weight) const;

  /// Takes a frame's tokens from the connection's bucket, then from its address's; a refusal
  /// says `rate-limited:`. `clock` is a monotonic second count.
  [[nodiscard]] std::optional<protocol::rejection> charge_frame(double cost, double clock);

  /// Takes one request from the address's request bucket (the one HTTP requests and upgrades
  /// draw on) for a membership or room request about to cost the store a transaction: the
  /// per-connection bounds alone let one address, from many sockets, keep a community's
  /// membership queue busy. A refusal says `rate-limited:`.
  [[nodiscard]] std::optional<protocol::rejection> charge_store_request(double clock);

  // -- queries ----------------------------------------------------------------------------------

  /// True when one more REQ or COUNT query may start now; otherwise it must wait.
  [[nodiscard]] bool query_may_start() const noexcept {
    return queries_in_flight_ < policy_.max_queries_in_flight;
  }

  void query_started() noexcept { ++queries_in_flight_; }

  void query_finished() noexcept {
    if (queries_in_flight_ > 0)
      --queries_in_flight_;
  }

  // -- NIP-42 -----------------------------------------------------------------------------------

  /// Verifies an AUTH event; on success the connection is authenticated as its pubkey.
  [[nodiscard]] std::optional<protocol::rejection> authenticate(const protocol::event& ev,
                                                                std::int64_t now);

  /// Whether this connection may read (REQ, COUNT) at all.
  [[nodiscard]] std::optional<protocol::rejection> may_read() const;

  /// True when this connection is authenticated as someone who is, in a closed community, no
  /// longer a member: its subscriptions must end.
  [[nodiscard]] bool lost_access() const;

  /// Whether the community is closed now (the member cache follows the database).
  [[nodiscard]] bool closed_community() const;

  /// Whether the member cache holds `pubkey` as a member (false without a cache).
  [[nodiscard]] bool known_member(const protocol::bytes32& pubkey) const;
  /// Whether the member cache holds `pubkey` as one who may mint invites: its owner or an
  /// admin, or a member where the community lets members invite (false without a cache).
  [[nodiscard]] bool may_invite(const protocol::bytes32& pubkey) const;
  /// The member cache holds `pubkey` as owner or admin, or holds no members.
  [[nodiscard]] bool may_manage(const protocol::bytes32& pubkey) const;

  /// True when the community is closed and this connection is anonymous or not a member: after
  /// the community was closed, such a connection ends.
  [[nodiscard]] bool must_leave() const;

  /// The community was closed while this connection was open: whether it ends now. One holding
  /// subscriptions reads under the open community's rules and must_leave ends it; one holding
  /// none reads nothing it may no longer read (it may have opened as the community closed and
  /// be about to authenticate), and its next REQ meets the closed community's rules.
  [[nodiscard]] bool ends_when_closed() const { return must_leave() && !subscriptions_.empty(); }

  // -- subscriptions ------------------------------------------------------------------------------

  /// Opens or replaces a subscription; returns its generation, which tags the history reply so a
  /// reply to a replaced subscription is recognized and dropped. Refused (`rate-limited:`) past
  /// the subscription count or the filter budget of the policy, with `waiting` counted as open.
  [[nodiscard]] protocol::result<std::uint64_t>
  open_subscription(const std::string& id, const std::vector<protocol::filter>& filters = {},
                    const waiting_requests& waiting = {});

  /// NIP-45: a COUNT's filters, with those of the COUNTs already waiting or being counted,
  /// within the budget one REQ may hold (`rate-limited:` past it): what COUNTs keep parsed in
  /// memory is bounded as open subscriptions are.
  [[nodiscard]] std::optional<protocol::rejection>
  check_count(const std::vector<protocol::filter>& filters) const;

  /// A COUNT was taken (it waits or is counted) / was answered: its filters' cost.
  void count_taken(const filter_holding& cost) noexcept { counts_held_ += cost; }
  void count_answered(const filter_holding& cost) noexcept { counts_held_ -= cost; }

  /// True if `id` is open under `generation` (a queued query is still wanted).
  [[nodiscard]] bool is_open(const std::string& id, std::uint64_t generation) const;

  [[nodiscard]] bool is_open(const std::string& id) const { return subscriptions_.contains(id); }

  /// Forgets a subscription; false if it was not open.
  bool close_subscription(const std::string& id);

  /// Frames for the stored history of subscription `id`, which may come in several chunks: the
  /// events of each (`events`: their JSON, shared with the storage reader's cache), framed
  /// with the subscription's head; after the `last` one, in `closing`, EOSE, then live events
  /// that arrived meanwhile and were not in the history. Empty if the subscription is gone, was
  /// replaced since (`generation` differs) or has already had its EOSE.
  [[nodiscard]] history_frames history_reply(const std::string& id, std::uint64_t generation,
                                             std::vector<std::shared_ptr<const std::string>> events,
                                             double clock, bool last);

  /// history_reply for `events` as JSON text, its frames flattened in order.
  [[nodiscard]] std::vector<std::string> history_arrived(const std::string& id,
                                                         std::uint64_t generation,
                                                         std::vector<std::string> events,
                                                         double clock = 0,
                                                         bool last = true);

  /// The frame for a live event on subscription `id` registered as `generation` (sharing the
  /// event's JSON), or nothing when the subscription is gone or was replaced since, or is still
  /// reading history (then the event is held until EOSE).
  [[nodiscard]] std::optional<shared_event_frame> live_arrived(const std::string& id,
                                                        std::uint64_t generation,
                                                        const live_event& event,
                                                        double clock = 0);

  /// Forgets the ids remembered after EOSE once `history_echo_window` has passed, so a quiet
  /// subscription does not keep them until its next live event.
  void expire_history_echoes(double clock);

  /// Ids remembered after EOSE, over all subscriptions.
  [[nodiscard]] std::size_t remembered_history_ids() const;

  [[nodiscard]] std::size_t subscription_count() const noexcept { return subscriptions_.size(); }
  /// What the open subscriptions' filters cost together (the budget over_budget checks).
  [[nodiscard]] const filter_holding& held_cost() const noexcept { return held_; }

  [[nodiscard]] std::vector<std::string> subscription_ids() const;

  /// The rooms of the community an admitted event is posted to (its `h` values the cache holds
  /// as rooms, check_room_event's): storage refuses it if one was deleted before it is stored.
  [[nodiscard]] std::vector<std::string> admitted_rooms(const protocol::event& ev) const;

  /// The member who vouched for the last event admit_event let into a closed community in its
  /// author's stead: the zap request's sender of a zap receipt its Lightning service published
  /// without authenticating (NIP-57), the authenticated publisher of a gift wrap signed with a
  /// throwaway key (NIP-59); nothing for any other event. Storage checks that member again,
  /// not the event's author.
  [[nodiscard]] const std::optional<protocol::bytes32>& admitted_as() const noexcept {
    return admitted_as_;
  }

private:
  /// A closed community admits a zap receipt from anyone when the zap request in it comes from
  /// a member and names this relay; its sender is kept in admitted_as_. The request's signature
  /// is checked only after an event token is taken, as an AUTH's is paid for.
  [[nodiscard]] bool admits_zap(const protocol::event& ev, std::int64_t now, double clock);
  /// A closed community admits a gift wrap (1059), whose author is a throwaway key by design
  /// (NIP-59), from a connection authenticated as a member, kept in admitted_as_: a member may
  /// use the community's relay as the inbox its DMs go to (NIP-17), and nobody else may store
  /// anything in it. Not an ephemeral one (21059): other pods would withhold it for its author
  /// (withholds_bridged), as no database vouched for its publisher.
  [[nodiscard]] bool admits_gift_wrap(const protocol::event& ev);
  /// In a closed community only members' events are stored: the author, not the connection,
  /// must be a member (a member's connection may not carry a non-member's event).
  [[nodiscard]] bool author_not_admitted(const protocol::event& ev) const;
  /// The rooms whose events show to nobody but their deletion (9008): those deleted that the
  /// cache remembers, and for a live event also any room it does not hold. A room is created
  /// before anything is posted to it, and the cache holds it before its events reach the
  /// fan-out (the bridge holds another pod's until then), so a live event naming a room unknown
  /// here was on its way when the room was deleted, on another pod perhaps before this one ever
  /// loaded it, or before a restart. Stored history needs no such rule: a room's events are
  /// deleted with it.
  enum class gone_rooms { deleted, deleted_or_unknown };
  /// rooms_visible, with `gone` deciding which rooms hide everything.
  [[nodiscard]] bool rooms_shown(const std::vector<std::string>& rooms, std::uint32_t kind,
                                 bool names_reader, gone_rooms gone) const;
  /// A live event this pod's ban list now withholds (author or id banned).
  [[nodiscard]] bool banned_out(const protocol::event& ev) const;
  /// banned_out for a history row (its JSON).
  [[nodiscard]] bool banned_rendered(std::string_view json) const;

  struct subscription {
    std::uint64_t generation = 0;
    bool live = false;
    std::vector<live_event> held;
    std::size_t held_bytes = 0; ///< of `held`'s JSON
    bool dropping_held = false; ///< past a bound: every later live event is dropped until EOSE
    /// Ids sent as history, kept for a short while after EOSE: an event committed just before
    /// the query can reach the fan-out after the history reply reached us.
    history_ids sent_in_history;
    double history_sent_at = 0;
    filter_holding cost;
    /// `["EVENT","<id>",`, rendered once: every live event frame starts with it (shared).
    std::shared_ptr<const std::string> frame_head;
    /// The rooms its history query leaves out, and the rooms there were, as it started
    /// (history_hiding_for); held until EOSE.
    protocol::room_hiding read_with;
    room_index_ptr rooms_at_start;
  };

  /// Drops the events `sub` holds for EOSE that `newer` (a relay-signed list or room state)
  /// replaces, when `newer` is then held in their place.
  void drop_replaced_held(subscription& sub, const live_event& newer);
  [[nodiscard]] protocol::room_reader reader_of(const cached_room& room,
                                                const std::optional<protocol::bytes32>& who) const;
  /// A stored or live event's JSON, when its room's flags let this connection see it; one
  /// naming a room the cache does not hold shows to nobody, as live (event_visible).
  [[nodiscard]] bool rendered_visible(std::string_view json);
  /// A stored comment, reaction, report, deletion, zap receipt or replaceable event with no room
  /// of its own (protocol::may_carry_borrowed_rooms): the rooms it borrows are not in its JSON,
  /// so only the query's SQL decided them.
  [[nodiscard]] static bool borrows_unnamed_rooms(std::string_view json);
  /// Whether a room that existed when `sub`'s query started hides its regular events from this
  /// reader now, and did not then (a room created since is not one the query could have read).
  [[nodiscard]] bool lost_a_room(const subscription& sub) const;

  connection_policy policy_;
  std::string challenge_;
  std::optional<protocol::bytes32> authenticated_;
  std::optional<protocol::bytes32> admitted_as_; ///< admitted_as
  rate_limiter events_rate_;
  rate_limiter frames_rate_;
  lazy_deque<std::int64_t> weights_in_flight_; ///< of the events sent to storage, oldest first
  std::int64_t storage_bytes_in_flight_ = 0;
  std::size_t queries_in_flight_ = 0;
  std::size_t withheld_ = 0;
  std::size_t dropped_live_ = 0;
  filter_holding held_; ///< summed over open subscriptions
  filter_share filter_share_; ///< held_, counted with the address's other sockets and the pod's
  filter_holding counts_held_; ///< summed over COUNTs waiting or being counted
  std::size_t held_live_ = 0;       ///< live events held for EOSE, summed over subscriptions
  std::size_t held_live_bytes_ = 0; ///< their JSON's bytes
  /// Forgets what `sub` holds for EOSE (it ends, is replaced, or reaches EOSE).
  void release_held(subscription& sub) noexcept;
  std::uint64_t next_generation_ = 1;
  std::unordered_map<std::string, subscription> subscriptions_;
};

/// How long after EOSE a live event already sent as history is still recognized (seconds).
inline constexpr double history_echo_window = 10.0;

} // namespace comb::actors
