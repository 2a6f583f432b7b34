// The matmul_tf32x3_wgmma skill's default instantiation for tasks/kernelbench-l1/1_matmul.toml
// (4096^3), as kernelskill run --dry-run renders it, kept beside cublas_sgemm.cu for comparison.
// Measured on an H100 80GB HBM3 with kernelskill eval: 1.47-1.49 ms (~93 TFLOP/s), norm-rel err
// 3.2e-7; cublas_sgemm.cu 2.66 ms (52 TFLOP/s), norm-rel err 1.2e-6, in the same call.
// Evaluate with: kernelskill eval tasks/kernelbench-l1/1_matmul.toml tf32x3_wgmma_4096.cu
// kernelskill: matmul_tf32x3_wgmma/tf32x3_wgmma(bk=32,fold=1,group_m=16,stages=2,wg_m=1,wg_n=1,wn=128)
// C = A @ B in float32 on Hopper's warpgroup tensor cores (wgmma, sm_90a), with float32
// accuracy through 3xTF32 error compensation: each operand element x splits into big =
// tf32(x) and small = tf32(x - big) (cvt.rna), and a*b = small*big + big*small + big*big up to
// small*small (~2^-22 of a product). Each k-tile's three products go, smallest first, into a
// partial accumulator that the first wgmma zeroes (scale-d = 0) and a float32 add folds into the
// running one: the tensor core does not round its sums to nearest, and the fold keeps K = 4096
// near float32's error (fold = 0 accumulates straight, to try where the hardware allows it).
//
// Two kernels. The first splits B once: its big and small parts, K-major, in the very layout
// the second kernel's shared memory wants (per 128*1-column n-tile and 32-deep
// k-tile, a block of big then small core matrices of 8 n x 4 k, 128 bytes each: the 8-row
// groups 128 bytes apart (SBO), the two 4-element halves of a k8 step a whole slab apart
// (LBO)), zero-padded to whole tiles, into a workspace. tf32 wgmma reads B K-major only and
// its split parts must sit in shared memory: splitting B once in a memory-bound pass (~0.1 ms
// at 4096^2) replaces a rewrite of every k-tile in every block (the first version: 2.58 ms
// against 1.47 at 4096^3 on an H100).
//
// The second: 1 x 1 warpgroups, each a 64 x 128 tile of C by
// wgmma.mma_async.m64n128k8 .tf32 with A from registers (RS: the m16n8k8 fragment layout,
// loaded from shared memory and split per thread) and B's parts from shared memory through
// matrix descriptors (no swizzle). A's raw tiles and B's prepared blocks arrive through a
// 2-stage cp.async pipeline (A: 16-byte copies where its rows allow, 4-byte ones
// otherwise, src-size zero fill at every ragged edge; B: a straight 16-byte copy of the block).
// Per k-tile: wait for the tile, fence.proxy.async (cp.async writes through the generic proxy,
// wgmma reads through the async one), one barrier, the tile's wgmma issued, then the next
// prefetch issued while they run, then wgmma.wait_group 0 and the fold. The mma's k slots t and
// t + 4 take physical k 2t and 2t + 1 of each k8 step (for A and B alike, which leaves the
// product as it is), so A's fragments load 8 bytes at a time. Tiles are visited in groups of
// 16 tile rows for L2 reuse.
//
// The task's shapes and transposes are compile-time constants: A is [(batch,) M, K], or
// [(batch,) K, M] when transposed; B is [(batch,) K, N] or [(batch,) N, K]; a 2-D operand of a
// batched task is shared by every batch. Inf or NaN inputs give NaN (big - big).
//
// Return codes: 0 ok; 1 n_inputs != 2; 2 n_outputs != 1; 3 an input is not f32; 4 the output
// is not f32; 5 an input's rank is not 2 or 3; 6 the output's rank is not 2 or 3; 7 the shapes
// disagree with the task's; 8 a tensor is not contiguous; 9 too large for the grid; 10 a CUDA
// error at launch; 11 a tensor is not 16-byte aligned; 12 no workspace for B's parts.
#include "kernelskill/abi.h"

