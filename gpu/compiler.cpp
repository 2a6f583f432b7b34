// The compile service: one nvcc process per candidate, behind a content-addressed cache.
//
// Key: a content_hasher over tagged fields (a format version, the source, every flag of the
// nvcc command line, the output of `nvcc --version` and the text of kernelskill/abi.h). The
// nvcc path and the include folder's path are left out: the version and the header's content
// say everything they could change, and leaving them out lets the source and install trees
// share entries.
//
// Entry: <cache_dir>/compile/<first 2 hex of key>/<key>/ holding kernel.cu (what was
// compiled), kernel.so (only when it compiled), diagnostics.txt (nvcc's stdout then stderr,
// verbatim) and result.json (ok, the kernels' resources, the command and the key's dump). An
// entry is built in a hidden sibling folder (.tmp-<key>-<pid>-<n>) and renamed into place, so
// a compile killed halfway never leaves a half entry, and two processes racing on one key
// both end with one complete entry (the loser of the rename discards its copy). Failed
// compiles are cached too, so a repair loop asking again gets the same diagnostics at once;
// timeouts and nvcc deaths by signal are not, because they say more about the machine's load
// than about the source. An nvcc killed by a signal is run once more (the OOM killer or
// another process may have sent it); only a second death is the source's failure.
//
// Faults of the host (gpu/host_fault.hpp) are no verdict on the source: our own writes into
// the cache failing, nvcc failing to start, or nvcc saying that a write failed while the cache
// or the temporary folder is short of space or refuses a probe file give host_fault, and are
// never cached. A cached failure whose diagnostics say a write failed (stored before this
// check existed) is compiled again.
//
// nvcc runs inside the build folder on the relative name kernel.cu, so its diagnostics read
// "kernel.cu(12): error: ..." whether fresh or cached, wherever the cache lives; a request
// that names its source file gets them back naming that file ("my.cu:12: error: ..."), cached
// entries included, without the name entering the key.

#include "gpu/compiler.hpp"

#include "base/text.hpp"
#include "engine/candidate_checks.hpp"
#include "gpu/child_process.hpp"
#include "gpu/compile_sandbox.hpp"
#include "gpu/content_hash.hpp"
#include "gpu/worker_environment.hpp"
#include "json/encode.hpp"

#include <boost/json.hpp>
#include <cxxabi.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>
#include <sstream>
#include <thread>
#include <unordered_map>

