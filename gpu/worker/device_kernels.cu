// Device helpers of the bench worker (see device_kernels.hpp).
//
// Random inputs come from a counter-based hash (SplitMix64 of seed ^ index), not from a
// stateful generator, so a tensor depends only on its seed: the reference's outputs for a
// seed can be cached, and a verification failure can be reproduced from the seed alone.
// The comparison reduces per warp and issues one atomic per warp, so comparing an 8 GB
// output costs about as much as reading it; errors are accumulated in double so that the
// norm-relative error resolves float32's 1e-7 level on a billion elements.

#include "gpu/worker/device_kernels.hpp"
#include "kernelskill/abi.h"

#include <climits>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cfloat>
#include <cmath>
#include <cstring>

namespace ks::gpu::worker {

namespace {

constexpr int threads = 256;

int blocks_for(int64_t n) {
  // A grid-stride loop with enough blocks to fill any current GPU several times over.
  int64_t b = (n + threads - 1) / threads;
  return static_cast<int>(b < 8192 ? (b > 0 ? b : 1) : 8192);
}

__device__ __forceinline__ uint64_t splitmix64(uint64_t x) {
  x += 0x9E3779B97F4A7C15ull;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
  return x ^ (x >> 31);
}

// Uniform on [0, 1) with 53 random bits.
__device__ __forceinline__ double unit(uint64_t bits) {
  return static_cast<double>(bits >> 11) * (1.0 / 9007199254740992.0);
}

template <class T>
__device__ __forceinline__ T from_double(double v) {
  return static_cast<T>(v);
}
template <>
__device__ __forceinline__ __half from_double<__half>(double v) {
  return __double2half(v);
}
template <>
__device__ __forceinline__ __nv_bfloat16 from_double<__nv_bfloat16>(double v) {
  return __double2bfloat16(v);
}

template <class T>
__device__ __forceinline__ double to_double(T v) {
  return static_cast<double>(v);
}
template <>
__device__ __forceinline__ double to_double<__half>(__half v) {
  return static_cast<double>(__half2float(v));
}
template <>
__device__ __forceinline__ double to_double<__nv_bfloat16>(__nv_bfloat16 v) {
  return static_cast<double>(__bfloat162float(v));
}

// The value of element `i` of a tensor drawn from `dist` with `seed`: a pure function of its
// arguments, so that perturb_kernel can restore any element to what fill_kernel wrote.
__device__ __forceinline__ double draw(int64_t i, int32_t dist, uint64_t seed, int64_t low,
                                       int64_t high) {
  uint64_t h1 = splitmix64(seed ^ splitmix64(static_cast<uint64_t>(i)));
  switch (dist) {
  case 0: { // Box-Muller with a second independent draw
    uint64_t h2 = splitmix64(h1 ^ 0xD1B54A32D192ED03ull);
    double u1 = 1.0 - unit(h1); // (0, 1]
    double u2 = unit(h2);
    return sqrt(-2.0 * log(u1)) * cospi(2.0 * u2);
  }
  case 1:
    return 2.0 * unit(h1) - 1.0;
  case 2:
    return unit(h1);
  case 3:
    return 0.5 + unit(h1);
  default: {
    uint64_t span = static_cast<uint64_t>(high - low);
    return static_cast<double>(low + static_cast<int64_t>(span ? h1 % span : 0));
  }
  }
}

template <class T>
__global__ void fill_kernel(T* data, int64_t n, int32_t dist, uint64_t seed, int64_t low,
                            int64_t high) {
  for (int64_t i = blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < n;
       i += int64_t{gridDim.x} * blockDim.x)
    data[i] = from_double<T>(draw(i, dist, seed, low, high));
}

// One block: first every restored element gets its drawn value back, then every perturbed
// one a value drawn with the fresh seed (the barrier orders the two when they overlap).
template <class T>
__global__ void perturb_kernel(T* data, int32_t dist, int64_t low, int64_t high, uint64_t base_seed,
                               element_positions restore, uint64_t fresh_seed,
                               element_positions fresh) {
  int t = threadIdx.x;
  if (t < restore.count)
    data[restore.index[t]] = from_double<T>(draw(restore.index[t], dist, base_seed, low, high));
  __syncthreads();
  if (t < fresh.count)
    data[fresh.index[t]] = from_double<T>(draw(fresh.index[t], dist, fresh_seed, low, high));
}

// The keystream that masks resident reference outputs: 8 bytes per 8-byte unit of a buffer.
__device__ __forceinline__ uint64_t keystream(uint64_t key, uint64_t unit_index) {
  return splitmix64(key ^ (unit_index * 0xD6E8FEB86659FD93ull));
}

// Returns the bits of `sizeof(T)`-byte element `i` of a buffer masked with `key`, unmasked.
template <class T>
__device__ __forceinline__ T unmasked(const T* data, int64_t i, uint64_t key) {
  T value = data[i];
  if (key == 0)
    return value;
  uint64_t offset = static_cast<uint64_t>(i) * sizeof(T);
  uint64_t stream = keystream(key, offset / 8) >> ((offset % 8) * 8);
  if constexpr (sizeof(T) == 8) {
    uint64_t bits;
    memcpy(&bits, &value, 8);
    bits ^= stream;
    memcpy(&value, &bits, 8);
  } else if constexpr (sizeof(T) == 4) {
    uint32_t bits;
    memcpy(&bits, &value, 4);
    bits ^= static_cast<uint32_t>(stream);
    memcpy(&value, &bits, 4);
  } else if constexpr (sizeof(T) == 2) {
    uint16_t bits;
    memcpy(&bits, &value, 2);
    bits ^= static_cast<uint16_t>(stream);
    memcpy(&value, &bits, 2);
  } else {
    uint8_t bits;
    memcpy(&bits, &value, 1);
    bits ^= static_cast<uint8_t>(stream);
    memcpy(&value, &bits, 1);
  }
  return value;
}

__global__ void mask_kernel(uint64_t* units, int64_t n_units, unsigned char* tail, int64_t n_tail,
                            uint64_t key) {
  int64_t tid = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = tid; i < n_units; i += stride)
    units[i] ^= keystream(key, static_cast<uint64_t>(i));
  if (tid == 0 && n_tail > 0) {
    uint64_t stream = keystream(key, static_cast<uint64_t>(n_units));
    for (int64_t b = 0; b < n_tail; ++b)
      tail[b] ^= static_cast<unsigned char>(stream >> (8 * b));
  }
}

template <class T>
__device__ __forceinline__ bool is_nan_value(double v) {
  return isnan(v);
}

__device__ __forceinline__ unsigned long long warp_sum(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ double warp_sum(double v) {
  for (int o = 16; o > 0; o >>= 1)
    v += __shfl_down_sync(0xffffffffu, v, o);
  return v;
}
__device__ __forceinline__ unsigned long long warp_min(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long other = __shfl_down_sync(0xffffffffu, v, o);
    v = other < v ? other : v;
  }
  return v;
}
__device__ __forceinline__ unsigned long long warp_max(unsigned long long v) {
  for (int o = 16; o > 0; o >>= 1) {
    unsigned long long other = __shfl_down_sync(0xffffffffu, v, o);
    v = other > v ? other : v;
  }
  return v;
}

template <class T>
__global__ void compare_kernel(const T* out, const T* ref, uint64_t ref_key, int64_t begin,
                               int64_t end, double atol, double rtol, compare_stats* stats) {
  unsigned long long bad = 0, nans = 0, first = ULLONG_MAX;
  double max_abs = 0, max_rel = 0, sq_diff = 0, sq_ref = 0;
  for (int64_t i = begin + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < end;
       i += int64_t{gridDim.x} * blockDim.x) {
    double o = to_double(out[i]);
    double r = to_double(unmasked(ref, i, ref_key));
    bool o_nan = isnan(o), r_nan = isnan(r);
    bool is_bad;
    if (o_nan || r_nan) {
      is_bad = o_nan != r_nan;
      nans += (o_nan && !r_nan) ? 1 : 0;
    } else if (isinf(o) || isinf(r)) {
      is_bad = o != r;
      if (is_bad) {
        max_abs = INFINITY;
        max_rel = INFINITY;
      }
    } else {
      double d = fabs(o - r);
      double mag = fabs(r);
      is_bad = d > atol + rtol * mag;
      max_abs = fmax(max_abs, d);
      if (mag > 0)
        max_rel = fmax(max_rel, d / mag);
      sq_diff += d * d;
      sq_ref += r * r;
    }
    if (is_bad) {
      ++bad;
      if (static_cast<unsigned long long>(i) < first)
        first = static_cast<unsigned long long>(i);
    }
  }
  bad = warp_sum(bad);
  nans = warp_sum(nans);
  first = warp_min(first);
  sq_diff = warp_sum(sq_diff);
  sq_ref = warp_sum(sq_ref);
  unsigned long long abs_bits =
      warp_max(static_cast<unsigned long long>(__double_as_longlong(max_abs)));
  unsigned long long rel_bits =
      warp_max(static_cast<unsigned long long>(__double_as_longlong(max_rel)));
  if ((threadIdx.x & 31) == 0) {
    if (bad) {
      atomicAdd(&stats->bad_count, bad);
      atomicMin(&stats->first_bad, first);
    }
    if (nans)
      atomicAdd(&stats->nan_count, nans);
    // Non-negative doubles order like their bit patterns, so an integer max is a double max.
    atomicMax(&stats->max_abs_bits, abs_bits);
    atomicMax(&stats->max_rel_bits, rel_bits);
    atomicAdd(&stats->sum_sq_diff, sq_diff);
    atomicAdd(&stats->sum_sq_ref, sq_ref);
  }
}

__global__ void compare_bytes_kernel(const uint4* a, const uint4* b, int64_t words,
                                     const unsigned char* a_tail, const unsigned char* b_tail,
                                     int64_t tail, unsigned long long* diff_count,
                                     unsigned long long* first_diff) {
  unsigned long long count = 0, first = ULLONG_MAX;
  int64_t tid = blockIdx.x * int64_t{blockDim.x} + threadIdx.x;
  int64_t stride = int64_t{gridDim.x} * blockDim.x;
  for (int64_t i = tid; i < words; i += stride) {
    uint4 x = a[i], y = b[i];
    if (x.x != y.x || x.y != y.y || x.z != y.z || x.w != y.w) {
      ++count;
      const unsigned char* xa = reinterpret_cast<const unsigned char*>(&x);
      const unsigned char* ya = reinterpret_cast<const unsigned char*>(&y);
      for (int k = 0; k < 16; ++k)
        if (xa[k] != ya[k]) {
          unsigned long long off = static_cast<unsigned long long>(i) * 16 + k;
          first = off < first ? off : first;
          break;
        }
    }
  }
  for (int64_t i = tid; i < tail; i += stride)
    if (a_tail[i] != b_tail[i]) {
      ++count;
      unsigned long long off = static_cast<unsigned long long>(words) * 16 + i;
      first = off < first ? off : first;
    }
  count = warp_sum(count);
  first = warp_min(first);
  if ((threadIdx.x & 31) == 0 && count) {
    atomicAdd(diff_count, count);
    atomicMin(first_diff, first);
  }
}

template <class T>
__global__ void count_undrawn_kernel(const T* data, int32_t dist, uint64_t seed, int64_t low,
                                     int64_t high, int64_t begin, int64_t end,
                                     unsigned long long* mismatches) {
  unsigned long long local = 0;
  for (int64_t i = begin + blockIdx.x * int64_t{blockDim.x} + threadIdx.x; i < end;
       i += int64_t{gridDim.x} * blockDim.x) {
    T expected = from_double<T>(draw(i, dist, seed, low, high));
    T actual = data[i];
    const auto* x = reinterpret_cast<const unsigned char*>(&expected);
    const auto* y = reinterpret_cast<const unsigned char*>(&actual);
    bool same = true;
    for (size_t b = 0; b < sizeof(T); ++b)
      same = same && x[b] == y[b];
    local += same ? 0 : 1;
  }
  local = warp_sum(local);
  if ((threadIdx.x & 31) == 0 && local)
    atomicAdd(mismatches, local);
}

template <class F>
cudaError_t dispatch(int32_t dtype, F&& f) {
  switch (dtype) {
  case KS_F32:
    return f(float{});
  case KS_F16:
    return f(__half{});
  case KS_BF16:
    return f(__nv_bfloat16{});
  case KS_F64:
    return f(double{});
  case KS_I32:
    return f(int32_t{});
  case KS_I64:
    return f(int64_t{});
  case KS_U8:
    return f(uint8_t{});
  default:
    return cudaErrorInvalidValue;
  }
}

} // namespace

