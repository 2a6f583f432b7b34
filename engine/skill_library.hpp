#pragma once

// Loading skills: one folder per skill, `skill.toml` plus the template files it names (the
// format is in docs/skills.md and at the top of skill_library.cpp). Loading reports every
// problem it finds as `FILE:LINE:COL: message`, like task manifests: FILE is skill.toml or
// the template the problem is in, and a problem inside an expression or a template points at
// the character itself.

#include "engine/error.hpp"
#include "engine/skill.hpp"

#include <filesystem>
#include <map>
#include <string>
#include <vector>

namespace ks::engine {

/// The files of one skill, wherever they come from (a folder, the store, an import file).
struct skill_files {
  std::string dir;                          ///< names the folder in messages ("skills/relu")
  std::map<std::string, std::string> files; ///< file name -> text; "skill.toml" among them
};

/// Reads every regular file directly inside `dir` (a skill's folder). Returns errc::not_found
/// when `dir` holds no skill.toml, errc::io when a file cannot be read.
[[nodiscard]] expected<skill_files> read_skill_folder(const std::filesystem::path& dir);

/// Returns the content hash of `files`: every file's name and text, in name order (FNV-1a,
/// 64 bits, hex). Equal files give equal hashes on every machine.
std::string content_hash(const skill_files& files);

/// Loads and validates one skill from its files. Returns the skill with its files and
/// content hash; errc::invalid_input whose message holds one `FILE:LINE:COL: message` line
/// per problem.
[[nodiscard]] expected<skill> load_skill(const skill_files& files,
                                         skill_origin origin = skill_origin::builtin);

/// Reads every skill folder directly inside `root` (each subfolder with a skill.toml; `root`
/// itself when it holds one). Returns them sorted by folder name; errors of every folder,
/// gathered.
[[nodiscard]] expected<std::vector<skill_files>>
read_skill_folders(const std::filesystem::path& root);

/// Loads every skill under `root` (see read_skill_folders) into a library; duplicate ids are
/// errors. Returns one error that gathers the problems of every skill.
[[nodiscard]] expected<skill_library> load_skill_library(const std::filesystem::path& root);

/// Makes a library of `skills` (sorted by id); fails with invalid_input on a duplicate id.
[[nodiscard]] expected<skill_library> make_library(std::vector<skill> skills);

/// Returns the built-in skill folder: $KS_SKILLS_DIR when set, else <exe>/../share/kernelskill/
/// skills when it exists, else the source tree's skills/ this binary was built from.
std::filesystem::path default_skills_dir();

} // namespace ks::engine
