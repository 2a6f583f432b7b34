#include "base/error.hpp"

namespace ks::base {

const char* to_string(errc code) noexcept {
  switch (code) {
  case errc::invalid_input:
    return "invalid_input";
  case errc::io:
    return "io";
  case errc::not_found:
    return "not_found";
  case errc::subprocess:
    return "subprocess";
  case errc::timeout:
    return "timeout";
  case errc::protocol:
    return "protocol";
  case errc::internal:
    return "internal";
  case errc::transient:
    return "transient";
  case errc::bad_reply:
    return "bad_reply";
  case errc::cancelled:
    return "cancelled";
  case errc::budget_spent:
    return "budget_spent";
  case errc::damaged:
    return "damaged";
  }
  return "unknown";
}

} // namespace ks::base