namespace ks::gpu {

namespace fs = std::filesystem;
using clock_type = std::chrono::steady_clock;

namespace {

// Bumped whenever the entry layout or the key's fields change.
constexpr const char* cache_format = "1";

constexpr int ks_flags_scan_lines = 20;

const char* const whitelist_text =
    "a candidate may ask only for -l<library>, -maxrregcount=<N>, --use_fast_math, "
    "-Xptxas=<ptxas options>, -D<NAME>[=<value>]";

double ms_since(clock_type::time_point start) {
  return std::chrono::duration<double, std::milli>(clock_type::now() - start).count();
}

bool write_text(const fs::path& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  return static_cast<bool>(out);
}

bool is_executable_file(const fs::path& path) {
  std::error_code ec;
  return fs::is_regular_file(path, ec) && ::access(path.c_str(), X_OK) == 0;
}

std::optional<fs::path> search_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (path == nullptr)
    return std::nullopt;
  std::string_view rest = path;
  while (!rest.empty()) {
    auto colon = rest.find(':');
    std::string_view dir = rest.substr(0, colon);
    rest = colon == std::string_view::npos ? std::string_view{} : rest.substr(colon + 1);
    if (dir.empty())
      continue;
    fs::path candidate = fs::path(dir) / name;
    if (is_executable_file(candidate))
      return candidate;
  }
  return std::nullopt;
}

engine::expected<fs::path> find_nvcc(const fs::path& configured) {
  const char* how = "install the CUDA toolkit (nvcc), or set KS_NVCC to the nvcc to use";
  if (!configured.empty()) {
    if (is_executable_file(configured))
      return configured;
    if (!configured.has_parent_path())
      if (auto found = search_path(configured.string()))
        return *found;
    return engine::fail(engine::errc::not_found,
                        "nvcc not found at " + configured.string() + " (compiler_options.nvcc)");
  }
  if (const char* env = std::getenv("KS_NVCC"); env != nullptr && *env != '\0') {
    if (is_executable_file(env))
      return fs::path(env);
    return engine::fail(engine::errc::not_found,
                        std::string("KS_NVCC names ") + env + ", which is not an executable");
  }
  if (is_executable_file("/usr/local/cuda/bin/nvcc"))
    return fs::path("/usr/local/cuda/bin/nvcc");
  if (auto found = search_path("nvcc"))
    return *found;
  return engine::fail(engine::errc::not_found,
                      std::string("nvcc not found in /usr/local/cuda/bin or PATH: ") + how);
}

bool has_abi_header(const fs::path& dir) {
  std::error_code ec;
  return !dir.empty() && fs::is_regular_file(dir / "kernelskill" / "abi.h", ec);
}

engine::expected<fs::path> find_include_dir(const fs::path& configured) {
  const char* how = "set KS_INCLUDE_DIR (or compiler_options.include_dir) to the folder that "
                    "holds kernelskill/abi.h: gpu/include in the source tree, include/ in the "
                    "install tree";
  if (!configured.empty()) {
    if (has_abi_header(configured))
      return configured;
    return engine::fail(engine::errc::not_found,
                        "no kernelskill/abi.h in " + configured.string() + ": " + how);
  }
  std::string looked;
  if (const char* env = std::getenv("KS_INCLUDE_DIR"); env != nullptr && *env != '\0') {
    if (has_abi_header(env))
      return fs::path(env);
    looked += std::string(env) + " (KS_INCLUDE_DIR), ";
  }
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  if (!ec) {
    fs::path installed = fs::weakly_canonical(exe.parent_path() / ".." / "include", ec);
    if (!ec && has_abi_header(installed))
      return installed;
    looked += installed.string() + ", ";
  }
  return engine::fail(engine::errc::not_found, "cannot find kernelskill/abi.h (looked in " +
                                                   looked + "next to the executable): " + how);
}

fs::path default_cache_dir() {
  if (const char* xdg = std::getenv("XDG_CACHE_HOME"); xdg != nullptr && *xdg != '\0')
    return fs::path(xdg) / "kernelskill";
  if (const char* home = std::getenv("HOME"); home != nullptr && *home != '\0')
    return fs::path(home) / ".cache" / "kernelskill";
  return fs::temp_directory_path() / "kernelskill-cache";
}

// Returns the part of `arch` after "sm_" ("90a") when it is a valid nvcc architecture.
std::optional<std::string> arch_suffix(const std::string& arch) {
  if (arch.rfind("sm_", 0) != 0 || arch.size() < 5)
    return std::nullopt;
  std::string rest = arch.substr(3);
  size_t digits = 0;
  while (digits < rest.size() && std::isdigit(static_cast<unsigned char>(rest[digits])))
    ++digits;
  bool ok = digits >= 2 && (digits == rest.size() || (digits + 1 == rest.size() &&
                                                      (rest.back() == 'a' || rest.back() == 'f')));
  return ok ? std::optional<std::string>{rest} : std::nullopt;
}

// Removes build folders that a killed process left behind (an hour is far past any timeout).
void remove_stale_builds(const fs::path& compile_dir) {
  std::error_code ec;
  if (!fs::is_directory(compile_dir, ec))
    return;
  auto limit = fs::file_time_type::clock::now() - std::chrono::hours{1};
  for (const auto& shard : fs::directory_iterator(compile_dir, ec)) {
    std::error_code shard_ec;
    for (const auto& entry : fs::directory_iterator(shard.path(), shard_ec)) {
      std::error_code entry_ec;
      if (entry.path().filename().string().rfind(".tmp-", 0) == 0 &&
          entry.last_write_time(entry_ec) < limit && !entry_ec)
        fs::remove_all(entry.path(), entry_ec);
    }
  }
}

bool all_of_chars(std::string_view text, std::string_view allowed_punct) {
  return !text.empty() && std::all_of(text.begin(), text.end(), [&](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           allowed_punct.find(c) != std::string_view::npos;
  });
}

bool is_number(std::string_view text) {
  return !text.empty() && text.size() <= 4 && std::all_of(text.begin(), text.end(), [](char c) {
    return std::isdigit(static_cast<unsigned char>(c)) != 0;
  });
}

// Checks one ptxas option of -Xptxas=...; -o and other file options are refused.
bool allowed_ptxas_option(std::string_view option) {
  static constexpr std::array<std::string_view, 12> bare = {"-v",
                                                            "--verbose",
                                                            "-O0",
                                                            "-O1",
                                                            "-O2",
                                                            "-O3",
                                                            "--warn-on-spills",
                                                            "-warn-spills",
                                                            "--warn-on-local-memory-usage",
                                                            "-warn-lmem-usage",
                                                            "--suppress-stack-size-warning",
                                                            "-suppress-stack-size-warning"};
  static constexpr std::array<std::string_view, 8> valued = {"-maxrregcount=",
                                                             "--maxrregcount=",
                                                             "-dlcm=",
                                                             "--def-load-cache=",
                                                             "-dscm=",
                                                             "--def-store-cache=",
                                                             "--allow-expensive-optimizations=",
                                                             "-allow-expensive-optimizations="};
  if (std::find(bare.begin(), bare.end(), option) != bare.end())
    return true;
  for (std::string_view prefix : valued)
    if (option.rfind(prefix, 0) == 0 && all_of_chars(option.substr(prefix.size()), "_"))
      return true;
  return false;
}

bool allowed_flag(std::string_view flag) {
  if (flag == "--use_fast_math" || flag == "-use_fast_math")
    return true;
  if (flag.rfind("-maxrregcount=", 0) == 0)
    return is_number(flag.substr(14));
  if (flag.rfind("-l", 0) == 0)
    return all_of_chars(flag.substr(2), "_+.-") && flag[2] != '-';
  if (flag.rfind("-D", 0) == 0) {
    std::string_view define = flag.substr(2);
    std::string_view name = define.substr(0, define.find('='));
    return all_of_chars(name, "_") && std::isdigit(static_cast<unsigned char>(name[0])) == 0;
  }
  if (flag.rfind("-Xptxas=", 0) == 0) {
    std::string_view rest = flag.substr(8);
    if (rest.empty())
      return false;
    while (!rest.empty()) {
      auto comma = rest.find(',');
      if (!allowed_ptxas_option(rest.substr(0, comma)))
        return false;
      rest = comma == std::string_view::npos ? std::string_view{} : rest.substr(comma + 1);
    }
    return true;
  }
  return false;
}

// Returns the number written just before `suffix` in `line` ("4096" for " bytes smem").
std::optional<int64_t> number_before(std::string_view line, std::string_view suffix) {
  auto at = line.find(suffix);
  if (at == std::string_view::npos)
    return std::nullopt;
  size_t begin = at;
  while (begin > 0 && std::isdigit(static_cast<unsigned char>(line[begin - 1])))
    --begin;
  if (begin == at)
    return std::nullopt;
  return std::strtoll(std::string(line.substr(begin, at - begin)).c_str(), nullptr, 10);
}

std::string demangle(const std::string& mangled) {
  int status = 0;
  char* text = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && text != nullptr ? std::string(text) : mangled;
  std::free(text);
  return name;
}

std::string trim_blanks_and_quotes(std::string_view text) {
  auto begin = text.find_first_not_of(" \t\r'");
  if (begin == std::string_view::npos)
    return {};
  auto end = text.find_last_not_of(" \t\r'");
  return std::string(text.substr(begin, end - begin + 1));
}

content_hasher hasher_for(const compile_request& request, const std::vector<std::string>& command,
                          const std::string& include_dir, const std::string& nvcc_version,
                          const std::string& abi_header, sandbox_mode sandbox) {
  content_hasher h;
  h.update("format", cache_format);
  // A source compiled outside the sandbox may have embedded what only the sandbox hides: a
  // sandboxed campaign never takes its shared object from the cache (unsandboxed keys are
  // as they were).
  if (sandbox == sandbox_mode::bubblewrap)
    h.update("sandbox", "bubblewrap");
  h.update("source", request.source);
  // command[0] is the nvcc path and the include folder's path is replaced: see the top.
  for (size_t i = 1; i < command.size(); ++i)
    h.update("flag", command[i] == include_dir ? std::string("<include_dir>") : command[i]);
  h.update("nvcc_version", nvcc_version);
  h.update("abi_header", abi_header);
  return h;
}

// -- cache entries ----------------------------------------------------------------------------

boost::json::object to_json(const kernel_resources& k) {
  return {{"name", k.name},
          {"mangled", k.mangled},
          {"registers", k.registers},
          {"shared_bytes", k.shared_bytes},
          {"stack_bytes", k.stack_bytes},
          {"spill_stores", k.spill_stores},
          {"spill_loads", k.spill_loads}};
}

int64_t int_field(const boost::json::object& o, const char* name) {
  const boost::json::value* v = o.if_contains(name);
  return v != nullptr && v->is_int64() ? v->get_int64() : 0;
}

std::string string_field(const boost::json::object& o, const char* name) {
  const boost::json::value* v = o.if_contains(name);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string{};
}

// Loads the entry in `dir` as a cache hit; nullopt when it is absent or unusable.
std::optional<compile_result> load_entry(const fs::path& dir) {
  auto text = base::read_text(dir / "result.json");
  if (!text)
    return std::nullopt;
  boost::json::error_code ec;
  boost::json::value doc = boost::json::parse(*text, ec);
  if (ec || !doc.is_object())
    return std::nullopt;
  const boost::json::object& o = doc.get_object();
  compile_result result;
  const boost::json::value* ok = o.if_contains("ok");
  result.ok = ok != nullptr && ok->is_bool() && ok->get_bool();
  result.key = string_field(o, "key");
  if (result.ok) {
    result.shared_object = dir / "kernel.so";
    std::error_code fs_ec;
    if (!fs::is_regular_file(result.shared_object, fs_ec))
      return std::nullopt;
  }
  result.diagnostics = base::read_text(dir / "diagnostics.txt").value_or("");
  if (const boost::json::value* kernels = o.if_contains("kernels");
      kernels && kernels->is_array()) {
    for (const boost::json::value& item : kernels->get_array()) {
      if (!item.is_object())
        continue;
      const boost::json::object& k = item.get_object();
      kernel_resources res;
      res.name = string_field(k, "name");
      res.mangled = string_field(k, "mangled");
      res.registers = static_cast<int32_t>(int_field(k, "registers"));
      res.shared_bytes = int_field(k, "shared_bytes");
      res.stack_bytes = int_field(k, "stack_bytes");
      res.spill_stores = int_field(k, "spill_stores");
      res.spill_loads = int_field(k, "spill_loads");
      result.kernels.push_back(std::move(res));
    }
  }
  result.cached = true;
  return result;
}

std::atomic<int64_t> build_counter{0};

} // namespace

