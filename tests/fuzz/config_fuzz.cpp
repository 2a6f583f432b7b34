// libFuzzer target: a campaign config (config/campaign_config.cpp over toml++), parsed and
// validated from text, then written back as TOML when it is valid. Run by run_fuzzer.sh (ctest
// "fuzz: config"). Whatever the text, a config or a list of FILE:LINE:COL errors, never a
// signal; and a config that loads writes a text that loads again.

#include "config/campaign_config.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto config = ks::config::parse_campaign_config(text, "fuzz.toml");
  if (!config)
    return 0;
  std::string written = ks::config::config_text(*config);
  if (!ks::config::parse_campaign_config(written, "written.toml"))
    __builtin_trap();
  return 0;
}
