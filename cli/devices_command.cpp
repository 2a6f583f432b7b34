#include "cli/devices_command.hpp"

#include "cli/calibration_cache.hpp"
#include "cli/environment.hpp"
#include "cli/exit_codes.hpp"
#include "cli/help_format.hpp"
#include "cli/result_json.hpp"
#include "gpu/device_json.hpp"
#include "gpu/worker_client.hpp"

#include <CLI/CLI.hpp>
#include <boost/json.hpp>

#include <iostream>
#include <sstream>

namespace ks::cli {

namespace json = boost::json;

namespace {

std::string version_text(int32_t v) {
  if (v <= 0)
    return "unknown";
  return std::to_string(v / 1000) + "." + std::to_string((v % 1000) / 10);
}

std::string mhz(int32_t khz) {
  return khz > 0 ? std::to_string(khz / 1000) + " MHz" : "not reported";
}

void print_device(std::ostream& out, const gpu::device_info& d,
                  const std::optional<cached_calibration>& peaks, const std::string& peaks_error) {
  out << "device " << d.index << ": " << d.name << "\n";
  out << "  uuid          " << (d.uuid.empty() ? "unknown" : d.uuid) << "\n";
  out << "  arch          " << d.arch << " (compute capability " << d.cc_major << "." << d.cc_minor
      << "), " << d.sms << " SMs\n";
  out << "  memory        " << format_bytes(static_cast<double>(d.memory_bytes)) << ", "
      << d.mem_bus_bits << "-bit bus, memory clock " << mhz(d.mem_clock_khz) << "\n";
  out << "  L2 cache      " << format_bytes(static_cast<double>(d.l2_bytes)) << "\n";
  out << "  shared memory " << format_bytes(static_cast<double>(d.smem_per_block_optin))
      << " per block (opt-in)\n";
  out << "  SM clock      " << mhz(d.sm_clock_khz) << "\n";
  if (peaks) {
    out << "  peaks         " << format_number(peaks->peaks.dram_gbps, 4) << " GB/s DRAM (copy), "
        << format_number(peaks->peaks.fp32_gflops, 4) << " GFLOP/s fp32 FMA ("
        << (peaks->cached ? "cached in " : "measured now, cached in ") << peaks->file.string()
        << ")\n";
  } else {
    out << "  peaks         calibration failed: " << peaks_error << "\n";
  }
}

// Returns the message for a failure to reach device 0, with what the user can do.
std::string describe_start_failure(const gpu::failure& f) {
  if (f.kind == gpu::failure_kind::no_device) {
    if (f.message.rfind("no CUDA device", 0) == 0)
      return f.message;
    return "no CUDA device: " + f.message;
  }
  return std::string(gpu::to_string(f.kind)) + ": " + f.message;
}

} // namespace

CLI::App* add_devices_command(CLI::App& app, devices_options& opt) {
  CLI::App* cmd = app.add_subcommand(
      "devices",
      "Lists the CUDA devices and their measured peaks. For each: name, architecture, SMs, "
      "memory, L2 cache, clocks as the runtime reports them, and the measured peaks (DRAM "
      "bandwidth by a device copy, fp32 FMA rate) that the roofline uses. The peaks are "
      "measured once per device and cached in <cache>/calibration/<uuid>.json.");
  cmd->add_flag("--json", opt.json, "Print one JSON object instead of text");
  cmd->add_flag("--recalibrate", opt.recalibrate,
                "Measure the peaks again even if they are cached");
  cmd->add_option("--cache-dir", opt.cache_dir,
                  "Cache folder (default: $XDG_CACHE_HOME/kernelskill or ~/.cache/kernelskill)")
      ->type_name("DIR");
  cmd->add_option("--worker", opt.worker,
                  "Bench worker executable (default: ks-bench-worker beside kernelskill, "
                  "else $KS_WORKER, else PATH)")
      ->type_name("PATH");
  cmd->footer(exit_code_help(command_codes::devices(), help_width()));
  return cmd;
}

command_result run_devices(const devices_options& opt) {
  const auto cache_dir = cache_dir_or_default(opt.cache_dir);
  gpu::worker_options wopt;
  wopt.executable = worker_or_default(opt.worker);
  wopt.device = 0;

  auto fail_with = [&](const gpu::failure& f, std::string message) -> command_result {
    if (opt.json) {
      json::object o{{"ok", false}, {"failure", to_json(f)}};
      o["failure"].as_object()["message"] = message;
      std::cout << pretty(o);
    }
    return stop(f.kind, std::move(message));
  };

  gpu::worker_client first(wopt);
  auto info0 = first.info();
  if (!info0)
    return fail_with(info0.error(), describe_start_failure(info0.error()));

  json::array devices_json;
  std::ostringstream text;
  const int32_t count = std::max<int32_t>(1, info0->device_count);
  text << count << (count == 1 ? " CUDA device" : " CUDA devices") << " (driver "
       << version_text(info0->driver_version) << ", runtime "
       << version_text(info0->runtime_version) << ")\n";
  std::optional<gpu::failure> first_failure;

  for (int32_t index = 0; index < count; ++index) {
    // One worker per device, as a campaign has: each binds its device at start.
    std::optional<gpu::worker_client> other;
    gpu::worker_client* client = &first;
    gpu::device_info info;
    if (index == 0) {
      info = *info0;
    } else {
      wopt.device = index;
      other.emplace(wopt);
      client = &*other;
      auto got = client->info();
      if (!got) {
        text << "device " << index << ": " << describe_start_failure(got.error()) << "\n";
        devices_json.push_back(json::object{{"index", index}, {"failure", to_json(got.error())}});
        first_failure = first_failure.value_or(got.error());
        continue;
      }
      info = *got;
    }
    auto peaks = calibrate_cached(*client, info, cache_dir,
                                  opt.recalibrate ? recalibrate::yes : recalibrate::no);
    client->shutdown();
    json::object dj = to_json(info);
    if (peaks) {
      json::object pj = gpu::calibration_json(peaks->peaks);
      pj["cached"] = peaks->cached;
      pj["file"] = peaks->file.string();
      dj["peaks"] = std::move(pj);
      print_device(text, info, *peaks, {});
    } else {
      dj["peaks_failure"] = to_json(peaks.error());
      print_device(text, info, std::nullopt,
                   std::string(gpu::to_string(peaks.error().kind)) + ": " + peaks.error().message);
      first_failure = first_failure.value_or(peaks.error());
    }
    devices_json.push_back(std::move(dj));
  }

  if (opt.json) {
    json::object o{
        {"ok", !first_failure}, {"device_count", count}, {"devices", std::move(devices_json)}};
    std::cout << pretty(o);
  } else {
    std::cout << text.str();
  }
  if (first_failure)
    return stop(first_failure->kind, "not every device could be read or calibrated: " +
                                         std::string(gpu::to_string(first_failure->kind)) + ": " +
                                         first_failure->message);
  return {};
}

} // namespace ks::cli