// -- free functions ---------------------------------------------------------------------------

std::string name_source_in_diagnostics(const std::string& diagnostics,
                                       const std::string& source_name) {
  static constexpr std::string_view copy = "kernel.cu";
  std::string out;
  out.reserve(diagnostics.size());
  size_t i = 0;
  while (i < diagnostics.size()) {
    size_t at = diagnostics.find(copy, i);
    if (at == std::string::npos) {
      out.append(diagnostics, i, std::string::npos);
      break;
    }
    out.append(diagnostics, i, at - i);
    char before = at == 0 ? '\n' : diagnostics[at - 1];
    size_t after = at + copy.size();
    bool whole_name = before == '\n' || before == ' ' || before == '"' || before == '\'';
    // nvcc's front end: "kernel.cu(12): error: ..." -> "NAME:12: error: ...".
    size_t digits_end = after + 1;
    while (digits_end < diagnostics.size() &&
           std::isdigit(static_cast<unsigned char>(diagnostics[digits_end])))
      ++digits_end;
    if (whole_name && after < diagnostics.size() && diagnostics[after] == '(' &&
        digits_end > after + 1 && digits_end + 1 < diagnostics.size() &&
        diagnostics[digits_end] == ')' && diagnostics[digits_end + 1] == ':') {
      out += source_name + ":" + diagnostics.substr(after + 1, digits_end - after - 1) + ":";
      i = digits_end + 2;
      continue;
    }
    // The host compiler ("kernel.cu:12:5: error") and nvcc's summary ("compilation of
    // \"kernel.cu\"") name it plainly.
    bool name_ends = after == diagnostics.size() || diagnostics[after] == ':' ||
                     diagnostics[after] == '"' || diagnostics[after] == '\'' ||
                     diagnostics[after] == '\n' || diagnostics[after] == ' ';
    out += whole_name && name_ends ? source_name : std::string(copy);
    i = after;
  }
  return out;
}

