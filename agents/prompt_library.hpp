#pragma once

// The role prompts: Mustache templates in a folder (agents/prompts/ in the source tree,
// share/kernelskill/prompts once installed, or the config's agents.prompts), so that a prompt
// is changed without a rebuild. Each role's chat is a system message (system.md) and one user
// message (planner.md, coder.md, repairer.md, distiller.md); _task.md is a partial every
// role includes ({{> _task}}); retry.md is the follow-up sent with a parse error.
//
// Rendering is strict: a name the data does not provide is an error naming it, never an
// empty string, and nothing is HTML-escaped. docs/agents.md lists every name a template sees.

#include "agents/model_protocol.hpp"
#include "engine/agent_backend.hpp"
#include "engine/error.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <string_view>
#include <vector>

namespace ks::agents {

/// One step of a winning lineage, for the distiller.
struct lineage_step {
  engine::plan plan;
  double gain = 0; ///< 1 - child / parent median
};

/// What the distiller is told: a task's winning lineage.
struct distill_request {
  const engine::task* subject = nullptr;
  std::vector<lineage_step> lineage; ///< root's child .. the winner
  std::string winner_source;
  std::string reference_source;
  double speedup = 1;                    ///< reference / winner
  std::vector<std::string> existing_ids; ///< skill ids already in memory
  std::string gpu_name;
  double peak_gbps = 0;
  double peak_gflops = 0;
  int64_t node = -1; ///< the winner (transcripts)
};

/// The file name the distiller is asked to give its template.
inline constexpr std::string_view distilled_template_file = "kernel.cu.mustache";

/// The role prompts of one folder.
class prompt_library {
public:
  /// The files a prompt folder must hold.
  static const std::vector<std::string>& file_names();

  /// Loads every file of file_names() from `dir` and checks its Mustache syntax. Fails with
  /// not_found naming a missing file, invalid_input naming a file and its syntax error.
  [[nodiscard]] static engine::expected<prompt_library> load(const std::filesystem::path& dir);

  /// Returns the folder it was loaded from.
  const std::filesystem::path& dir() const noexcept { return dir_; }

  /// Returns the planner's chat for `request`.
  [[nodiscard]] engine::expected<std::vector<chat_message>>
  planner(const engine::planning_request& request, const engine::backend_context& context) const;

  /// Returns the coder's chat for `request`.
  [[nodiscard]] engine::expected<std::vector<chat_message>>
  coder(const engine::coding_request& request, const engine::backend_context& context) const;

  /// Returns the repairer's chat for `request`.
  [[nodiscard]] engine::expected<std::vector<chat_message>>
  repairer(const engine::repair_request& request, const engine::backend_context& context) const;

  /// Returns the distiller's chat for `request`.
  [[nodiscard]] engine::expected<std::vector<chat_message>>
  distiller(const distill_request& request, const engine::backend_context& context) const;

  /// Returns the follow-up that sends `error` back to the model.
  [[nodiscard]] engine::expected<std::string> retry(std::string_view error) const;

private:
  std::filesystem::path dir_;
  std::map<std::string, std::string> texts_;
};

/// Returns the installed prompt folder: $KS_PROMPTS_DIR when set, else
/// <exe>/../share/kernelskill/prompts when it exists, else the source tree's agents/prompts.
std::filesystem::path default_prompts_dir();

} // namespace ks::agents