cudaError_t fill_random(void* data, int32_t dtype, int64_t n, distribution dist, uint64_t seed,
                        int64_t low, int64_t high, cudaStream_t stream) {
  if (n == 0)
    return cudaSuccess;
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    fill_kernel<T><<<blocks_for(n), threads, 0, stream>>>(
        static_cast<T*>(data), n, static_cast<int32_t>(dist), seed, low, high);
    return cudaGetLastError();
  });
}

cudaError_t poison(void* data, int64_t bytes, cudaStream_t stream) {
  return cudaMemsetAsync(data, 0xFF, static_cast<size_t>(bytes), stream);
}

cudaError_t compare(const void* out, const void* ref, uint64_t ref_key, int32_t dtype, int64_t n,
                    double atol, double rtol, compare_stats* stats, cudaStream_t stream) {
  return compare_range(out, ref, ref_key, dtype, 0, n, atol, rtol, stats, stream);
}

cudaError_t compare_range(const void* out, const void* ref, uint64_t ref_key, int32_t dtype,
                          int64_t first, int64_t count, double atol, double rtol,
                          compare_stats* stats, cudaStream_t stream) {
  if (count <= 0)
    return cudaSuccess;
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    compare_kernel<T><<<blocks_for(count), threads, 0, stream>>>(
        static_cast<const T*>(out), static_cast<const T*>(ref), ref_key, first, first + count, atol,
        rtol, stats);
    return cudaGetLastError();
  });
}

