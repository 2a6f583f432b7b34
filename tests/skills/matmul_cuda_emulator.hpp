// A CUDA emulator for the matmul skills' kernels, so that their index mappings, pipelines and
// edge handling are tested on a machine with no GPU. A rendered template compiled by the host
// C++ compiler with -DKS_EMULATE includes this header instead of cuda_runtime.h; each kernel
// launch (cudaLaunchKernelEx, the C++ form) then runs every block in turn on the CPU, each
// CUDA thread a fiber (ucontext) of one OS thread, switched only at barriers, so a run is
// deterministic for a given schedule seed.
//
// What is modelled, and how it can catch a bug:
// - __syncthreads(): a fiber waits until every live thread of its block is there.
// - Warp collectives (the tensor-core mma.sync m16n8k8 .tf32): each lane deposits its fragment
//   registers, the warp meets, each lane computes its own result registers from all 32 lanes'
//   inputs, the warp meets again. The fragment layouts are written here from the PTX ISA's
//   figures for m16n8k8 .tf32 (also CuTe's SM80_16x8x8_F32TF32TF32F32_TN traits), apart from
//   any kernel's own mapping, so a kernel that loads a fragment wrongly computes a wrong product.
//   Inputs keep only their tf32 bits (the hardware ignores the 13 low mantissa bits).
// - cp.async: alignment of both addresses to the copy size, the destination inside the block's
//   shared memory, and src-size zero-fill. In the deferred mode a copy lands only when its
//   thread's cp.async.wait_group lets it (the latest the hardware may complete it), which
//   catches a stage read before its wait; in the immediate mode it lands at once, which
//   catches a stage overwritten while other threads still read it.
// - Shared memory starts as NaN at each block; the scheduler runs the fibers in a shuffled
//   order at every barrier, so one thread running ahead of the others is tried.
// - A fiber that calls a block barrier while its warp waits at a collective, or any other
//   divergence that would hang the GPU, is reported as an error of the launch.
// - Work skipped: the blocks run and those that issued a tensor-core product are counted
//   (since ks_emulator_configure), so a test can tell that a block with nothing to compute (a
//   tile in a triangular product's zeroed triangle) ran no k loop.
//
// Not modelled: timing, bank conflicts, occupancy, asynchronous wgmma and TMA, atomics. It is
// a test tool: the emulated tensor core sums in double and rounds once (or truncates, when
// asked), which is at least as accurate as the hardware.
#pragma once

#include <ucontext.h>

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

// -- the CUDA C++ dialect, as plain C++ ---------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __constant__
#define __align__(n) alignas(n)

struct alignas(8) float2 {
  float x, y;
};

struct alignas(16) float4 {
  float x, y, z, w;
};

inline float2 make_float2(float x, float y) {
  return float2{x, y};
}
inline float4 make_float4(float x, float y, float z, float w) {
  return float4{x, y, z, w};
}

struct dim3 {
  unsigned x = 1, y = 1, z = 1;
  constexpr dim3(unsigned x_ = 1, unsigned y_ = 1, unsigned z_ = 1) : x(x_), y(y_), z(z_) {}
};

using cudaStream_t = struct ks_emulated_stream*;

enum cudaError_t : int {
  cudaSuccess = 0,
  cudaErrorInvalidValue = 1,
  cudaErrorMemoryAllocation = 2,
  cudaErrorLaunchFailure = 719,
};

enum cudaFuncAttribute : int {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
};

enum cudaDeviceAttr : int {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

struct cudaLaunchAttribute;

struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes = 0;
  cudaStream_t stream = nullptr;
  cudaLaunchAttribute* attrs = nullptr;
  unsigned numAttrs = 0;
};

