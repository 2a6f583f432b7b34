// libFuzzer target: the expression language of skill files (engine/expression.cpp), parsed and
// evaluated over facts that include the integer extremes, so that every overflow path runs.
// Built and run by run_fuzzer.sh (ctest "fuzz: expression") with UBSan, which turns a signed
// overflow into a failure.

#include "engine/expression.hpp"

#include <cstddef>
#include <cstdint>
#include <limits>
#include <string_view>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string_view text(reinterpret_cast<const char*>(data), size);
  auto e = ks::engine::expression::parse(text);
  if (!e)
    return 0;
  static const ks::engine::fact_map facts{
      {"threads", int64_t{256}},
      {"n", int64_t{0}},
      {"m", int64_t{-1}},
      {"big", std::numeric_limits<int64_t>::max()},
      {"small", std::numeric_limits<int64_t>::min()},
      {"eps", 1e-5},
      {"inf", std::numeric_limits<double>::infinity()},
      {"task.op", std::string("relu")},
  };
  (void)e->names();
  (void)e->holds(facts);
  (void)e->holds({});
  return 0;
}
