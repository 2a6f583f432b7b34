#include "config/error.hpp"

namespace ks::config {

const char* to_string(errc code) noexcept {
  switch (code) {
  case errc::invalid_input:
    return "invalid_input";
  case errc::io:
    return "io";
  case errc::not_found:
    return "not_found";
  }
  return "unknown";
}

} // namespace ks::config
