#pragma once

#include "cli/command_result.hpp"

#include <filesystem>
#include <string>
#include <vector>

namespace CLI {
class App;
}

namespace ks::cli {

/// The options of `kernelskill skills`.
struct skills_options {
  std::string action;            ///< list, show, stats, export, import, check, render
  std::filesystem::path config;  ///< a campaign config naming [memory] path and skills
  std::filesystem::path memory;  ///< the memory folder (overrides the config's)
  std::filesystem::path builtin; ///< the built-in skill folder (overrides the config's)
  std::string family;            ///< list: only skills for this op family
  std::string gpu;               ///< stats: only this GPU architecture ("sm_90a")
  std::string id;                ///< show
  std::filesystem::path file;    ///< export, import
  std::filesystem::path dir;     ///< check
  std::filesystem::path tasks;   ///< check: render for these tasks too
  std::filesystem::path task;    ///< render: the task manifest
  std::string template_name;     ///< render: the template (default: the skill's first)
  std::vector<std::string> sets; ///< render: NAME=VALUE, parameters set by hand
};

/// Adds the `skills` subcommand (list, show, stats, export, import, check, render) to `app`;
/// returns it.
CLI::App* add_skills_command(CLI::App& app, skills_options& opt);

/// Runs the `skills` action `opt.action`.
[[nodiscard]] command_result run_skills(const skills_options& opt);

} // namespace ks::cli