#ifdef KS_EMULATE
#include "matmul_cuda_emulator.hpp"  // tests only: runs the kernel on the CPU
#else
#include <cuda_runtime.h>
#endif
#include <stdint.h>

#include <type_traits>

namespace {

// -- the task -------------------------------------------------------------------------------
constexpr int64_t kM = 4096;
constexpr int64_t kN = 4096;
constexpr int64_t kK = 4096;
constexpr int64_t kBatch = 1;
constexpr bool kTransA = false;  // A is [K, M]
constexpr bool kTransB = false;  // B is [N, K]
constexpr int64_t kLda = kTransA ? kM : kK;  // stored row length

// -- the tiling -----------------------------------------------------------------------------
constexpr int kWgM = 1;  // warpgroups along m and n
constexpr int kWgN = 1;
constexpr int kWn = 128;     // a warpgroup's tile: 64 x kWn, one wgmma per k8 step
constexpr int kBk = 32;
constexpr int kStages = 2;
constexpr int kGroupM = 16;
constexpr bool kFold = 1;
constexpr int kBm = 64 * kWgM;
constexpr int kBn = kWn * kWgN;
constexpr int kThreads = 128 * kWgM * kWgN;
constexpr int kSteps = kBk / 8;     // k8 steps per k-tile
constexpr int kAcc = kWn / 2;       // accumulator registers per thread
static_assert(kWn == 64 || kWn == 128, "wgmma n of this kernel");
static_assert(kBk % 8 == 0 && kStages >= 2, "k-tiles of whole k8 steps; two stages at least");

constexpr int64_t kTilesM = (kM + kBm - 1) / kBm;
constexpr int64_t kTilesN = (kN + kBn - 1) / kBn;
constexpr int kKTiles = (int)((kK + kBk - 1) / kBk);

// B's prepared block of one (n-tile, k-tile): big then small, each kBk x kBn. Core matrix
// (8 n x 4 k, 128 bytes) of k8 step s, half q, row group G at float ((s * 2 + q) * (kBn / 8) +
// G) * 32; element i of half q is the step's physical k 2i + q (the mma's k slot 4q + i).
constexpr int kPartFloats = kBk * kBn;
constexpr int kBlockFloats = 2 * kPartFloats;
constexpr int64_t kImageFloats = kTilesN * kKTiles * kBlockFloats;  // B's parts, per batch
constexpr uint32_t kLbo = (kBn / 8) * 128;  // bytes from a k8 step's first half to its second
constexpr uint32_t kSbo = 128;              // bytes from one 8-row group to the next
// Shared memory of one stage: A's raw tile (rows along k padded by 8 floats for the 8-byte
// fragment loads, rows along m by 4: conflict-free phases), rounded up to 128 bytes, then B's
// block.
constexpr int kLdsA = kTransA ? kBm + 4 : kBk + 8;
constexpr int kStageA = ((kTransA ? kBk * kLdsA : kBm * kLdsA) + 31) / 32 * 32;
constexpr int kStageFloats = kStageA + kBlockFloats;
constexpr int kSmemBytes = kStages * kStageFloats * 4;
static_assert(kSmemBytes <= 227 * 1024, "shared memory of an H100 block");
static_assert(kLbo < (1 << 18) && kSmemBytes < (1 << 18), "descriptor fields of 14 bits of 16 bytes");

constexpr bool kVecA = kLda % 4 == 0;

// -- device operations ----------------------------------------------------------------------

__device__ __forceinline__ float* dynamic_smem() {
#ifdef KS_EMULATE
  return static_cast<float*>(ks_emu::dynamic_shared_memory());
#else
  extern __shared__ __align__(128) float ks_smem[];
  return ks_smem;
#endif
}

/// Returns `p`'s address in the shared window.
__device__ __forceinline__ uint32_t shared_address(const void* p) {
#ifdef KS_EMULATE
  return ks_emu::shared_address(p);
#else
  return (uint32_t)__cvta_generic_to_shared(p);
#endif
}

/// Returns the wgmma descriptor of a K-major, no-swizzle operand at shared address `start`.
__device__ __forceinline__ uint64_t descriptor(uint32_t start) {
  return (uint64_t)((start >> 4) & 0x3fff) | ((uint64_t)((kLbo >> 4) & 0x3fff) << 16) |
         ((uint64_t)((kSbo >> 4) & 0x3fff) << 32);
}

/// Returns `x` rounded to tf32 (to nearest, ties away), as a float's bits.
__device__ __forceinline__ uint32_t to_tf32(float x) {
#ifdef KS_EMULATE
  return ks_emu::cvt_rna_tf32(x);
#else
  uint32_t r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(x));
  return r;
#endif
}