cudaError_t perturb(void* data, int32_t dtype, distribution dist, int64_t low, int64_t high,
                    uint64_t base_seed, const element_positions& restore, uint64_t fresh_seed,
                    const element_positions& fresh, cudaStream_t stream) {
  if (restore.count == 0 && fresh.count == 0)
    return cudaSuccess;
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    perturb_kernel<T><<<1, element_positions::capacity, 0, stream>>>(
        static_cast<T*>(data), static_cast<int32_t>(dist), low, high, base_seed, restore,
        fresh_seed, fresh);
    return cudaGetLastError();
  });
}

cudaError_t mask(void* data, int64_t bytes, uint64_t key, cudaStream_t stream) {
  if (bytes == 0 || key == 0)
    return cudaSuccess;
  int64_t units = bytes / 8;
  mask_kernel<<<blocks_for(units > 0 ? units : 1), threads, 0, stream>>>(
      static_cast<uint64_t*>(data), units, static_cast<unsigned char*>(data) + units * 8, bytes % 8,
      key);
  return cudaGetLastError();
}

cudaError_t compare_bytes(const void* a, const void* b, int64_t bytes,
                          unsigned long long* diff_count, unsigned long long* first_diff,
                          cudaStream_t stream) {
  if (bytes == 0)
    return cudaSuccess;
  // cudaMalloc returns 256-byte aligned pointers, so the 16-byte words are aligned.
  int64_t words = bytes / 16;
  int64_t tail = bytes % 16;
  auto* a_tail = static_cast<const unsigned char*>(a) + words * 16;
  auto* b_tail = static_cast<const unsigned char*>(b) + words * 16;
  compare_bytes_kernel<<<blocks_for(words > 0 ? words : 1), threads, 0, stream>>>(
      static_cast<const uint4*>(a), static_cast<const uint4*>(b), words, a_tail, b_tail, tail,
      diff_count, first_diff);
  return cudaGetLastError();
}