std::string arch_for(int32_t cc_major, int32_t cc_minor) {
  // The 'a' variants unlock the architecture-specific features (wgmma, setmaxnreg, tcgen05)
  // that the fastest kernels use; their code runs only on that exact architecture.
  if (cc_major == 9 && cc_minor == 0)
    return "sm_90a";
  if (cc_major == 10 && cc_minor == 0)
    return "sm_100a";
  return "sm_" + std::to_string(cc_major) + std::to_string(cc_minor);
}

engine::expected<std::vector<std::string>> parse_ks_flags(const std::string& source) {
  std::vector<std::string> flags;
  std::istringstream lines(source);
  std::string line;
  for (int n = 0; n < ks_flags_scan_lines && std::getline(lines, line); ++n) {
    std::string text = trim_blanks_and_quotes(line);
    if (text.rfind("//", 0) != 0)
      continue;
    std::string body = trim_blanks_and_quotes(std::string_view(text).substr(2));
    if (body.rfind("ks-flags:", 0) != 0)
      continue;
    std::istringstream words(body.substr(9));
    std::string flag;
    while (words >> flag) {
      if (!allowed_flag(flag))
        return engine::fail(engine::errc::invalid_input, "ks-flags (line " + std::to_string(n + 1) +
                                                             "): '" + flag + "' is not allowed; " +
                                                             whitelist_text);
      flags.push_back(flag);
    }
  }
  return flags;
}

