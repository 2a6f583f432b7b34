#pragma once

// Private to engine/'s manifest readers (task_manifest.cpp, graph_manifest.cpp,
// module_manifest.cpp): the checks every part of a task manifest shares. Each records a
// problem at the position toml++ gives the offending node and goes on (the method is at the
// top of task_manifest.cpp); labels name a node by its path from the root
// ("nodes[1].outputs[0].shape").

#include "config/diagnostics.hpp"
#include "engine/op_family.hpp"
#include "engine/task.hpp"

#include <toml++/toml.h>

#include <cstddef>
#include <map>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace ks::engine::manifest_detail {

/// The ABI's ks_tensor holds this many extents.
constexpr size_t max_dims = 8;

/// Checks whether `text` is an identifier ([A-Za-z_][A-Za-z0-9_]*).
bool is_identifier(std::string_view text);

/// Records the problems of one manifest and reads its common parts.
class manifest_checks {
public:
  // -- recording problems --------------------------------------------------------------------

  /// Records `message` at `at`.
  void report(config::position at, std::string message);

  /// Records `message` at the start of `at`.
  void report(const toml::source_region& at, std::string message);

  /// Records `message` at `at`'s value.
  void report(const toml::node& at, std::string message);

  /// Records that `node` (named `label`) is not what it must be, `expected`.
  void wrong_type(const toml::node& node, const std::string& label, std::string_view expected);

  /// Returns how many problems were recorded.
  size_t count() const noexcept { return problems_.size(); }

  /// Returns the problems recorded, in source order.
  std::vector<std::pair<config::position, std::string>> problems() const;

  // -- generic checks ------------------------------------------------------------------------

  /// Returns `key`'s label inside `where` ("inputs[0].shape"; `key` alone at the root).
  static std::string child(const std::string& where, std::string_view key);

  /// Returns " in <where>", or nothing at the root.
  static std::string in(const std::string& where);

  /// Reports every key of `table` that is not in `known`, with a suggestion.
  void check_keys(const toml::table& table, std::span<const std::string_view> known,
                  const std::string& where);

  /// Returns `table[key]`, or reports it missing, saying `what` it should be.
  const toml::node* required(const toml::table& table, std::string_view key,
                             const std::string& where, std::string_view what);

  /// Returns `node` as a string, or reports that it is none.
  std::optional<std::string> string_of(const toml::node& node, const std::string& label);

  /// Returns `node` as an integer, or reports that it is none.
  std::optional<int64_t> integer_of(const toml::node& node, const std::string& label);

  // -- parts of a manifest -------------------------------------------------------------------

  /// Reads the dtype of the tensor `label`; f32 after a problem.
  dtype read_dtype(const toml::node& node, const std::string& label);

  /// Reads a shape (at most max_dims positive integers, [] for a scalar) of `type`.
  std::vector<int64_t> read_shape(const toml::node& node, const std::string& label, dtype type);

  /// Reads a params table named `label` ("params", "nodes[0].params"), recording where it and
  /// each value are in `sources`.
  std::map<std::string, param_value> read_params(const toml::node& node, const std::string& label,
                                                 family_sources& sources);

private:
  std::vector<std::pair<config::position, std::string>> problems_;
};

} // namespace ks::engine::manifest_detail
