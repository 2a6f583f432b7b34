#pragma once

// Device-side helpers of the bench worker: drawing inputs, poisoning outputs, comparing
// outputs with the reference, checking inputs unchanged, and flushing L2. Every function
// enqueues on `stream` and returns the launch's error; none synchronizes.

#include <cuda_runtime.h>

#include <cstdint>

namespace ks::gpu::worker {

/// The distribution of drawn values (engine::init_kind's numbers).
enum class distribution : int32_t {
  normal = 0,
  uniform = 1,
  uniform01 = 2,
  positive = 3,
  randint = 4
};

/// Fills `n` elements of dtype `dtype` at `data` with values drawn from `dist` by a
/// counter-based hash of (seed, index): the same seed gives the same tensor on any launch
/// configuration, so reference outputs can be cached per seed.
cudaError_t fill_random(void* data, int32_t dtype, int64_t n, distribution dist, uint64_t seed,
                        int64_t low, int64_t high, cudaStream_t stream);

/// Overwrites `bytes` bytes with a poison that no correct kernel leaves behind: all-ones
/// bits, a NaN in every float format (for integer outputs it is -1, so unwritten integer
/// elements are caught only where -1 is not the right answer).
cudaError_t poison(void* data, int64_t bytes, cudaStream_t stream);

/// Accumulated by compare(); lives in device memory, zeroed before each use.
struct compare_stats {
  unsigned long long bad_count;
  unsigned long long nan_count;    // candidate NaN where the reference is not
  unsigned long long first_bad;    // ULLONG_MAX when none
  unsigned long long max_abs_bits; // bits of a non-negative double
  unsigned long long max_rel_bits;
  double sum_sq_diff;
  double sum_sq_ref;
};

/// Compares `n` elements of `out` against `ref` (both of `dtype`; `ref` masked with `ref_key`,
/// 0 for none): an element is bad when |out - ref| > atol + rtol * |ref|, or when exactly one
/// of them is NaN.
cudaError_t compare(const void* out, const void* ref, uint64_t ref_key, int32_t dtype, int64_t n,
                    double atol, double rtol, compare_stats* stats, cudaStream_t stream);

/// Compares like compare(), elements [first, first + count) only (statistics accumulate, so
/// several ranges may be compared into one `stats`).
cudaError_t compare_range(const void* out, const void* ref, uint64_t ref_key, int32_t dtype,
                          int64_t first, int64_t count, double atol, double rtol,
                          compare_stats* stats, cudaStream_t stream);

/// XORs `bytes` bytes at `data` with a keystream of `key` (0: nothing). Reference outputs stay
/// masked while candidates run in the same process, so a candidate that searches the
/// worker's device memory for the answer finds none; compare() unmasks them as it reads.
cudaError_t mask(void* data, int64_t bytes, uint64_t key, cudaStream_t stream);

/// Element indices of one perturbation, passed by value to the kernel.
struct element_positions {
  static constexpr int32_t capacity = 16;
  int64_t index[capacity];
  int32_t count = 0;
};

/// Gives the elements `restore` of a tensor drawn by fill_random with `base_seed` their drawn
/// values back, then the elements `fresh` values drawn with `fresh_seed` (same distribution).
cudaError_t perturb(void* data, int32_t dtype, distribution dist, int64_t low, int64_t high,
                    uint64_t base_seed, const element_positions& restore, uint64_t fresh_seed,
                    const element_positions& fresh, cudaStream_t stream);

/// Counts differing bytes between `a` and `b` into `diff_count` and the smallest differing
/// byte offset into `first_diff` (both device memory, zeroed / set to ULLONG_MAX before).
cudaError_t compare_bytes(const void* a, const void* b, int64_t bytes,
                          unsigned long long* diff_count, unsigned long long* first_diff,
                          cudaStream_t stream);

/// Adds to `*mismatches` (device memory, zeroed before) the number of elements in
/// [first, first + count) of a tensor that differ from what fill_random(dist, seed, low,
/// high) wrote there: inputs are checked unchanged without keeping a copy.
cudaError_t count_undrawn(const void* data, int32_t dtype, distribution dist, int64_t low,
                          int64_t high, uint64_t seed, int64_t first, int64_t count,
                          unsigned long long* mismatches, cudaStream_t stream);

/// Reads element `index` of a `dtype` tensor (masked with `key`, 0 for none) as a double
/// (synchronous, small copy).
cudaError_t read_element(const void* data, int32_t dtype, int64_t index, double* value,
                         cudaStream_t stream, uint64_t key = 0);

} // namespace ks::gpu::worker
