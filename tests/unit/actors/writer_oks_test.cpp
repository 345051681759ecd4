// SPDX-License-Identifier: MIT
// The storage writer answers a committed batch on the connections' sockets itself: each
// connection's OKs in one push, in the order of its events, then counted answered.
#include <catch2/catch.hpp>

#include "actors/storage/storage_actors.hpp"
#include "protocol/relay_message.hpp"

using namespace comb;
using namespace comb::actors;

namespace {

/// Records each push: a single frame, or a list of frames taken in one call.
class push_recording_sink final : public frame_sink {
public:
  void send(std::string frame) override { pushes.push_back({std::move(frame)}); }
  void send_frames(std::vector<std::string> frames) override { pushes.push_back(std::move(frames)); }
  void close(close_reason) override {}

  std::vector<std::vector<std::string>> pushes;
};

struct connection_end {
  std::shared_ptr<push_recording_sink> sink = std::make_shared<push_recording_sink>();
  std::shared_ptr<std::atomic<std::size_t>> answered = std::make_shared<std::atomic<std::size_t>>(0);

  pending_write write_of(const std::string& id_hex) const { return {{sink, answered, id_hex}, {}}; }
};

const std::string id_a1(64, 'a'), id_a2(64, 'b'), id_b1(64, 'c');

} // namespace

TEST_CASE("a batch's OKs go to each connection in one push, in the order of its events", "[writer]") {
  connection_end a, b;
  std::vector<pending_write> batch{a.write_of(id_a1), b.write_of(id_b1), a.write_of(id_a2)};
  using status = storage::store_outcome::status;
  std::vector<storage::store_outcome> outcomes{{status::stored, "", false},
                                               {status::duplicate, "duplicate: already have this event", false},
                                               {status::refused, "blocked: this event was deleted", false}};
  send_oks(batch, outcomes);

  CHECK(a.sink->pushes
        == std::vector<std::vector<std::string>>{
          {protocol::render_ok(id_a1, true, ""), protocol::render_ok(id_a2, false, "blocked: this event was deleted")}});
  CHECK(b.sink->pushes
        == std::vector<std::vector<std::string>>{
          {protocol::render_ok(id_b1, true, "duplicate: already have this event")}});
  CHECK(a.answered->load() == 2);
  CHECK(b.answered->load() == 1);
}

TEST_CASE("a failed store is answered OK false with its message", "[writer]") {
  connection_end a;
  send_oks({a.write_of(id_a1)}, {{storage::store_outcome::status::failed, "error: database unavailable", false}});
  CHECK(a.sink->pushes
        == std::vector<std::vector<std::string>>{{protocol::render_ok(id_a1, false, "error: database unavailable")}});
  CHECK(a.answered->load() == 1);
}