/// Splits `x` into its tf32 big part and the tf32 rest.
__device__ __forceinline__ void split(float x, uint32_t& big, uint32_t& small) {
  big = to_tf32(x);
  small = to_tf32(x - __uint_as_float(big));
}

template <int kBytes>
__device__ __forceinline__ void cp_async(float* to, const float* from, int src_bytes) {
#ifdef KS_EMULATE
  ks_emu::cp_async(to, from, kBytes, src_bytes);
#else
  const uint32_t s = shared_address(to);
  if constexpr (kBytes == 16)
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" ::"r"(s), "l"(from),
                 "r"(src_bytes)
                 : "memory");
  else
    asm volatile("cp.async.ca.shared.global [%0], [%1], 4, %2;" ::"r"(s), "l"(from),
                 "r"(src_bytes)
                 : "memory");
#endif
}

__device__ __forceinline__ void cp_async_commit() {
#ifdef KS_EMULATE
  ks_emu::cp_async_commit();
#else
  asm volatile("cp.async.commit_group;" ::: "memory");
#endif
}

template <int kPending>
__device__ __forceinline__ void cp_async_wait() {
#ifdef KS_EMULATE
  ks_emu::cp_async_wait(kPending);
#else
  asm volatile("cp.async.wait_group %0;" ::"n"(kPending) : "memory");
#endif
}

/// Orders this thread's generic-proxy shared-memory accesses with the async proxy's (the
/// tensor cores reading B through descriptors).
__device__ __forceinline__ void fence_proxy_async() {
#ifndef KS_EMULATE
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
#endif
}

/// wgmma.fence: the warpgroup's register writes (accumulators, A) happen before its next wgmma.
__device__ __forceinline__ void wgmma_fence() {
#ifndef KS_EMULATE
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
#endif
}

__device__ __forceinline__ void wgmma_commit() {
#ifdef KS_EMULATE
  ks_emu::wgmma_commit();
#else
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
#endif
}

/// Waits for all of the warpgroup's wgmma groups but the newest kPending.
template <int kPending>
__device__ __forceinline__ void wgmma_wait() {
#ifdef KS_EMULATE
  ks_emu::wgmma_wait(kPending);
#else
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(kPending) : "memory");
#endif
}

/// Keeps the compiler from moving reads or writes of `r` across this point (a register the
/// tensor core owns between a wgmma and its wait), nor from reusing it before.
__device__ __forceinline__ void keep(float& r) {
#ifndef KS_EMULATE
  asm volatile("" : "+f"(r)::"memory");
#else
  (void)r;
#endif
}

__device__ __forceinline__ void keep(uint32_t& r) {
#ifndef KS_EMULATE
  asm volatile("" : "+r"(r)::"memory");
#else
  (void)r;
#endif
}

