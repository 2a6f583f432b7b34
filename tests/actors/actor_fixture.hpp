#pragma once

// A deterministic actor system for unit tests of single actors (STYLE 18): the testing
// scheduler runs nothing until the test says so. A test sends from `self`, runs the
// scheduler, and then takes the reply out of `self`'s mailbox.

#include "actors/messages.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/after.hpp>
#include <caf/scheduler/test_coordinator.hpp>
#include <caf/scoped_actor.hpp>
#include <catch2/catch.hpp>

#include <chrono>
#include <optional>
#include <string>

namespace ks::test {

struct actor_fixture {
  static caf::actor_system_config& testing(caf::actor_system_config& cfg) {
    cfg.set("scheduler.policy", caf::atom("testing"));
    cfg.set("logger.file-verbosity", caf::atom("quiet"));
    cfg.set("logger.console", caf::atom("none"));
    return cfg;
  }

  actor_fixture()
    : sys(testing(cfg)), self(sys, true),
      sched(dynamic_cast<caf::scheduler::test_coordinator&>(sys.scheduler())) {}

  ~actor_fixture() { sched.run(); }

  /// Runs every actor until no message is left; returns how many messages were handled.
  size_t run() { return sched.run(); }

  /// Returns the next message of type T in `self`'s mailbox, if it is there now.
  template <class T>
  std::optional<T> reply() {
    std::optional<T> result;
    self->receive([&](T& x) { result = std::move(x); },
                  [&](caf::error& e) { FAIL("an error came back: " << caf::to_string(e)); },
                  caf::after(std::chrono::seconds(0)) >> [] {});
    return result;
  }

  caf::actor_system_config cfg;
  caf::actor_system sys;
  caf::scoped_actor self;
  caf::scheduler::test_coordinator& sched;
};

} // namespace ks::test
