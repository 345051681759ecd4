// SPDX-License-Identifier: MIT
#include "actors/connection/frame_charges.hpp"

#include "actors/clock.hpp"
#include "actors/connection/subscription_requests.hpp"
#include "protocol/relay_message.hpp"

namespace comb::actors {
namespace {

frame_type type_of(const protocol::client_message& message) {
  switch (message.index()) {
    case 0: return frame_type::event;
    case 1: return frame_type::req;
    case 2: return frame_type::count;
    case 3: return frame_type::close;
    default: return frame_type::auth;
  }
}

/// The one reply to a frame refused by the rate limits: OK for EVENT and AUTH, CLOSED for REQ
/// and COUNT, NOTICE otherwise.
void refuse_rate_limited(connection_self self, const protocol::client_message& message,
                         const protocol::rejection& why) {
  std::visit(
    [self, &why](const auto& m) {
      using T = std::decay_t<decltype(m)>;
      if constexpr (std::is_same_v<T, protocol::event_message> || std::is_same_v<T, protocol::auth_message>)
        send_frame(self, protocol::render_ok(m.ev.id, false, why.text()));
      else if constexpr (std::is_same_v<T, protocol::close_message>)
        send_frame(self, protocol::render_notice(why.text()));
      else
        refuse_subscription(self, m.subscription_id, why);
    },
    message);
}

/// Frames this large are paid for before they are parsed; smaller ones are parsed first.
constexpr std::size_t charged_before_parsing = 16 * 1024;

/// Tokens a parsed frame takes: its size and type, for a REQ for 28935 (it mints an invite, a
/// database write on the one membership writer) as much again as an AUTH, for an EVENT its
/// indexed tags (tag_rows_cost).
double cost_of_frame(connection_self self, std::size_t bytes, const parse_result& parsed) {
  const auto& policy = self->state.args.policy;
  auto type = parsed ? type_of(parsed.value()) : frame_type::other;
  double cost = frame_cost(type, bytes, policy);
  if (type == frame_type::req && asks_for_invite(std::get<protocol::req_message>(parsed.value())))
    cost += policy.auth_cost;
  if (type == frame_type::event)
    cost += tag_rows_cost(std::get<protocol::event_message>(parsed.value()).ev);
  return cost;
}

/// Takes `cost` tokens for a parsed frame; false (and the refusal sent) when there are not
/// enough. A CLOSE of an open subscription is never refused: it only frees what the client holds.
bool charge(connection_self self, double cost, const parse_result& parsed) {
  auto& st = self->state;
  if (cost <= 0)
    return true;
  auto type = parsed ? type_of(parsed.value()) : frame_type::other;
  auto refused = st.logic->charge_frame(cost, monotonic_seconds());
  if (!refused)
    return true;
  if (type == frame_type::close
      && st.logic->is_open(std::get<protocol::close_message>(parsed.value()).subscription_id))
    return true;
  bump(st.args.metrics->frames_rate_limited);
  if (parsed) {
    refuse_rate_limited(self, parsed.value(), *refused);
  } else {
    auto answer = parsed.error(); // its reference (an event's id, a subscription's), if read
    answer.why = *refused;
    send_refusal(self, answer);
  }
  return false;
}

} // namespace

void send_refusal(connection_self self, const protocol::frame_rejection& r) {
  switch (r.reply) {
    case protocol::reply_kind::ok:
      send_frame(self, protocol::render_ok(r.reference, false, r.why.text()));
      break;
    case protocol::reply_kind::closed:
      refuse_subscription(self, r.reference, r.why);
      break;
    case protocol::reply_kind::notice:
      send_frame(self, protocol::render_notice(r.why.text()));
      break;
  }
}

void reply_to_rejected_frame(connection_self self, const protocol::frame_rejection& r) {
  bump(self->state.args.metrics->messages_invalid);
  if (r.reply == protocol::reply_kind::ok)
    bump(self->state.args.metrics->events_rejected);
  send_refusal(self, r);
}

bool charge_before_parsing(connection_self self, const std::string& text, double& paid) {
  auto& st = self->state;
  paid = 0;
  if (text.size() < charged_before_parsing)
    return true;
  paid = frame_cost(frame_type::other, text.size(), st.args.policy);
  auto refused = st.logic->charge_frame(paid, monotonic_seconds());
  if (!refused)
    return true;
  bump(st.args.metrics->frames_rate_limited);
  // An EVENT still gets its OK, a REQ its CLOSED: the apps wait for them, not for a NOTICE.
  send_refusal(self, protocol::refusal_of_unread(text, *refused, st.args.policy.limits));
  return false;
}

bool charge_parsed(connection_self self, std::size_t bytes, const parse_result& parsed, double paid) {
  return charge(self, cost_of_frame(self, bytes, parsed) - paid, parsed);
}

} // namespace comb::actors