/// Starts copying the kRows x kCols tile at (row0, col0) of a row-major matrix of
/// rows x cols (row length ld) into shared `to` (row length kLds); zeros outside the matrix.
template <int kRows, int kCols, int kLds, bool kVec>
__device__ __forceinline__ void load_tile(float* to, const float* matrix, int64_t ld, int64_t row0,
                                          int64_t col0, int64_t rows, int64_t cols, int tid) {
  // 32-bit offsets where the matrix allows: fewer registers live across the main loop.
  using index = typename std::conditional<(kM * kK < (1ll << 31) && kK * kN < (1ll << 31)), int,
                                          int64_t>::type;
  constexpr int kWidth = kVec ? 4 : 1;
  constexpr int kPerRow = kCols / kWidth;
  constexpr int kPieces = kRows * kPerRow;
#pragma unroll
  for (int i = 0; i < (kPieces + kThreads - 1) / kThreads; ++i) {
    const int p = tid + i * kThreads;
    if (kPieces % kThreads != 0 && p >= kPieces)
      break;
    const int r = p / kPerRow;
    const int c = (p % kPerRow) * kWidth;
    const index gr = (index)row0 + r;
    const index gc = (index)col0 + c;
    index valid = 0;  // elements of this piece inside the matrix
    if (gr < (index)rows && gc < (index)cols)
      valid = (index)cols - gc < kWidth ? (index)cols - gc : kWidth;
    const float* from = valid > 0 ? matrix + (gr * (index)ld + gc) : matrix;
    cp_async<kWidth * 4>(to + r * kLds + c, from, (int)valid * 4);
  }
}

/// Starts copying k-tile `kt` of A and B's prepared block into stage `stage`.
__device__ __forceinline__ void load_stage(float* smem, int stage, int kt, const float* a,
                                           const float* b_blocks, int64_t m0, int tid) {
  float* sa = smem + stage * kStageFloats;
  float* sb = sa + kStageA;
  const int64_t k0 = (int64_t)kt * kBk;
  if constexpr (kTransA)
    load_tile<kBk, kBm, kLdsA, kVecA>(sa, a, kLda, k0, m0, kK, kM, tid);
  else
    load_tile<kBm, kBk, kLdsA, kVecA>(sa, a, kLda, m0, k0, kM, kK, tid);
  const float* from = b_blocks + (int64_t)kt * kBlockFloats;
  constexpr int kChunks = kBlockFloats / 4;
#pragma unroll
  for (int i = 0; i < (kChunks + kThreads - 1) / kThreads; ++i) {
    const int c = tid + i * kThreads;
    if (kChunks % kThreads != 0 && c >= kChunks)
      break;
    cp_async<16>(sb + 4 * c, from + 4 * c, 16);
  }
}

