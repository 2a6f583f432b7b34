// libFuzzer target: a model endpoint's answer (agents/model_protocol.cpp) read as JSON by
// json/decode's bounded parse, as each API's reply and as an error body. Run by run_fuzzer.sh
// (ctest "fuzz: json").

#include "agents/model_protocol.hpp"
#include "json/decode.hpp"

#include <cstddef>
#include <cstdint>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  try {
    (void)ks::decode::parse(text, 1 << 20);
  } catch (const ks::decode::malformed&) {
  }
  for (auto api : {ks::agents::api_kind::openai, ks::agents::api_kind::anthropic}) {
    auto reply = ks::agents::parse_model_reply(api, text);
    if (reply && (reply->input_tokens < 0 || reply->output_tokens < 0))
      __builtin_trap();
  }
  (void)ks::agents::error_summary(text);
  return 0;
}