std::vector<kernel_resources> parse_ptxas_report(const std::string& text) {
  struct frame {
    int64_t stack = 0, spill_stores = 0, spill_loads = 0;
  };
  std::vector<kernel_resources> kernels;
  std::map<std::string, size_t> index; // mangled name -> position in kernels
  std::map<std::string, frame> frames; // "Function properties" of every function
  std::string current;                 // the entry function being compiled
  std::string properties_of;           // the function the next stack-frame line describes
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    if (auto at = line.find("Compiling entry function '"); at != std::string::npos) {
      auto begin = at + 26;
      auto end = line.find('\'', begin);
      current = line.substr(begin, end == std::string::npos ? std::string::npos : end - begin);
      if (index.find(current) == index.end()) {
        index[current] = kernels.size();
        kernel_resources k;
        k.mangled = current;
        k.name = demangle(current);
        kernels.push_back(std::move(k));
      }
    } else if (auto props = line.find("Function properties for "); props != std::string::npos) {
      properties_of = trim_blanks_and_quotes(std::string_view(line).substr(props + 24));
    } else if (line.find("bytes stack frame") != std::string::npos) {
      frame& f = frames[properties_of];
      f.stack = number_before(line, " bytes stack frame").value_or(0);
      f.spill_stores = number_before(line, " bytes spill stores").value_or(0);
      f.spill_loads = number_before(line, " bytes spill loads").value_or(0);
    } else if (line.find(" registers") != std::string::npos &&
               line.find("Used ") != std::string::npos && index.count(current) != 0) {
      kernel_resources& k = kernels[index[current]];
      k.registers = static_cast<int32_t>(number_before(line, " registers").value_or(0));
      k.shared_bytes = number_before(line, " bytes smem").value_or(0);
    }
  }
  for (kernel_resources& k : kernels) {
    if (auto f = frames.find(k.mangled); f != frames.end()) {
      k.stack_bytes = f->second.stack;
      k.spill_stores = f->second.spill_stores;
      k.spill_loads = f->second.spill_loads;
    }
  }
  return kernels;
}

// -- compiler ---------------------------------------------------------------------------------

engine::expected<void> compiler::check_tools(const compiler_options& options) {
  if (!arch_suffix(options.arch))
    return engine::fail(engine::errc::invalid_input,
                        "unknown GPU architecture '" + options.arch +
                            "': expected sm_<digits> with an optional 'a' or 'f' (sm_90a, sm_80)");
  auto nvcc = find_nvcc(options.nvcc);
  if (!nvcc)
    return tl::unexpected(nvcc.error());
  auto include_dir = find_include_dir(options.include_dir);
  if (!include_dir)
    return tl::unexpected(include_dir.error());
  return {};
}