/// Splits B into its big and small parts, laid out as the main kernel's shared memory wants
/// them (see kPartFloats), zero outside B. A thread takes one n's k8 step.
__global__ void __launch_bounds__(256)
split_b(const float* __restrict__ B, float* __restrict__ image, int64_t b_batch_stride) {
  constexpr int64_t kRows = kTilesN * kBn;       // n, padded
  constexpr int64_t kSpan = (int64_t)kKTiles * kSteps;  // k8 steps, padded
  const int64_t w = (int64_t)blockIdx.x * 256 + threadIdx.x;
  if (w >= kRows * kSpan)
    return;
  // Consecutive threads read consecutive addresses: along n when B's rows run along n.
  const int64_t n = kTransB ? w / kSpan : w % kRows;
  const int64_t step = kTransB ? w % kSpan : w / kRows;
  const float* b = B + (int64_t)blockIdx.z * b_batch_stride;
  float v[8];
#pragma unroll
  for (int j = 0; j < 8; ++j) {
    const int64_t k = step * 8 + j;
    v[j] = n < kN && k < kK ? (kTransB ? b[n * kK + k] : b[k * kN + n]) : 0.0f;
  }
  const int64_t tile_n = n / kBn;
  const int nl = (int)(n % kBn);
  const int kt = (int)(step / kSteps);
  const int s = (int)(step % kSteps);
  float* block = image + (int64_t)blockIdx.z * kImageFloats +
                 (tile_n * kKTiles + kt) * (int64_t)kBlockFloats;
#pragma unroll
  for (int q = 0; q < 2; ++q) {
    uint32_t hi[4], lo[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      split(v[2 * i + q], hi[i], lo[i]);
    const int at = ((s * 2 + q) * (kBn / 8) + nl / 8) * 32 + (nl % 8) * 4;
    *reinterpret_cast<float4*>(block + at) = make_float4(
        __uint_as_float(hi[0]), __uint_as_float(hi[1]), __uint_as_float(hi[2]), __uint_as_float(hi[3]));
    *reinterpret_cast<float4*>(block + kPartFloats + at) = make_float4(
        __uint_as_float(lo[0]), __uint_as_float(lo[1]), __uint_as_float(lo[2]), __uint_as_float(lo[3]));
  }
}

/// Loads and splits this warp's A fragments of k8 step s (rows row0 + g, + 8; slots t, t + 4
/// at physical k 2t, 2t + 1): a0 (g, t), a1 (g + 8, t), a2 (g, t + 4), a3 (g + 8, t + 4).
__device__ __forceinline__ void load_a(const float* sa, int row0, int s, int g, int t,
                                       uint32_t (&big)[4], uint32_t (&small)[4]) {
  float v[4];
  if constexpr (kTransA) {  // raw rows along m
#pragma unroll
    for (int q = 0; q < 2; ++q) {
      v[2 * q] = sa[(8 * s + 2 * t + q) * kLdsA + row0 + g];
      v[2 * q + 1] = sa[(8 * s + 2 * t + q) * kLdsA + row0 + g + 8];
    }
  } else {  // raw rows along k: both slots in one 8-byte load
    const float2 lo = *reinterpret_cast<const float2*>(sa + (row0 + g) * kLdsA + 8 * s + 2 * t);
    const float2 hi =
        *reinterpret_cast<const float2*>(sa + (row0 + g + 8) * kLdsA + 8 * s + 2 * t);
    v[0] = lo.x;
    v[2] = lo.y;
    v[1] = hi.x;
    v[3] = hi.y;
  }
#pragma unroll
  for (int r = 0; r < 4; ++r)
    split(v[r], big[r], small[r]);
}

/// d (+)= a * B for this warpgroup's 64 x kWn tile, k = 8: A from registers (the m16n8k8
/// fragment layout, warp w of the warpgroup holding rows 16w..16w + 15), B (kWn x 8, K-major)
/// from shared memory through `b_descriptor`; scale_d = 0 ignores d's old value.
/// Asynchronous: d and a belong to the tensor cores until wgmma_wait.
template <int kWidth = kWn>
__device__ __forceinline__ void wgmma(float (&d)[kWidth / 2], const uint32_t (&a)[4],
                                      uint64_t b_descriptor, int scale_d) {
#ifdef KS_EMULATE
  ks_emu::wgmma_m64nNk8_tf32_rs(d, a, b_descriptor, kWidth, scale_d != 0);
#else
  if constexpr (kWidth == 128) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %69, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31,"
        " %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47,"
        " %48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63}, "
        "{%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31]),
          "+f"(d[32]), "+f"(d[33]), "+f"(d[34]), "+f"(d[35]), "+f"(d[36]), "+f"(d[37]), "+f"(d[38]), "+f"(d[39]),
          "+f"(d[40]), "+f"(d[41]), "+f"(d[42]), "+f"(d[43]), "+f"(d[44]), "+f"(d[45]), "+f"(d[46]), "+f"(d[47]),
          "+f"(d[48]), "+f"(d[49]), "+f"(d[50]), "+f"(d[51]), "+f"(d[52]), "+f"(d[53]), "+f"(d[54]), "+f"(d[55]),
          "+f"(d[56]), "+f"(d[57]), "+f"(d[58]), "+f"(d[59]), "+f"(d[60]), "+f"(d[61]), "+f"(d[62]), "+f"(d[63])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"(scale_d));
  } else {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %37, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n64k8.f32.tf32.tf32 "
        "{%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15,"
        " %16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31}, "
        "{%32, %33, %34, %35}, %36, p, 1, 1;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7]),
          "+f"(d[8]), "+f"(d[9]), "+f"(d[10]), "+f"(d[11]), "+f"(d[12]), "+f"(d[13]), "+f"(d[14]), "+f"(d[15]),
          "+f"(d[16]), "+f"(d[17]), "+f"(d[18]), "+f"(d[19]), "+f"(d[20]), "+f"(d[21]), "+f"(d[22]), "+f"(d[23]),
          "+f"(d[24]), "+f"(d[25]), "+f"(d[26]), "+f"(d[27]), "+f"(d[28]), "+f"(d[29]), "+f"(d[30]), "+f"(d[31])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b_descriptor), "r"(scale_d));
  }
