#pragma once

// How many GPUs the bench workers will see, read without starting CUDA: a worker takes a few
// hundred milliseconds to initialize CUDA before it can count the devices, so with a good
// guess the workers of all GPUs start side by side instead of one after the first.

#include <cstdint>
#include <filesystem>
#include <optional>

namespace ks::gpu {

/// The number of GPUs CUDA will show: the entries of `cuda_visible_devices` when it is set
/// (null: unset), else the GPUs under `driver_gpus` (the NVIDIA driver's /proc folder, one
/// entry per GPU). A hint, never the truth: CUDA stops at an invalid entry of the variable and
/// MIG splits a GPU, so the count a worker reports rules. Empty when neither source tells.
std::optional<int32_t> visible_device_count_hint(const char* cuda_visible_devices,
                                                 const std::filesystem::path& driver_gpus);

/// The same, from this process's environment and /proc/driver/nvidia/gpus.
std::optional<int32_t> visible_device_count_hint();

} // namespace ks::gpu