engine::expected<compiler> compiler::create(compiler_options options) {
  if (auto tools = check_tools(options); !tools)
    return tl::unexpected(tools.error());
  options.nvcc = *find_nvcc(options.nvcc);
  options.include_dir = *find_include_dir(options.include_dir);
  if (options.cache_dir.empty())
    options.cache_dir = default_cache_dir();
  // Absolute: the bench worker that loads the shared objects runs in a folder of its own.
  options.cache_dir = fs::absolute(options.cache_dir);
  if (options.jobs <= 0)
    options.jobs = static_cast<int32_t>(std::max(1u, std::thread::hardware_concurrency()));

  auto version = run_to_completion({options.nvcc.string(), "--version"}, std::chrono::seconds{60});
  if (!version)
    return tl::unexpected(version.error());
  if (!version->status.success())
    return engine::fail(engine::errc::subprocess, options.nvcc.string() + " --version failed (" +
                                                      version->status.describe() +
                                                      "): " + version->err);

  compiler result;
  if (options.boundary.sandbox == sandbox_mode::bubblewrap) {
    auto support = probe_sandbox(options.boundary);
    if (!support)
      return tl::unexpected(support.error());
    result.sandbox_ = *support;
  }
  result.abi_header_ = base::read_text(options.include_dir / "kernelskill" / "abi.h").value_or("");
  result.nvcc_version_ = version->out;
  result.options_ = std::move(options);
  remove_stale_builds(result.options_.cache_dir / "compile");
  if (result.sandbox_)
    if (auto runs = result.check_sandboxed_nvcc(); !runs)
      return tl::unexpected(runs.error());
  return result;
}

std::vector<std::string> standard_nvcc_flags(const std::string& arch) {
  std::string sm = arch_suffix(arch).value_or("90a");
  return {"-shared", "-Xcompiler", "-fPIC",
          "-cudart", "shared",     "-std=c++17",
          "-O3",     "-lineinfo",  "-gencode=arch=compute_" + sm + ",code=sm_" + sm,
          "-Xptxas", "-v"};
}

engine::expected<void> compiler::check_sandboxed_nvcc() const {
  // Where remove_stale_builds() finds it, should we be killed before removing it.
  fs::path build = options_.cache_dir / "compile" / "sandbox" /
                   (".tmp-" + std::to_string(::getpid()) + "-" + std::to_string(build_counter++));
  std::error_code ec;
  if (!fs::create_directories(build, ec))
    return engine::fail(engine::errc::io, "cannot make " + build.string() +
                                              " to try nvcc in the "
                                              "sandbox: " +
                                              ec.message());
  auto ran = run_in_build({options_.nvcc.string(), "--version"}, build);
  fs::remove_all(build, ec);
  if (ran && ran->status.success())
    return {};
  std::string said(base::trim(ran ? ran->err : ran.error().message()));
  if (said.size() > 400) // its end says why
    said = "..." + said.substr(said.size() - 400);
  std::string why = ran ? ran->status.describe() + ": " + said : said;
  return engine::fail(engine::errc::subprocess,
                      options_.boundary.requested_by +
                          " but nvcc cannot run in bubblewrap's "
                          "sandbox on this host (" +
                          why + "; the sandbox shows /usr, " +
                          options_.nvcc.parent_path().parent_path().string() +
                          " and the include folder" +
                          (sandbox_->pid_namespace ? ""
                                                   : ", and no /proc: this host allows no pid "
                                                     "namespace") +
                          "): install the CUDA toolkit where the sandbox shows it, or run without "
                          "the sandbox");
}

std::vector<std::string> compiler::command_for(const compile_request& request) const {
  std::vector<std::string> command = {options_.nvcc.string()};
  for (std::string& flag : standard_nvcc_flags(options_.arch))
    command.push_back(std::move(flag));
  command.insert(command.end(), {"-I", options_.include_dir.string()});
  command.insert(command.end(), request.extra_flags.begin(), request.extra_flags.end());
  if (auto asked = parse_ks_flags(request.source)) // a refused list fails compile() instead
    command.insert(command.end(), asked->begin(), asked->end());
  return command;
}

std::string compiler::key_of(const compile_request& request) const {
  return hasher_for(request, command_for(request), options_.include_dir.string(), nvcc_version_,
                    abi_header_, sandbox_ ? sandbox_mode::bubblewrap : sandbox_mode::off)
      .hex_digest();
}

std::string compiler::key_dump(const compile_request& request) const {
  return hasher_for(request, command_for(request), options_.include_dir.string(), nvcc_version_,
                    abi_header_, sandbox_ ? sandbox_mode::bubblewrap : sandbox_mode::off)
      .debug_dump();
}