#endif
}

__global__ void __launch_bounds__(kThreads, 1)
matmul_tf32x3_wgmma(const float* __restrict__ A, const float* __restrict__ image,
                    float* __restrict__ C, int64_t a_batch_stride, int64_t image_batch_stride) {
  float* smem = dynamic_smem();
  const int tid = (int)threadIdx.x;
  const int warp = tid / 32;
  const int lane = tid % 32;
  const int g = lane / 4;
  const int t = lane % 4;
  const int group = warp / 4;  // this thread's warpgroup
  const int group_row0 = group / kWgN * 64;
  const int group_col0 = group % kWgN * kWn;
  const int warp_row0 = group_row0 + warp % 4 * 16;

  // Grouped order: kGroupM tile rows sweep the tile columns together, sharing B in L2.
  const int64_t pid = blockIdx.x;
  const int64_t group_span = (int64_t)kGroupM * kTilesN;
  const int64_t first_m = pid / group_span * kGroupM;
  const int64_t group_rows = kTilesM - first_m < kGroupM ? kTilesM - first_m : kGroupM;
  const int64_t m0 = (first_m + pid % group_span % group_rows) * kBm;
  const int64_t tile_n = pid % group_span / group_rows;
  const int64_t n0 = tile_n * kBn;
  const int64_t batch = blockIdx.z;
  const float* a = A + batch * a_batch_stride;
  const float* b_blocks = image + batch * image_batch_stride + tile_n * kKTiles * (int64_t)kBlockFloats;

  // This warpgroup's columns of B's parts in stage 0, as descriptors of k8 step 0; step s adds
  // s * 2 * kLbo bytes, stage p adds p * kStageFloats * 4 bytes (descriptor units: 16 bytes).
  const uint32_t b0 = shared_address(smem + kStageA + group_col0 / 8 * 32);
  const uint64_t big_desc = descriptor(b0);
  const uint64_t small_desc = descriptor(b0 + kPartFloats * 4);
  constexpr uint64_t kStepDesc = (uint64_t)(2 * kLbo) >> 4;
  constexpr uint64_t kStageDesc = (uint64_t)kStageFloats * 4 >> 4;

#pragma unroll
  for (int s = 0; s < kStages - 1; ++s) {
    if (s < kKTiles)
      load_stage(smem, s, s, a, b_blocks, m0, tid);
    cp_async_commit();  // an empty group keeps the count of groups per tile fixed
  }

  float acc[kAcc];
  float fresh[kAcc];
#pragma unroll
  for (int r = 0; r < kAcc; ++r) {
    acc[r] = 0.0f;
    fresh[r] = 0.0f;
  }
  float(&part)[kAcc] = kFold ? fresh : acc;

  for (int kt = 0; kt < kKTiles; ++kt) {
    // Tile kt has landed once at most kStages - 2 newer groups are in flight; the fence hands
    // this thread's copies to the async proxy, the barrier everyone's, and tells that every
    // wgmma and load of tile kt - 1 is done (each warpgroup waited for its own).
    cp_async_wait<kStages - 2>();
    fence_proxy_async();
    __syncthreads();
    const int stage = kt % kStages;
    const float* sa = smem + stage * kStageFloats;

    uint32_t a_big[kSteps][4], a_small[kSteps][4];
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
      load_a(sa, warp_row0, s, g, t, a_big[s], a_small[s]);
#pragma unroll
    for (int r = 0; r < kAcc; ++r)
      keep(part[r]);
    wgmma_fence();
#pragma unroll
    for (int s = 0; s < kSteps; ++s) {
      const uint64_t at = (uint64_t)stage * kStageDesc + (uint64_t)s * kStepDesc;
      // The small products first, while the partial sum is small; the first one of the tile
      // starts the partial sum afresh.
      wgmma(part, a_small[s], big_desc + at, kFold && s == 0 ? 0 : 1);
      wgmma(part, a_big[s], small_desc + at, 1);
      wgmma(part, a_big[s], big_desc + at, 1);
    }
    wgmma_commit();

    // While the tensor cores work: the prefetch into the stage that tile kt - 1 used.
    if (kt + kStages - 1 < kKTiles)
      load_stage(smem, (kt + kStages - 1) % kStages, kt + kStages - 1, a, b_blocks, m0, tid);
    cp_async_commit();

    wgmma_wait<0>();
#pragma unroll
    for (int r = 0; r < kAcc; ++r)
      keep(part[r]);
#pragma unroll
    for (int s = 0; s < kSteps; ++s)
#pragma unroll
      for (int r = 0; r < 4; ++r) {
        keep(a_big[s][r]);
        keep(a_small[s][r]);
      }
    if constexpr (kFold) {
#pragma unroll
      for (int r = 0; r < kAcc; ++r)
        acc[r] += fresh[r];
    }
  }

  // D fragment (PTX ISA, wgmma m64nN f32): d[4j + 2h + e] at (16w + g + 8h, 8j + 2t + e).
  float* out = C + batch * kM * kN;
#pragma unroll
  for (int h = 0; h < 2; ++h) {
    const int64_t row = m0 + warp_row0 + g + 8 * h;
    if (row >= kM)
      continue;
    float* line = out + row * kN;
#pragma unroll
    for (int j = 0; j < kWn / 8; ++j) {
      const int64_t col = n0 + group_col0 + 8 * j + 2 * t;
      if constexpr (kN % 2 == 0) {  // col is even: both columns exist, 8-byte aligned
        if (col < kN)
          *reinterpret_cast<float2*>(line + col) = make_float2(acc[4 * j + 2 * h], acc[4 * j + 2 * h + 1]);
      } else {
        if (col < kN)
          line[col] = acc[4 * j + 2 * h];
        if (col + 1 < kN)
          line[col + 1] = acc[4 * j + 2 * h + 1];
      }
    }
  }
}

