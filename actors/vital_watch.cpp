// SPDX-License-Identifier: MIT
#include "actors/vital_watch.hpp"

#include <memory>

namespace comb::actors {

bool ended_by_failure(const caf::error& reason) {
  return reason && reason != caf::exit_reason::user_shutdown
         && reason != caf::exit_reason::unreachable;
}

caf::actor watch_vital_actors(caf::actor_system& system, vital_actors actors,
                              std::function<void(const std::string&)> on_loss) {
  return system.spawn([actors = std::move(actors),
                       on_loss = std::move(on_loss)](caf::event_based_actor* self) -> caf::behavior {
    auto names = std::make_shared<std::vector<std::pair<caf::actor_addr, std::string>>>();
    for (const auto& [name, actor] : actors) {
      if (!actor)
        continue;
      names->emplace_back(actor.address(), name);
      self->monitor(actor);
    }
    auto reported = std::make_shared<bool>(false);
    self->set_down_handler([names, reported, on_loss](caf::down_msg& down) {
      if (std::exchange(*reported, true))
        return;
      std::string name = "an actor";
      for (const auto& [address, known] : *names)
        if (address == down.source)
          name = known;
      on_loss(name + " ended (" + caf::to_string(down.reason) + ")");
    });
    return {[](int) {}}; // nothing to receive: it only watches
  });
}

} // namespace comb::actors
