#include "cli/calibration_cache.hpp"

#include "base/text.hpp"
#include "cli/environment.hpp"
#include "cli/result_json.hpp"
#include "gpu/device_json.hpp"

#include <boost/json.hpp>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <sstream>
#include <system_error>

namespace ks::cli {

namespace fs = std::filesystem;
namespace json = boost::json;

namespace {

double ms_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start)
      .count();
}

// Returns `text` with every character outside [A-Za-z0-9_.-] replaced by '_'.
std::string file_name_safe(const std::string& text) {
  std::string out = text;
  for (char& c : out) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '_' || c == '-' || c == '.';
    if (!ok)
      c = '_';
  }
  return out;
}

std::optional<gpu::calibration> read_cache(const fs::path& file, const gpu::device_info& device) {
  std::optional<std::string> text = base::read_text(file);
  if (!text)
    return std::nullopt;
  std::error_code ec;
  json::value v = json::parse(*text, ec);
  if (ec || !v.is_object())
    return std::nullopt;
  // A file of another device (a reused uuid-less name) is not ours.
  const json::value* uuid = v.get_object().if_contains("uuid");
  if (uuid == nullptr || !uuid->is_string() || uuid->get_string() != device.uuid)
    return std::nullopt;
  const json::value* peaks = v.get_object().if_contains("peaks");
  return peaks ? gpu::usable_calibration(*peaks) : std::nullopt;
}

void write_cache(const fs::path& file, const gpu::device_info& device,
                 const gpu::calibration& peaks) {
  std::error_code ec;
  fs::create_directories(file.parent_path(), ec);
  json::object o{{"uuid", device.uuid},
                 {"name", device.name},
                 {"arch", device.arch},
                 {"driver_version", device.driver_version},
                 {"device", gpu::device_info_json(device)},
                 {"measured_at_unix_s", std::chrono::duration_cast<std::chrono::seconds>(
                                            std::chrono::system_clock::now().time_since_epoch())
                                            .count()},
                 {"peaks", gpu::calibration_json(peaks)}};
  // Write beside, then rename: a reader never sees half a file.
  fs::path tmp = file;
  tmp += ".tmp" + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << pretty(o);
    if (!out) {
      warn("cannot write the calibration cache " + file.string() +
           "; the device will be calibrated again next time");
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, file, ec);
  if (ec) {
    warn("cannot write the calibration cache " + file.string() + ": " + ec.message());
    fs::remove(tmp, ec);
  }
}

} // namespace

fs::path calibration_file(const fs::path& cache_dir, const gpu::device_info& device) {
  std::string name = device.uuid.empty()
                         ? "device" + std::to_string(device.index) + "-" + device.name
                         : device.uuid;
  return cache_dir / "calibration" / (file_name_safe(name) + ".json");
}

gpu::job_result<cached_calibration> calibrate_cached(gpu::worker_client& client,
                                                     const gpu::device_info& device,
                                                     const fs::path& cache_dir, recalibrate again) {
  auto start = std::chrono::steady_clock::now();
  cached_calibration result;
  result.file = calibration_file(cache_dir, device);
  if (again == recalibrate::no && !device.uuid.empty()) {
    if (auto peaks = read_cache(result.file, device)) {
      result.peaks = *peaks;
      result.cached = true;
      result.ms = ms_since(start);
      return result;
    }
  }
  progress("calibrating device " + std::to_string(device.index) + " (" + device.name +
           "): measuring peak bandwidth and FMA rate, once per device...");
  auto measured = client.calibrate();
  if (!measured)
    return tl::unexpected(measured.error());
  result.peaks = *measured;
  if (!device.uuid.empty())
    write_cache(result.file, device, result.peaks);
  result.ms = ms_since(start);
  return result;
}

engine::gpu_memory memory_target(const fs::path& cache_dir, std::optional<double> gigabytes) {
  if (gigabytes) {
    engine::gpu_memory given = engine::assumed_gpu_memory();
    given.bytes = static_cast<int64_t>(*gigabytes * 1e9);
    given.origin = "as --gpu-memory says";
    given.assumed = false;
    return given;
  }
  std::optional<engine::gpu_memory> smallest;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(cache_dir / "calibration", ec)) {
    if (entry.path().extension() != ".json")
      continue;
    std::optional<std::string> text = base::read_text(entry.path());
    if (!text)
      continue;
    std::error_code parse_ec;
    json::value v = json::parse(*text, parse_ec);
    const json::object* file = parse_ec ? nullptr : v.if_object();
    const json::value* device = file != nullptr ? file->if_contains("device") : nullptr;
    if (device == nullptr || !device->is_object())
      continue; // written before files recorded the device
    try {
      gpu::device_info info = gpu::device_info_from_json(device->get_object());
      if (info.memory_bytes <= 0 || (smallest && smallest->bytes <= info.memory_bytes))
        continue;
      engine::gpu_memory g;
      g.bytes = info.memory_bytes;
      g.l2_bytes = info.l2_bytes;
      g.name = info.name;
      g.origin = "from the calibration cache " + (cache_dir / "calibration").string();
      smallest = g;
    } catch (const std::exception&) {
      continue; // a file of another version: not ours to judge
    }
  }
  if (smallest)
    return *smallest;
  engine::gpu_memory assumed = engine::assumed_gpu_memory();
  assumed.origin += " (`kernelskill devices` on the GPU host records its GPUs in " +
                    (cache_dir / "calibration").string() + ")";
  return assumed;
}

} // namespace ks::cli
