#include "gpu/worker_environment.hpp"

#include <algorithm>
#include <array>
#include <cctype>

extern char** environ;

namespace ks::gpu {

namespace {

constexpr std::array<std::string_view, 6> exact_names = {"PATH", "LD_LIBRARY_PATH", "HOME",
                                                         "LANG", "LANGUAGE",        "TZ"};

constexpr std::array<std::string_view, 6> prefixes = {"LC_",   "CUDA_", "NVIDIA_",
                                                      "__NV_", "__GL_", "KS_"};

constexpr std::array<std::string_view, 7> secret_words = {
    "KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH"};

bool starts_with(std::string_view text, std::string_view prefix) {
  return text.substr(0, prefix.size()) == prefix;
}

std::string upper(std::string_view text) {
  std::string out(text);
  std::transform(out.begin(), out.end(), out.begin(),
                 [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
  return out;
}

} // namespace

bool is_secret_variable(std::string_view name, std::span<const std::string> secret) {
  if (std::find(secret.begin(), secret.end(), name) != secret.end())
    return true;
  const std::string shouted = upper(name);
  return std::any_of(secret_words.begin(), secret_words.end(), [&](std::string_view word) {
    return shouted.find(word) != std::string::npos;
  });
}

bool is_worker_variable(std::string_view name) {
  if (std::find(exact_names.begin(), exact_names.end(), name) != exact_names.end())
    return true;
  return std::any_of(prefixes.begin(), prefixes.end(),
                     [&](std::string_view prefix) { return starts_with(name, prefix); });
}

std::vector<std::string> worker_environment(std::span<const std::string> parent,
                                            std::span<const std::string> secret,
                                            const std::filesystem::path& temp_dir) {
  std::vector<std::string> env;
  for (const std::string& entry : parent) {
    auto eq = entry.find('=');
    if (eq == std::string::npos || eq == 0)
      continue;
    std::string_view name(entry.data(), eq);
    if (is_worker_variable(name) && !is_secret_variable(name, secret))
      env.push_back(entry);
  }
  env.push_back("TMPDIR=" + temp_dir.string());
  return env;
}

std::vector<std::string> current_environment() {
  std::vector<std::string> env;
  for (char** entry = environ; entry != nullptr && *entry != nullptr; ++entry)
    env.emplace_back(*entry);
  return env;
}

} // namespace ks::gpu