engine::expected<run_result> compiler::run_in_build(const std::vector<std::string>& command,
                                                    const fs::path& build) const {
  if (!sandbox_)
    return run_to_completion(command, options_.timeout, {}, build);
  std::vector<std::string> argv{sandbox_->bwrap.string()};
  // The toolkit where it is not under /usr (nvcc in <root>/bin), and our include folder.
  std::vector<fs::path> readable = {options_.nvcc.parent_path().parent_path(),
                                    options_.include_dir};
  for (std::string& arg : compile_sandbox_arguments(*sandbox_, readable, build))
    argv.push_back(std::move(arg));
  argv.insert(argv.end(), command.begin(), command.end());
  spawn_options spawn;
  spawn.env = worker_environment(current_environment(), options_.boundary.secret_env, "/tmp");
  spawn.cwd = build;
  return run_to_completion(argv, options_.timeout, {}, std::move(spawn));
}

compile_result compiler::compile(const compile_request& request) const {
  auto start = clock_type::now();
  std::vector<std::string> command = command_for(request);
  content_hasher hasher =
      hasher_for(request, command, options_.include_dir.string(), nvcc_version_, abi_header_,
                 sandbox_ ? sandbox_mode::bubblewrap : sandbox_mode::off);
  const std::string key = hasher.hex_digest();
  compile_result result;
  result.key = key;
  auto finish = [&](compile_result r) {
    r.key = key;
    r.wall_ms = ms_since(start);
    if (!request.source_name.empty())
      r.diagnostics = name_source_in_diagnostics(r.diagnostics, request.source_name);
    return r;
  };

  if (auto asked = parse_ks_flags(request.source); !asked) {
    result.diagnostics = asked.error().message() + "\n";
    return finish(std::move(result));
  }
  // nvcc quotes what it includes in its errors, and those go to a model: a candidate includes
  // the system's headers and ours, nothing else (engine/candidate_checks.hpp).
  if (auto refused = engine::refused_includes(request.source)) {
    result.diagnostics = *refused;
    return finish(std::move(result));
  }

  fs::path shard = options_.cache_dir / "compile" / result.key.substr(0, 2);
  fs::path entry = shard / result.key;
  std::error_code ec;
  if (auto hit = load_entry(entry)) {
    // A failure that says a write failed was the host's (cached before host faults were told
    // apart): compiled again.
    if (hit->ok || !write_failure_line(hit->diagnostics))
      return finish(std::move(*hit));
    fs::remove_all(entry, ec);
  }

  fs::create_directories(shard, ec);
  fs::path build = shard / (".tmp-" + result.key + "-" + std::to_string(::getpid()) + "-" +
                            std::to_string(build_counter++));
  if (ec || !fs::create_directory(build, ec) || !write_text(build / "kernel.cu", request.source)) {
    // Our own write: the source has no part in it.
    result.host_fault = true;
    result.diagnostics = "cannot write to the compile cache " + shard.string() + ": " +
                         (ec ? ec.message() : std::string("write failed")) + "\n";
    fs::remove_all(build, ec);
    return finish(std::move(result));
  }

  command.insert(command.end(), {"-o", "kernel.so", "kernel.cu"});
  auto run_nvcc = [&] { return run_in_build(command, build); };
  auto run = run_nvcc();
  // Killed by a signal (not our deadline): the OOM killer or another process may have sent it;
  // a second run tells.
  if (run && !run->status.timed_out && run->status.signal != 0) {
    std::string first = run->status.describe();
    run = run_nvcc();
    if (run && !run->status.timed_out && run->status.signal != 0)
      run->err = "nvcc was " + first + " the first time too\n" + run->err;
  }
  if (!run) {
    result.host_fault = true;
    result.diagnostics = "cannot run nvcc: " + run.error().message() + "\n";
    fs::remove_all(build, ec);
    return finish(std::move(result));
  }
  std::string output = run->out + run->err;
  // bubblewrap could not make the sandbox (it says so first, before nvcc runs): the host's
  // fault, not cached, whatever the source.
  if (sandbox_ && !run->status.success() && run->err.starts_with("bwrap: ")) {
    result.host_fault = true;
    result.diagnostics = "bubblewrap could not make nvcc's sandbox: " + run->err;
    fs::remove_all(build, ec);
    return finish(std::move(result));
  }
  if (run->status.timed_out || run->status.signal != 0) {
    // Not cached: a verdict on the machine's load, not on the source.
    result.timed_out = run->status.timed_out;
    result.diagnostics =
        run->status.timed_out
            ? "nvcc timed out after " + std::to_string(options_.timeout.count()) +
                  " ms compiling " + request.label + "\n"
            : "nvcc was " + run->status.describe() + " compiling " + request.label + "\n";
    result.diagnostics += output;
    fs::remove_all(build, ec);
    return finish(std::move(result));
  }
  // nvcc could not write its files, and the disk agrees: the host's fault, not cached.
  if (run->status.code != 0) {
    if (auto said = write_failure_line(output)) {
      std::vector<fs::path> folders = {shard, fs::temp_directory_path(ec)};
      if (auto evidence = disk_fault(folders, options_.min_free_bytes)) {
        result.host_fault = true;
        result.diagnostics = "the host cannot take the compile's files (" + *evidence +
                             "); nvcc said: " + *said + "\n" + output;
        fs::remove_all(build, ec);
        return finish(std::move(result));
      }
    }
  }

  result.diagnostics = output;
  result.ok = run->status.code == 0 && fs::is_regular_file(build / "kernel.so", ec);
  if (run->status.code == 0 && !result.ok)
    result.diagnostics += "nvcc exited with code 0 but wrote no kernel.so\n";
  if (result.ok)
    result.kernels = parse_ptxas_report(run->err);

  boost::json::array kernels;
  for (const kernel_resources& k : result.kernels)
    kernels.push_back(to_json(k));
  boost::json::array argv;
  for (const std::string& arg : command)
    argv.push_back(boost::json::string(arg));
  boost::json::object doc = {{"format", cache_format},
                             {"ok", result.ok},
                             {"key", result.key},
                             {"label", request.label},
                             {"nvcc_exit", run->status.describe()},
                             {"nvcc_ms", run->wall_ms},
                             {"command", std::move(argv)},
                             {"key_input", hasher.debug_dump()},
                             {"kernels", std::move(kernels)}};
  bool written = write_text(build / "diagnostics.txt", result.diagnostics) &&
                 write_text(build / "result.json", encode::serialize(doc));
  if (written) {
    // A broken entry (its kernel.so deleted, say) is in the way of the rename: replace it.
    if (fs::exists(entry, ec) && !load_entry(entry))
      fs::remove_all(entry, ec);
    fs::rename(build, entry, ec);
  }
  if (!written || ec) {
    // Another process stored this key first (ENOTEMPTY), or the cache is unwritable.
    fs::remove_all(build, ec);
    if (auto stored = load_entry(entry)) {
      stored->cached = false;
      return finish(std::move(*stored));
    }
    // nvcc's work was done: what failed was our write into the cache, the host's fault.
    result.host_fault = result.ok;
    result.ok = false;
    result.diagnostics += "cannot store the result in the compile cache " + entry.string() + "\n";
    return finish(std::move(result));
  }
  if (result.ok)
    result.shared_object = entry / "kernel.so";
  return finish(std::move(result));
}

