// libFuzzer target: the elementwise operation of a manifest (engine/elementwise_expression.cpp),
// parsed over three inputs and written out in CUDA and torch. Run by run_fuzzer.sh (ctest
// "fuzz: elementwise").

#include "engine/elementwise_expression.hpp"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::vector<std::string> inputs{"x", "y", "z"};
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto e = ks::engine::elementwise_expression::parse(text, inputs);
  if (e && (e->cuda().empty() || e->torch().empty()))
    __builtin_trap();
  return 0;
}
