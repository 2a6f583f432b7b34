// The config options of the language-model agents: [agents] and the campaign's model budgets.

#include "config/campaign_config.hpp"

#include <catch2/catch.hpp>

#include <string>

using namespace ks::config;

namespace {

campaign_config config_of(const std::string& text) {
  expected<campaign_config> parsed = parse_campaign_config(text, "c.toml");
  INFO((parsed ? std::string() : parsed.error().message()));
  REQUIRE(parsed.has_value());
  return *parsed;
}

std::string error_of(const std::string& text) {
  expected<campaign_config> parsed = parse_campaign_config(text, "c.toml");
  REQUIRE_FALSE(parsed.has_value());
  return parsed.error().message();
}

} // namespace

TEST_CASE("the agents' model options and the campaign's token and cost budgets are read",
          "[agents][config]") {
  campaign_config c = config_of(R"(
[campaign]
token_budget = 200000
cost_budget = 1.5
[agents]
backend = "anthropic"
endpoint = "http://127.0.0.1:8000/v1"
model = "claude-x"
api_key_env = "ANTHROPIC_API_KEY"
max_retries = 3
retry_base_s = 0.5
retry_max_s = 30
reply_tokens = 4096
temperature = 0.0
prompts = "my-prompts"
distill = false
prices = [ { model = "claude-x", input_per_mtok = 3, output_per_mtok = 15.0 } ]
)");
  CHECK(c.campaign.token_budget == 200000);
  CHECK(c.campaign.cost_budget == 1.5);
  CHECK(c.agents.backend == "anthropic");
  CHECK(c.agents.max_retries == 3);
  CHECK(c.agents.retry_base_s == 0.5);
  CHECK(c.agents.retry_max_s == 30);
  CHECK(c.agents.reply_tokens == 4096);
  CHECK(c.agents.temperature == 0.0);
  CHECK_FALSE(c.agents.distill);
  REQUIRE(c.agents.prices.size() == 1);
  CHECK(c.agents.prices[0] == model_price_entry{"claude-x", 3.0, 15.0});
  CHECK(c.prompts_dir().filename() == "my-prompts");
  CHECK(c.prompts_dir().is_absolute());
}

TEST_CASE("prices are checked entry by entry, at the entry", "[agents][config]") {
  std::string e = error_of(R"([agents]
prices = [ { model = "a", input_per_mtok = -1, output_per_mtok = 1 },
           { model = "a", input_per_mtok = 1, ouput_per_mtok = 1 },
           "b" ]
)");
  CHECK_THAT(e,
             Catch::Contains(
                 "c.toml:2:44: 'agents.prices[0]'.input_per_mtok must be a number >= 0, got -1"));
  CHECK_THAT(
      e,
      Catch::Contains(
          "unknown key 'ouput_per_mtok' in 'agents.prices[1]' (did you mean 'output_per_mtok'?)"));
  CHECK_THAT(e, Catch::Contains("c.toml:4:12: 'agents.prices[2]' must be a table"));
}

TEST_CASE("backend replay needs the transcripts folder; the default file lists the new options "
          "and reads back the same",
          "[agents][config]") {
  CHECK_THAT(error_of("[agents]\nbackend = \"replay\"\n"),
             Catch::Contains("c.toml:2:11: agents.backend \"replay\" needs 'agents.replay'"));
  campaign_config replay =
      config_of("[agents]\nbackend = \"replay\"\nreplay = \"out/transcripts\"\n");
  CHECK(replay.replay_dir().filename() == "transcripts");
  campaign_config priced;
  priced.agents.prices = {model_price_entry{"m", 1.25, 5}};
  priced.campaign.token_budget = 77;
  std::string text = config_text(priced);
  CHECK_THAT(text,
             Catch::Contains(
                 "prices = [{ model = \"m\", input_per_mtok = 1.25, output_per_mtok = 5.0 }]"));
  CHECK_THAT(text, Catch::Contains("token_budget = 77"));
  CHECK_THAT(default_config_text(), Catch::Contains("prices = []"));
  CHECK_THAT(default_config_text(), Catch::Contains("\"replay\""));
  campaign_config back = config_of(text);
  CHECK(back.agents == priced.agents);
  CHECK(back.campaign == priced.campaign);
}
