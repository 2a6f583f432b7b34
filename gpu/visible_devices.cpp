#include "gpu/visible_devices.hpp"

#include <cstdlib>
#include <string_view>
#include <system_error>

namespace ks::gpu {

std::optional<int32_t> visible_device_count_hint(const char* cuda_visible_devices,
                                                 const std::filesystem::path& driver_gpus) {
  if (cuda_visible_devices != nullptr) {
    // "0,1", "GPU-<uuid>,MIG-<uuid>": one device per non-empty entry. An empty variable hides
    // every device, which the first worker reports in its own words.
    std::string_view list = cuda_visible_devices;
    int32_t count = 0;
    while (!list.empty()) {
      size_t comma = list.find(',');
      std::string_view entry = list.substr(0, comma);
      if (entry.find_first_not_of(" \t") != std::string_view::npos)
        ++count;
      if (comma == std::string_view::npos)
        break;
      list.remove_prefix(comma + 1);
    }
    return count > 0 ? std::optional<int32_t>(count) : std::nullopt;
  }
  std::error_code ec;
  int32_t count = 0;
  for (std::filesystem::directory_iterator i(driver_gpus, ec), end; !ec && i != end;
       i.increment(ec))
    ++count;
  if (ec || count == 0)
    return std::nullopt;
  return count;
}

std::optional<int32_t> visible_device_count_hint() {
  return visible_device_count_hint(std::getenv("CUDA_VISIBLE_DEVICES"), "/proc/driver/nvidia/gpus");
}

} // namespace ks::gpu