// The built-in variables: the scheduler sets them before it switches to a fiber.
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace ks_emu {

/// How cp.async completes: at its wait (deferred) or at once (immediate).
enum class copy_timing { deferred, immediate };

/// How the emulated tensor core rounds its sum: to nearest, or toward zero (a worst case).
enum class mma_rounding { nearest, toward_zero };

struct settings {
  copy_timing copies = copy_timing::deferred;
  mma_rounding rounding = mma_rounding::nearest;
  uint64_t schedule_seed = 1;
  int32_t sm_count = 132;
  size_t max_dynamic_smem = 227 * 1024;
};

struct pending_copy {
  unsigned char* dst;
  const unsigned char* src;
  int32_t bytes;     // from src
  int32_t zero_fill; // after them
};

enum class fiber_state { runnable, at_block_barrier, at_group_barrier, done };

/// One wgmma.mma_async of a thread, kept until its group completes: the hardware may read
/// the operands and write the accumulators any time until wgmma.wait_group, so the emulator
/// reads them and writes the results then.
struct wgmma_op {
  float* d;          // the thread's n / 2 accumulator registers
  const uint32_t* a; // its 4 A fragment registers
  uint64_t b_descriptor;
  int32_t n;
  bool scale_d;
};

struct fiber {
  ucontext_t context{};
  std::vector<unsigned char> stack;
  dim3 thread_idx;
  int32_t linear = 0;
  int32_t warp = 0;
  int32_t lane = 0;
  fiber_state state = fiber_state::runnable;
  std::vector<pending_copy> uncommitted;
  std::vector<std::vector<pending_copy>> groups; // committed, oldest first
  int32_t barrier_size = 0;                      // of the collective it waits at
  std::vector<wgmma_op> wgmma_uncommitted;
  std::vector<std::vector<wgmma_op>> wgmma_groups;
};

/// One warp's exchange area for a collective.
struct warp_exchange {
  uint32_t a[32][4];
  uint32_t b[32][2];
  float c[32][4];
};

/// One warpgroup's exchange area: each lane's wgmma groups to complete.
struct warpgroup_exchange {
  const std::vector<wgmma_op>* ops[128];
};

struct emulator {
  settings config;
  std::string error; // the first error of the current launch
  dim3 grid_dim, block_dim, block_idx;
  std::vector<fiber> fibers;
  fiber* current = nullptr;
  ucontext_t scheduler{};
  std::vector<unsigned char> shared; // the block's dynamic shared memory
  size_t shared_bytes = 0;
  std::vector<warp_exchange> exchange;
  std::vector<warpgroup_exchange> group_exchange;
  std::function<void()> body;
  cudaError_t last_error = cudaSuccess;
  std::mt19937_64 rng{1};
  bool block_used_tensor_cores = false; // the running block issued an mma or a wgmma
  int64_t blocks_run = 0;               // since the last configure
  int64_t tensor_core_blocks = 0;       // of them, those that issued an mma or a wgmma

  void fail(const std::string& what) {
    if (error.empty()) {
      error = what + " (block " + std::to_string(block_idx.x) + "," + std::to_string(block_idx.y) +
              "," + std::to_string(block_idx.z) + ", thread " +
              (current ? std::to_string(current->linear) : std::string("-")) + ")";
    }
  }
};

inline emulator& state() {
  static emulator e;
  return e;
}

inline fiber& self() {
  return *state().current;
}

/// Switches from the running fiber back to the scheduler.
inline void yield_to_scheduler() {
  emulator& e = state();
  swapcontext(&e.current->context, &e.scheduler);
}

inline void block_barrier() {
  self().state = fiber_state::at_block_barrier;
  yield_to_scheduler();
}

/// Waits until the `size` threads of the caller's aligned group (a warp: 32, a warpgroup:
/// 128) are all here.
inline void group_barrier(int32_t size) {
  self().state = fiber_state::at_group_barrier;
  self().barrier_size = size;
  yield_to_scheduler();
}

inline void warp_barrier() {
  group_barrier(32);
}

inline void fiber_entry() {
  emulator& e = state();
  e.body();
  e.current->state = fiber_state::done;
  swapcontext(&e.current->context, &e.scheduler);
}

inline bool in_shared(const void* p, size_t bytes) {
  emulator& e = state();
  const unsigned char* c = static_cast<const unsigned char*>(p);
  return c >= e.shared.data() && c + bytes <= e.shared.data() + e.shared_bytes;
}

inline void perform(const pending_copy& c) {
  if (c.bytes > 0)
    std::memcpy(c.dst, c.src, static_cast<size_t>(c.bytes));
  if (c.zero_fill > 0)
    std::memset(c.dst + c.bytes, 0, static_cast<size_t>(c.zero_fill));
}

/// Runs the fibers of one block until every one is done; false on a hang.
inline bool run_block() {
  emulator& e = state();
  std::vector<size_t> order(e.fibers.size());
  for (size_t i = 0; i < order.size(); ++i)
    order[i] = i;
  for (;;) {
    std::shuffle(order.begin(), order.end(), e.rng);
    for (size_t i : order) {
      fiber& f = e.fibers[i];
      if (f.state != fiber_state::runnable)
        continue;
      e.current = &f;
      threadIdx = f.thread_idx;
      blockIdx = e.block_idx;
      blockDim = e.block_dim;
      gridDim = e.grid_dim;
      swapcontext(&e.scheduler, &f.context);
      e.current = nullptr;
    }
    // Every fiber is now done or waiting: release whole warps (warpgroups) at a collective,
    // then the block.
    bool released = false;
    for (size_t size : {size_t{32}, size_t{128}})
      for (size_t first = 0; first + size <= e.fibers.size(); first += size) {
        bool all = true;
        for (size_t i = first; i < first + size; ++i)
          all = all && e.fibers[i].state == fiber_state::at_group_barrier &&
                static_cast<size_t>(e.fibers[i].barrier_size) == size;
        if (all) {
          for (size_t i = first; i < first + size; ++i)
            e.fibers[i].state = fiber_state::runnable;
          released = true;
        }
      }
    if (released)
      continue;
    bool all_done = true;
    bool all_waiting = true;
    for (const fiber& f : e.fibers) {
      all_done = all_done && f.state == fiber_state::done;
      all_waiting =
          all_waiting && (f.state == fiber_state::at_block_barrier || f.state == fiber_state::done);
    }
    if (all_done)
      return true;
    if (all_waiting) {
      for (fiber& f : e.fibers)
        if (f.state == fiber_state::at_block_barrier)
          f.state = fiber_state::runnable;
      continue;
    }
    e.fail("no thread can go on: a barrier that not every thread reaches");
    return false;
  }
}

/// Runs `kernel_body` for every thread of every block of `grid`.
inline cudaError_t run_grid(dim3 grid, dim3 block, size_t smem_bytes,
                            std::function<void()> kernel_body) {
  emulator& e = state();
  e.error.clear();
  e.rng.seed(e.config.schedule_seed);
  const size_t threads = static_cast<size_t>(block.x) * block.y * block.z;
  if (threads == 0 || threads > 1024 || grid.x == 0 || grid.y == 0 || grid.z == 0 ||
      grid.y > 65535 || grid.z > 65535) {
    e.fail("invalid launch configuration");
    return e.last_error = cudaErrorInvalidValue;
  }
  if (smem_bytes > e.config.max_dynamic_smem) {
    e.fail("dynamic shared memory over the limit: " + std::to_string(smem_bytes));
    return e.last_error = cudaErrorInvalidValue;
  }
  e.grid_dim = grid;
  e.block_dim = block;
  e.body = std::move(kernel_body);
  e.shared_bytes = smem_bytes;
  e.shared.assign(smem_bytes + 16, 0);
  e.exchange.assign((threads + 31) / 32, warp_exchange{});
  e.group_exchange.assign((threads + 127) / 128, warpgroup_exchange{});
  e.fibers.assign(threads, fiber{});
  constexpr size_t stack_bytes = 128 * 1024;
  for (fiber& f : e.fibers)
    f.stack.resize(stack_bytes);
  for (unsigned bz = 0; bz < grid.z; ++bz)
    for (unsigned by = 0; by < grid.y; ++by)
      for (unsigned bx = 0; bx < grid.x; ++bx) {
        e.block_idx = dim3(bx, by, bz);
        // NaN everywhere: a read of shared memory that nothing wrote poisons the result.
        std::memset(e.shared.data(), 0xff, e.shared.size());
        for (size_t t = 0; t < threads; ++t) {
          fiber& f = e.fibers[t];
          f.state = fiber_state::runnable;
          f.uncommitted.clear();
          f.groups.clear();
          f.wgmma_uncommitted.clear();
          f.wgmma_groups.clear();
          f.linear = static_cast<int32_t>(t);
          f.warp = static_cast<int32_t>(t / 32);
          f.lane = static_cast<int32_t>(t % 32);
          f.thread_idx = dim3(static_cast<unsigned>(t % block.x),
                              static_cast<unsigned>((t / block.x) % block.y),
                              static_cast<unsigned>(t / (static_cast<size_t>(block.x) * block.y)));
          getcontext(&f.context);
          f.context.uc_stack.ss_sp = f.stack.data();
          f.context.uc_stack.ss_size = f.stack.size();
          f.context.uc_link = nullptr;
          makecontext(&f.context, &fiber_entry, 0);
        }
        e.block_used_tensor_cores = false;
        if (!run_block() || !e.error.empty()) {
          e.fibers.clear();
          return e.last_error = cudaErrorLaunchFailure;
        }
        ++e.blocks_run;
        e.tensor_core_blocks += e.block_used_tensor_cores ? 1 : 0;
      }
  e.fibers.clear();
  return cudaSuccess;
}

// -- device-side operations the kernels call ----------------------------------------------------

/// Returns `x` rounded to tf32 (10 mantissa bits), to nearest with ties away from zero, as
/// cvt.rna.tf32.f32 does; the result is a float's bits with the 13 low bits clear.
inline uint32_t cvt_rna_tf32(float x) {
  uint32_t bits;
  std::memcpy(&bits, &x, 4);
  if ((bits & 0x7f800000u) == 0x7f800000u)
    return bits; // inf and NaN stay
  return (bits + 0x1000u) & 0xffffe000u;
}

inline double tf32_value(uint32_t bits) {
  bits &= 0xffffe000u;
  float f;
  std::memcpy(&f, &bits, 4);
  return static_cast<double>(f);
}

/// Rounds `v` to float toward zero.
inline float round_toward_zero(double v) {
  float f = static_cast<float>(v);
  if (std::fabs(static_cast<double>(f)) > std::fabs(v))
    f = std::nextafter(f, 0.0f);
  return f;
}

/// mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 for the calling lane: d = a * b + c.
/// Fragments (PTX ISA, m16n8k8 with .tf32; g = lane / 4, t = lane % 4):
///   A 16x8:  a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4)
///   B 8x8:   b0 (k = t, n = g), b1 (k = t + 4, n = g)
///   C/D 16x8: c0 (g, 2t), c1 (g, 2t + 1), c2 (g + 8, 2t), c3 (g + 8, 2t + 1)
inline void mma_m16n8k8_tf32(float d[4], const uint32_t a[4], const uint32_t b[2],
                             const float c[4]) {
  emulator& e = state();
  fiber& f = self();
  e.block_used_tensor_cores = true;
  warp_exchange& x = e.exchange[static_cast<size_t>(f.warp)];
  const int32_t lane = f.lane;
  for (int i = 0; i < 4; ++i) {
    x.a[lane][i] = a[i];
    x.c[lane][i] = c[i];
  }
  x.b[lane][0] = b[0];
  x.b[lane][1] = b[1];
  warp_barrier();
  auto a_at = [&](int row, int k) {
    int owner = (row % 8) * 4 + (k % 4);
    int reg = (row >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0);
    return tf32_value(x.a[owner][reg]);
  };
  auto b_at = [&](int k, int col) { return tf32_value(x.b[col * 4 + (k % 4)][k >= 4 ? 1 : 0]); };
  const int g = lane / 4;
  const int t = lane % 4;
  float result[4];
  for (int i = 0; i < 4; ++i) {
    int row = g + (i >= 2 ? 8 : 0);
    int col = 2 * t + (i % 2);
    double sum = static_cast<double>(x.c[lane][i]);
    for (int k = 0; k < 8; ++k)
      sum += a_at(row, k) * b_at(k, col);
    result[i] = e.config.rounding == mma_rounding::nearest ? static_cast<float>(sum)
                                                           : round_toward_zero(sum);
  }
  warp_barrier(); // every lane has read the exchange before any lane writes it again
  for (int i = 0; i < 4; ++i)
    d[i] = result[i];
}

/// cp.async with cp-size `bytes` (4, 8 or 16), copying `src_bytes` of them and zero-filling
/// the rest.
inline void cp_async(void* dst, const void* src, int32_t bytes, int32_t src_bytes) {
  emulator& e = state();
  if (bytes != 4 && bytes != 8 && bytes != 16) {
    e.fail("cp.async: cp-size " + std::to_string(bytes));
    return;
  }
  if (src_bytes < 0 || src_bytes > bytes) {
    e.fail("cp.async: src-size " + std::to_string(src_bytes) + " over cp-size");
    return;
  }
  if (reinterpret_cast<uintptr_t>(dst) % static_cast<uintptr_t>(bytes) != 0 ||
      reinterpret_cast<uintptr_t>(src) % static_cast<uintptr_t>(bytes) != 0) {
    e.fail("cp.async: an address not aligned to " + std::to_string(bytes) + " bytes");
    return;
  }
  if (!in_shared(dst, static_cast<size_t>(bytes))) {
    e.fail("cp.async: destination outside the block's shared memory");
    return;
  }
  pending_copy c{static_cast<unsigned char*>(dst), static_cast<const unsigned char*>(src),
                 src_bytes, bytes - src_bytes};
  if (e.config.copies == copy_timing::immediate)
    perform(c);
  else
    self().uncommitted.push_back(c);
}

inline void cp_async_commit() {
  fiber& f = self();
  f.groups.push_back(std::move(f.uncommitted));
  f.uncommitted.clear();
}

/// cp.async.wait_group `newest_pending`: completes all but the newest `newest_pending` groups.
inline void cp_async_wait(int32_t newest_pending) {
  fiber& f = self();
  while (static_cast<int32_t>(f.groups.size()) > newest_pending) {
    for (const pending_copy& c : f.groups.front())
      perform(c);
    f.groups.erase(f.groups.begin());
  }
}

inline void* dynamic_shared_memory() {
  return state().shared.data();
}

/// Returns `p`'s address in the shared window (the block's shared memory starts at 0), as
/// __cvta_generic_to_shared does.
inline uint32_t shared_address(const void* p) {
  emulator& e = state();
  if (!in_shared(p, 1)) {
    e.fail("a shared address of a pointer outside shared memory");
    return 0;
  }
  return static_cast<uint32_t>(static_cast<const unsigned char*>(p) - e.shared.data());
}

/// wgmma.mma_async.sync.aligned.m64nNk8.f32.tf32.tf32 with A from registers (RS): queued
/// until a wgmma.wait_group completes its group.
inline void wgmma_m64nNk8_tf32_rs(float* d, const uint32_t a[4], uint64_t b_descriptor, int32_t n,
                                  bool scale_d) {
  state().block_used_tensor_cores = true;
  self().wgmma_uncommitted.push_back(wgmma_op{d, a, b_descriptor, n, scale_d});
}

inline void wgmma_commit() {
  fiber& f = self();
  f.wgmma_groups.push_back(std::move(f.wgmma_uncommitted));
  f.wgmma_uncommitted.clear();
}

/// Returns the tf32 element (n, k) of B (N x 8, K-major) that a no-swizzle wgmma descriptor
/// describes. The canonical layout (CUTLASS's make_gmma_desc, Major::K, INTERLEAVE): core
/// matrices of 8 rows x 16 bytes, rows 16 bytes apart; the 8-row groups along N `SBO` bytes
/// apart (bits 32-45, in 16-byte units); the two 4-element halves of k `LBO` bytes apart (bits
/// 16-29); the start address in bits 0-13; the layout type in bits 62-63 (0: no swizzle).
inline double b_from_descriptor(uint64_t descriptor, int n, int k) {
  emulator& e = state();
  const uint32_t start = static_cast<uint32_t>(descriptor & 0x3fff) << 4;
  const uint32_t lbo = static_cast<uint32_t>((descriptor >> 16) & 0x3fff) << 4;
  const uint32_t sbo = static_cast<uint32_t>((descriptor >> 32) & 0x3fff) << 4;
  if ((descriptor >> 62) != 0 || ((descriptor >> 49) & 7) != 0) {
    e.fail("wgmma: the emulator models no-swizzle descriptors with base offset 0 only");
    return 0;
  }
  const size_t at = start + static_cast<uint32_t>(n % 8) * 16 + static_cast<uint32_t>(n / 8) * sbo +
                    static_cast<uint32_t>(k / 4) * lbo + static_cast<uint32_t>(k % 4) * 4;
  if (at + 4 > e.shared_bytes) {
    e.fail("wgmma: B's descriptor reaches past shared memory");
    return 0;
  }
  uint32_t bits;
  std::memcpy(&bits, e.shared.data() + at, 4);
  return tf32_value(bits);
}

/// wgmma.wait_group `newest_pending`, a warpgroup collective: completes every group of the
/// warpgroup but the newest `newest_pending`, each lane computing its own accumulators.
/// Layouts (PTX ISA; CuTe's ALayout_64x8 and CLayout_64xN), warp w of the warpgroup,
/// g = lane / 4, t = lane % 4: A a0 (16w + g, t), a1 (16w + g + 8, t), a2 (16w + g, t + 4),
/// a3 (16w + g + 8, t + 4); D d[4j + 2h + e] at (16w + g + 8h, 8j + 2t + e).
inline void wgmma_wait(int32_t newest_pending) {
  emulator& e = state();
  fiber& f = self();
  warpgroup_exchange& x = e.group_exchange[static_cast<size_t>(f.linear / 128)];
  x.ops[f.linear % 128] = nullptr;
  group_barrier(128);
  std::vector<std::vector<wgmma_op>>& mine = f.wgmma_groups;
  const size_t complete = mine.size() > static_cast<size_t>(newest_pending)
                              ? mine.size() - static_cast<size_t>(newest_pending)
                              : 0;
  // Every lane must hold the same sequence of wgmma (they are .sync.aligned).
  std::vector<wgmma_op> flat;
  for (size_t gi = 0; gi < complete; ++gi)
    flat.insert(flat.end(), mine[gi].begin(), mine[gi].end());
  x.ops[f.linear % 128] = &flat;
  group_barrier(128);
  const int32_t lane_in_group = f.linear % 128;
  const int warp = lane_in_group / 32;
  const int g = (lane_in_group % 32) / 4;
  const int t = lane_in_group % 4;
  for (size_t op = 0; op < flat.size(); ++op) {
    for (int l = 0; l < 128; ++l)
      if (x.ops[l] == nullptr || x.ops[l]->size() != flat.size() ||
          (*x.ops[l])[op].n != flat[op].n || (*x.ops[l])[op].scale_d != flat[op].scale_d) {
        e.fail("wgmma: the lanes of a warpgroup issued different wgmma");
        return;
      }
    const wgmma_op& w = flat[op];
    auto a_at = [&](int row, int k) {
      const int owner = (row / 16) * 32 + (row % 8) * 4 + (k % 4);
      const int reg = (row % 16 >= 8 ? 1 : 0) + (k >= 4 ? 2 : 0);
      return tf32_value((*x.ops[owner])[op].a[reg]);
    };
    std::vector<float> result(static_cast<size_t>(w.n / 2));
    for (int j = 0; j < w.n / 8; ++j)
      for (int h = 0; h < 2; ++h)
        for (int c = 0; c < 2; ++c) {
          const int row = 16 * warp + g + 8 * h;
          const int col = 8 * j + 2 * t + c;
          const size_t reg = static_cast<size_t>(4 * j + 2 * h + c);
          double sum = w.scale_d ? static_cast<double>(w.d[reg]) : 0.0;
          for (int k = 0; k < 8; ++k)
            sum += a_at(row, k) * b_from_descriptor(w.b_descriptor, col, k);
          result[reg] = e.config.rounding == mma_rounding::nearest ? static_cast<float>(sum)
                                                                   : round_toward_zero(sum);
        }
    // Every lane has read the A registers of this wgmma before any lane's results land (a
    // later wgmma of the group may read them as its C).
    group_barrier(128);
    for (size_t r = 0; r < result.size(); ++r)
      w.d[r] = result[r];
  }
  group_barrier(128); // nobody leaves while another lane still reads its registers
  mine.erase(mine.begin(), mine.begin() + static_cast<std::ptrdiff_t>(complete));
}

} // namespace ks_emu

