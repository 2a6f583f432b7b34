#include "tests/test_compiler.hpp"

#include "gpu/child_process.hpp"
#include "gpu/content_hash.hpp"
#include "tests/test_context.hpp"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <thread>

namespace ks::test {

namespace fs = std::filesystem;

engine::expected<gpu::compiler> shared_compiler(const std::string& arch) {
  gpu::compiler_options options;
  options.arch = arch;
  options.cache_dir = cache_dir() / "nvcc";
  options.include_dir = source_dir() / "gpu" / "include";
  return gpu::compiler::create(options);
}

namespace {

constexpr auto host_timeout = std::chrono::minutes(5);

std::string host_cxx() {
  const char* cxx = std::getenv("KS_HOST_CXX");
  return cxx != nullptr && *cxx != '\0' ? cxx : "c++";
}

// Replaces every occurrence of `from` in `text` by `to`.
void replace_all(std::string& text, const std::string& from, const std::string& to) {
  if (from.empty())
    return;
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
}

// The source and build trees' paths out of `text`, the longer first (the build may lie inside
// the source).
std::string without_trees(std::string text) {
  std::string source = source_dir().string();
  std::string build = bin_dir().parent_path().string();
  if (build.size() > source.size()) {
    replace_all(text, build, "<build>");
    replace_all(text, source, "<source>");
  } else {
    replace_all(text, source, "<source>");
    replace_all(text, build, "<build>");
  }
  return text;
}

// Returns the key of `source`, or empty where the preprocessor fails (the compile then runs
// and reports why).
std::string host_key(const std::string& source, const std::vector<std::string>& flags,
                     const std::string& version) {
  std::vector<std::string> argv{host_cxx()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-E", "-x", "c++", "-"});
  auto run = gpu::run_to_completion(argv, host_timeout, source);
  if (!run || !run->status.success())
    return {};
  gpu::content_hasher key;
  key.update("format", "1");
  key.update("compiler", version);
  for (const std::string& flag : flags)
    key.update("flag", without_trees(flag));
  key.update("expanded", without_trees(run->out));
  return key.hex_digest();
}

host_build build_one(const std::string& source, const std::vector<std::string>& flags,
                     const std::string& version) {
  static std::atomic<int64_t> serial{0};
  std::string key = host_key(source, flags, version);
  fs::path root = cache_dir() / "emulator";
  fs::path entry = key.empty() ? fs::path() : root / key.substr(0, 2) / key;
  if (!key.empty() && fs::exists(entry / "kernel.so"))
    return {entry / "kernel.so", ""};
  // Built in a folder of its own, renamed into place: a racing process ends with one entry.
  fs::path work = root / (".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(serial++));
  std::error_code ec;
  fs::create_directories(work, ec);
  std::ofstream(work / "kernel.cpp") << source;
  std::vector<std::string> argv{host_cxx()};
  argv.insert(argv.end(), flags.begin(), flags.end());
  argv.insert(argv.end(), {"-o", (work / "kernel.so").string(), (work / "kernel.cpp").string()});
  auto run = gpu::run_to_completion(argv, host_timeout);
  host_build out;
  if (!run) {
    out.log = run.error().message();
  } else {
    out.log = run->out + run->err;
    if (!run->status.success())
      out.log = run->status.describe() + "\n" + out.log;
  }
  if (!run || !run->status.success()) {
    fs::remove_all(work, ec);
    return out;
  }
  if (key.empty()) {
    // Not cacheable: kept in the build folder under a name of its own.
    fs::path kept = bin_dir().parent_path() / "emulator-uncached" / work.filename();
    fs::create_directories(kept.parent_path(), ec);
    fs::remove_all(kept, ec);
    fs::rename(work, kept, ec);
    out.shared_object = kept / "kernel.so";
    return out;
  }
  fs::create_directories(entry.parent_path(), ec);
  fs::rename(work, entry, ec);
  if (ec) // another process was first: its entry is as good
    fs::remove_all(work, ec);
  out.shared_object = entry / "kernel.so";
  return out;
}

} // namespace

std::vector<host_build> host_compile_all(const std::vector<std::string>& sources,
                                         const std::vector<std::string>& flags) {
  std::string version;
  if (auto run = gpu::run_to_completion({host_cxx(), "--version"}, host_timeout); run)
    version = run->out;
  std::vector<host_build> builds(sources.size());
  if (sources.empty())
    return builds;
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t i = next++; i < sources.size(); i = next++)
      builds[i] = build_one(sources[i], flags, version);
  };
  size_t threads = std::clamp<size_t>(std::thread::hardware_concurrency(), 1, sources.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker();
  for (std::thread& t : pool)
    t.join();
  return builds;
}

} // namespace ks::test