std::vector<compile_result>
compiler::compile_all(const std::vector<compile_request>& requests) const {
  // Requests with one key compile once: the first is compiled, the others copy its result.
  std::vector<size_t> first_of(requests.size());
  std::vector<size_t> unique;
  std::unordered_map<std::string, size_t> seen;
  for (size_t i = 0; i < requests.size(); ++i) {
    auto [it, inserted] = seen.emplace(key_of(requests[i]), i);
    first_of[i] = it->second;
    if (inserted)
      unique.push_back(i);
  }

  std::vector<compile_result> results(requests.size());
  std::atomic<size_t> next{0};
  auto worker = [&] {
    for (size_t u = next++; u < unique.size(); u = next++) {
      size_t i = unique[u];
      try {
        results[i] = compile(requests[i]);
      } catch (const std::exception& e) {
        results[i].diagnostics = std::string("internal error while compiling: ") + e.what() + "\n";
      }
    }
  };
  size_t threads = std::min<size_t>(static_cast<size_t>(std::max(1, options_.jobs)), unique.size());
  std::vector<std::thread> pool;
  for (size_t t = 1; t < threads; ++t)
    pool.emplace_back(worker);
  worker(); // the calling thread is one of the pool
  for (std::thread& t : pool)
    t.join();

  for (size_t i = 0; i < requests.size(); ++i) {
    if (first_of[i] != i) {
      results[i] = results[first_of[i]];
      results[i].cached = true;
      results[i].wall_ms = 0;
    }
  }
  return results;
}

} // namespace ks::gpu
