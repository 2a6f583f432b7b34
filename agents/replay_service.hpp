#pragma once

// The replay service: answers model requests from the transcripts of an earlier run (the
// files under <output>/transcripts), with no network, so that an LLM campaign can be re-run
// deterministically (tests, a bisection, a demo). A request gets the reply recorded for the
// request with the same messages, or else for the same (role, task, node), taking recorded
// requests in their order; each recorded reply is used once. Tokens and cost are counted as
// recorded (cost at today's price), budgets apply as on the gateway, and the replayed run
// writes its own transcripts (api "replay").

#include "agents/model_service.hpp"

#include <filesystem>
#include <memory>
#include <string>

namespace ks::agents {

/// How the replay service reads and counts.
struct replay_options {
  std::filesystem::path recorded;        ///< the transcript folder to answer from
  std::filesystem::path transcripts_dir; ///< where to write this run's; empty: none
  std::string model;                     ///< for this run's transcripts
  model_price price;
  int64_t token_budget = 0;         ///< 0: unlimited
  double cost_budget = 0;           ///< 0: unlimited
  std::filesystem::path usage_file; ///< llm_usage.json, rewritten after every request
  gateway_stats earlier;            ///< what earlier runs of this campaign spent
};

/// Answers from recorded transcripts; see the top of the file. Thread-safe; calls back on the
/// submitting thread before submit returns.
class replay_service final : public model_service {
public:
  /// Reads every successful transcript under options.recorded. Fails with not_found when the
  /// folder is missing, invalid_input naming a malformed file.
  [[nodiscard]] static engine::expected<std::unique_ptr<replay_service>>
  open(replay_options options);

  ~replay_service() override;

  int64_t submit(model_request request, callback done) override;
  void cancel(std::string why) override;
  gateway_stats stats() const override;

private:
  struct impl;
  explicit replay_service(std::unique_ptr<impl> p);
  std::unique_ptr<impl> impl_;
};

} // namespace ks::agents