bool is_contiguous(const ks_tensor& x) {
  int64_t expect = 1;
  for (int32_t d = x.ndim - 1; d >= 0; --d) {
    if (x.shape[d] != 1 && x.stride[d] != expect)
      return false;
    expect *= x.shape[d];
  }
  return true;
}

/// Checks that `x` is [rows, cols] or [batch, rows, cols] (batch = kBatch, or 1 when shared);
/// sets `batch_stride` to rows * cols, or 0 for an operand every batch shares.
bool matches(const ks_tensor& x, int64_t rows, int64_t cols, int64_t& batch_stride) {
  const int32_t r = x.ndim;
  if (x.shape[r - 2] != rows || x.shape[r - 1] != cols)
    return false;
  batch_stride = r == 3 && x.shape[0] > 1 ? rows * cols : 0;
  return r == 2 || x.shape[0] == kBatch || x.shape[0] == 1;
}

/// Returns a device buffer of at least `bytes`, kept between calls; null when none.
float* workspace(size_t bytes) {
  static float* buffer = nullptr;
  static size_t capacity = 0;
  if (capacity < bytes) {
    if (buffer != nullptr)
      cudaFree(buffer);
    buffer = nullptr;
    capacity = 0;
    if (cudaMalloc(reinterpret_cast<void**>(&buffer), bytes) != cudaSuccess)
      return nullptr;
    capacity = bytes;
  }
  return buffer;
}

} // namespace