inline void __syncthreads() {
  ks_emu::block_barrier();
}

inline uint32_t __float_as_uint(float x) {
  uint32_t u;
  std::memcpy(&u, &x, 4);
  return u;
}

inline float __uint_as_float(uint32_t u) {
  float x;
  std::memcpy(&x, &u, 4);
  return x;
}

// -- the host API the candidates call -----------------------------------------------------------

inline cudaError_t cudaGetLastError() {
  cudaError_t e = ks_emu::state().last_error;
  ks_emu::state().last_error = cudaSuccess;
  return e;
}

inline const char* cudaGetErrorString(cudaError_t) {
  return ks_emu::state().error.c_str();
}

template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel*, cudaFuncAttribute attribute, int value) {
  if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize &&
      static_cast<size_t>(value) > ks_emu::state().config.max_dynamic_smem)
    return ks_emu::state().last_error = cudaErrorInvalidValue;
  return cudaSuccess;
}

inline cudaError_t cudaGetDevice(int* device) {
  *device = 0;
  return cudaSuccess;
}

inline cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int) {
  if (attribute == cudaDevAttrMultiProcessorCount)
    *value = ks_emu::state().config.sm_count;
  else if (attribute == cudaDevAttrMaxSharedMemoryPerBlockOptin)
    *value = static_cast<int>(ks_emu::state().config.max_dynamic_smem);
  else
    return cudaErrorInvalidValue;
  return cudaSuccess;
}

inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::malloc(bytes == 0 ? 1 : bytes);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}

inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}

inline cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) {
  return cudaMalloc(p, bytes);
}

inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) {
  return cudaFree(p);
}

inline cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

/// Runs `kernel(args...)` on the emulator, as cudaLaunchKernelEx does on a GPU.
template <typename... Params, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...),
                               Args&&... args) {
  std::tuple<std::decay_t<Params>...> values(std::forward<Args>(args)...);
  return ks_emu::run_grid(config->gridDim, config->blockDim, config->dynamicSmemBytes,
                          [&] { std::apply(kernel, values); });
}

/// Lets a test choose the emulator's settings and read the first error of the last launch;
/// every compiled candidate has its own emulator.
extern "C" __attribute__((visibility("default"))) void
ks_emulator_configure(int deferred_copies, int truncating_mma, uint64_t schedule_seed) {
  ks_emu::settings& s = ks_emu::state().config;
  s.copies = deferred_copies ? ks_emu::copy_timing::deferred : ks_emu::copy_timing::immediate;
  s.rounding = truncating_mma ? ks_emu::mma_rounding::toward_zero : ks_emu::mma_rounding::nearest;
  s.schedule_seed = schedule_seed;
  ks_emu::state().blocks_run = 0;
  ks_emu::state().tensor_core_blocks = 0;
}

/// Returns how many blocks ran since the last ks_emulator_configure, and how many of them
/// issued a tensor-core product (mma.sync or wgmma).
extern "C" __attribute__((visibility("default"))) void
ks_emulator_block_counts(int64_t* blocks_run, int64_t* tensor_core_blocks) {
  *blocks_run = ks_emu::state().blocks_run;
  *tensor_core_blocks = ks_emu::state().tensor_core_blocks;
}

extern "C" __attribute__((visibility("default"))) const char* ks_emulator_error() {
  return ks_emu::state().error.c_str();
}
