#include "agents/backend_registry.hpp"

#include <catch2/catch.hpp>

using namespace ks;

TEST_CASE("make_backend makes the offline backend by name", "[agents]") {
  auto backend =
      agents::make_backend("offline", engine::backend_settings{}, engine::backend_context{});
  REQUIRE(backend.has_value());
  CHECK((*backend)->name() == "offline");
  CHECK(agents::backend_names() ==
        std::vector<std::string_view>{"offline", "openai", "anthropic", "replay"});
}

TEST_CASE("make_backend says a model backend needs a model service", "[agents]") {
  engine::backend_settings settings;
  settings.model = "x";
  for (const char* name : {"openai", "anthropic"}) {
    auto backend = agents::make_backend(name, settings, engine::backend_context{});
    REQUIRE_FALSE(backend.has_value());
    CHECK(backend.error().code() == engine::errc::invalid_input);
    CHECK_THAT(backend.error().message(), Catch::Contains("needs a model service"));
  }
}

TEST_CASE("make_backend lists the valid backends for an unknown name", "[agents]") {
  auto backend =
      agents::make_backend("ofline", engine::backend_settings{}, engine::backend_context{});
  REQUIRE_FALSE(backend.has_value());
  CHECK_THAT(backend.error().message(),
             Catch::Contains("valid backends: offline, openai, anthropic, replay"));
}
