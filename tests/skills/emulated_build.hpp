#pragma once

// Building a CUDA source for the CPU emulator of memops_cuda_emulator.hpp: the source rewrite
// that turns every kernel launch and every __shared__ declaration into what the emulator runs,
// and the host compile (g++) into a shared object whose ks_forward runs on the emulator. Used
// by the tests that run kernels without a GPU (tests/skills/memops_skills_test.cpp,
// tests/engine/graph_reference_test.cpp).

#include "tests/test_context.hpp"

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>
#include <string>
#include <vector>

namespace ks::test {

/// Returns `cuda` rewritten for the host compiler and memops_cuda_emulator.hpp: every launch
/// `k<<<grid, block, smem, stream>>>(args)` becomes ks_emu::launch of a lambda that calls k with
/// the args; every `__shared__ T name[dims];` a per-block variable; `extern __shared__ T
/// name[];` a pointer to the block's dynamic shared memory.
inline std::string emulation_source(const std::string& cuda) {
  std::string src;
  {
    static const std::regex shared(
        R"((extern\s+)?__shared__\s+([\w:<>, ]+?)\s+(\w+)\s*((?:\[[^\]]*\])*)\s*;)");
    int id = 0;
    auto it = std::sregex_iterator(cuda.begin(), cuda.end(), shared);
    size_t at = 0;
    for (; it != std::sregex_iterator(); ++it) {
      const std::smatch& m = *it;
      src += cuda.substr(at, static_cast<size_t>(m.position()) - at);
      if (m[1].matched)
        src +=
            m[2].str() + "* " + m[3].str() + " = (" + m[2].str() + "*)::ks_emu::dynamic_shared();";
      else
        src += "auto& " + m[3].str() + " = ::ks_emu::block_shared<" + m[2].str() + m[4].str() +
               ">(" + std::to_string(++id) + ");";
      at = static_cast<size_t>(m.position() + m.length());
    }
    src += cuda.substr(at);
  }
  std::string out;
  size_t pos = 0;
  for (;;) {
    size_t open = src.find("<<<", pos);
    if (open == std::string::npos) {
      out += src.substr(pos);
      return out;
    }
    size_t begin = open; // the kernel's name, template arguments included
    if (src[begin - 1] == '>') {
      int depth = 0;
      do {
        --begin;
        depth += src[begin] == '>' ? 1 : src[begin] == '<' ? -1 : 0;
      } while (depth > 0);
    }
    while (begin > 0 && (std::isalnum(static_cast<unsigned char>(src[begin - 1])) ||
                         src[begin - 1] == '_' || src[begin - 1] == ':'))
      --begin;
    size_t close = src.find(">>>", open);
    std::vector<std::string> config{""};
    int depth = 0;
    for (size_t i = open + 3; i < close; ++i) {
      char c = src[i];
      depth += (c == '(' || c == '[' || c == '{') ? 1 : (c == ')' || c == ']' || c == '}') ? -1 : 0;
      if (c == ',' && depth == 0)
        config.emplace_back();
      else
        config.back() += c;
    }
    size_t args_open = src.find('(', close);
    size_t args_close = args_open;
    depth = 0;
    do {
      depth += src[args_close] == '(' ? 1 : src[args_close] == ')' ? -1 : 0;
      ++args_close;
    } while (depth > 0);
    out += src.substr(pos, begin - pos);
    out += "::ks_emu::launch(dim3(" + config[0] + "), dim3(" + config[1] + "), (size_t)(" +
           (config.size() > 2 ? config[2] : std::string("0")) + "), [=]() { " +
           src.substr(begin, open - begin) + src.substr(args_open, args_close - args_open) + "; })";
    pos = args_close;
  }
}

/// Compiles `cuda` for the emulator into a shared object (cached by content in `dir`); returns
/// its path, or empty with the compiler's output in `log`.
inline std::filesystem::path emulated(const std::string& cuda, const std::filesystem::path& dir,
                                      std::string& log) {
  std::string src = emulation_source(cuda);
  std::filesystem::create_directories(dir);
  std::filesystem::path include = dir / "include";
  std::filesystem::create_directories(include);
  {
    std::string header =
        "#pragma once\n#include \"" +
        (test::source_dir() / "tests" / "skills" / "memops_cuda_emulator.hpp").string() + "\"\n";
    if (test::read_file(include / "cuda_runtime.h") != header)
      std::ofstream(include / "cuda_runtime.h") << header;
  }
  std::string key = std::to_string(std::hash<std::string>{}(
      src + test::read_file(test::source_dir() / "tests" / "skills" / "memops_cuda_emulator.hpp")));
  std::filesystem::path so = dir / (key + ".so");
  if (std::filesystem::exists(so))
    return so;
  std::filesystem::path cpp = dir / (key + ".cpp");
  std::ofstream(cpp) << src;
  std::filesystem::path out = dir / (key + ".log");
  std::string command = "g++ -std=c++17 -O1 -shared -fPIC -w -I" + include.string() + " -I" +
                        (test::source_dir() / "gpu" / "include").string() + " -o " +
                        (dir / (key + ".tmp.so")).string() + " " + cpp.string() + " > " +
                        out.string() + " 2>&1";
  if (std::system(command.c_str()) != 0) {
    log = test::read_file(out);
    return {};
  }
  std::filesystem::rename(dir / (key + ".tmp.so"), so);
  return so;
}

} // namespace ks::test
