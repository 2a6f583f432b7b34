#include "actors/messages.hpp"

namespace ks::actors {

const char* to_string(bench_kind k) noexcept {
  switch (k) {
  case bench_kind::info:
    return "info";
  case bench_kind::calibrate:
    return "calibrate";
  case bench_kind::verify:
    return "verify";
  case bench_kind::time:
    return "time";
  }
  return "unknown";
}

} // namespace ks::actors