cudaError_t count_undrawn(const void* data, int32_t dtype, distribution dist, int64_t low,
                          int64_t high, uint64_t seed, int64_t first, int64_t count,
                          unsigned long long* mismatches, cudaStream_t stream) {
  if (count <= 0)
    return cudaSuccess;
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    count_undrawn_kernel<T><<<blocks_for(count), threads, 0, stream>>>(
        static_cast<const T*>(data), static_cast<int32_t>(dist), seed, low, high, first,
        first + count, mismatches);
    return cudaGetLastError();
  });
}

cudaError_t read_element(const void* data, int32_t dtype, int64_t index, double* value,
                         cudaStream_t stream, uint64_t key) {
  return dispatch(dtype, [&](auto tag) {
    using T = decltype(tag);
    T host{};
    auto err = cudaMemcpyAsync(&host, static_cast<const T*>(data) + index, sizeof(T),
                               cudaMemcpyDeviceToHost, stream);
    if (err == cudaSuccess)
      err = cudaStreamSynchronize(stream);
    if (key != 0) {
      // The same keystream as unmasked(), on the host.
      auto mix = [](uint64_t x) {
        x += 0x9E3779B97F4A7C15ull;
        x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ull;
        x = (x ^ (x >> 27)) * 0x94D049BB133111EBull;
        return x ^ (x >> 31);
      };
      uint64_t offset = static_cast<uint64_t>(index) * sizeof(T);
      uint64_t stream_bits =
          mix(key ^ ((offset / 8) * 0xD6E8FEB86659FD93ull)) >> ((offset % 8) * 8);
      unsigned char bytes[sizeof(T)];
      std::memcpy(bytes, &host, sizeof(T));
      for (size_t b = 0; b < sizeof(T); ++b)
        bytes[b] ^= static_cast<unsigned char>(stream_bits >> (8 * b));
      std::memcpy(&host, bytes, sizeof(T));
    }
    if constexpr (std::is_same_v<T, __half>)
      *value = static_cast<double>(__half2float(host));
    else if constexpr (std::is_same_v<T, __nv_bfloat16>)
      *value = static_cast<double>(__bfloat162float(host));
    else
      *value = static_cast<double>(host);
    return err;
  });
}

} // namespace ks::gpu::worker