extern "C" int ks_forward(const ks_tensor* inputs, int32_t n_inputs, ks_tensor* outputs,
                          int32_t n_outputs, void* cuda_stream) {
  if (n_inputs != 2) return 1;
  if (n_outputs != 1) return 2;
  const ks_tensor& A = inputs[0];
  const ks_tensor& B = inputs[1];
  ks_tensor& C = outputs[0];
  if (A.dtype != KS_F32 || B.dtype != KS_F32) return 3;
  if (C.dtype != KS_F32) return 4;
  if (A.ndim < 2 || A.ndim > 3 || B.ndim < 2 || B.ndim > 3) return 5;
  if (C.ndim < 2 || C.ndim > 3) return 6;
  int64_t a_stride = 0, b_stride = 0, c_stride = 0;
  if (!matches(A, kTransA ? kK : kM, kTransA ? kM : kK, a_stride) ||
      !matches(B, kTransB ? kN : kK, kTransB ? kK : kN, b_stride) ||
      !matches(C, kM, kN, c_stride) || (kBatch > 1 && c_stride == 0))
    return 7;
  if (!is_contiguous(A) || !is_contiguous(B) || !is_contiguous(C)) return 8;
  if ((uintptr_t)A.data % 16 != 0 || (uintptr_t)B.data % 16 != 0 || (uintptr_t)C.data % 16 != 0)
    return 11;
  if (kM == 0 || kN == 0 || kBatch == 0) return 0;
  constexpr int64_t kSplitBlocks = (kTilesN * kBn * kKTiles * kSteps + 255) / 256;
  if (kTilesM * kTilesN > 0x7fffffff || kSplitBlocks > 0x7fffffff || kBatch > 65535) return 9;

  static bool configured = false;
  if (!configured) {
    if (cudaFuncSetAttribute(matmul_tf32x3_wgmma, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             kSmemBytes) != cudaSuccess)
      return 10;
    configured = true;
  }
  cudaStream_t stream = (cudaStream_t)cuda_stream;
  // B's parts: one image per batch, or one for all when B is shared.
  const int64_t images = b_stride == 0 ? 1 : kBatch;
  float* image = workspace((size_t)(images * kImageFloats) * sizeof(float));
  if (image == nullptr) return 12;
  cudaLaunchConfig_t split_config = {};
  split_config.gridDim = dim3((unsigned)kSplitBlocks, 1, (unsigned)images);
  split_config.blockDim = dim3(256, 1, 1);
  split_config.stream = stream;
  if (cudaLaunchKernelEx(&split_config, split_b, (const float*)B.data, image, b_stride) !=
      cudaSuccess)
    return 10;
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3((unsigned)(kTilesM * kTilesN), 1, (unsigned)kBatch);
  config.blockDim = dim3(kThreads, 1, 1);
  config.dynamicSmemBytes = kSmemBytes;
  config.stream = stream;
  if (cudaLaunchKernelEx(&config, matmul_tf32x3_wgmma, (const float*)A.data, (const float*)image,
                         (float*)C.data, a_stride, b_stride == 0 ? (int64_t)0 : kImageFloats) !=
      cudaSuccess)
    return 10;
  return cudaGetLastError() != cudaSuccess ? 10 : 0;
}
