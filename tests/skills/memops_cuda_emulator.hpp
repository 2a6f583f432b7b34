// A CUDA emulator for the memory-bound skills' kernels (elementwise, scan, pool, matvec, norm,
// reduce) and the family references, so that their index math, tails, alignment paths, warp
// collectives, barriers and inter-block protocols (decoupled look-back, last-block combines,
// clusters, grid barriers) are run and checked on a machine with no GPU. A rendered template is
// compiled by the host C++ compiler with this header standing in for cuda_runtime.h (and
// cooperative_groups.h), after the source rewrite (emulated_kernel.cpp) has turned every launch
// `k<<<grid, block, smem, stream>>>(args)` into a call of ks_emu::launch and every __shared__
// declaration into a per-block variable; cudaLaunchKernelEx calls ks_emu::launch itself.
//
// How it runs a launch: all on the calling OS thread, every CUDA thread a fiber (ucontext).
// Up to `concurrent_blocks` blocks are resident at once, started in a shuffled order (the
// hardware promises no order either), and the scheduler runs them round robin, each of their
// fibers until it waits: at __syncthreads (released when every live thread of its block is
// there), at a warp collective (shuffles, ballots: released when all 32 lanes are there, each
// lane then reads what the others deposited), or at __nanosleep (a spin-wait: it runs again
// next round, after the other blocks had their turn). So a block spinning on a flag that a
// block started later sets makes progress, as on a GPU, and one waiting for a block that was
// never started hangs, which is reported. Shared memory is per block and starts as NaN bytes
// (0xff), so a read of shared memory nothing wrote poisons the result.
//
// Thread-block clusters and cooperative launches (cudaLaunchKernelEx with their attributes):
// a cluster's blocks start together and stay resident until the last of them finishes;
// barrier.cluster's arrive and wait (cluster_arrive, cluster_wait; cg::this_cluster().sync())
// are counted per cluster, a wait spinning until every thread of the cluster arrived; a block
// reads a peer's shared memory through map_shared_rank, which fails once that peer has
// finished (its shared memory would be gone). A cooperative launch keeps every block resident
// (refused when the grid exceeds sm_count x blocks_per_sm, as on a GPU), and cg::this_grid()
// .sync() waits for every thread of the grid. cp.async (cp_async, cp_async_wait_all) checks
// the alignment of both addresses and that the destination is the block's shared memory, and
// lands the copy only at its thread's wait_all (the latest the hardware may), so a read before
// the wait sees the old contents. The templates call these under KS_EMULATE, in place of their
// inline PTX.
//
// Not modelled: timing, occupancy, memory ordering beyond sequential consistency (fences are
// no-ops), bank conflicts, partial-warp collectives (every collective here takes the full warp).
// It is a test tool, compiled only into the candidates of tests/skills/memops_skills_test.cpp.
#pragma once

#include <math.h>
#include <ucontext.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <numeric>
#include <random>
#include <string>
#include <type_traits>
#include <typeinfo>
#include <utility>
#include <vector>

// -- the CUDA C++ dialect, as plain C++ ---------------------------------------------------------

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __launch_bounds__(...)
#define __align__(n) alignas(n)

struct alignas(8) float2 {
  float x, y;
};
struct alignas(16) float4 {
  float x, y, z, w;
};
struct alignas(4) uchar4 {
  unsigned char x, y, z, w;
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
  cudaErrorCooperativeLaunchTooLarge = 720,
};

enum cudaFuncAttribute : int {
  cudaFuncAttributeMaxDynamicSharedMemorySize = 8,
  cudaFuncAttributeNonPortableClusterSizeAllowed = 12,
};

enum cudaLaunchAttributeID : int {
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeClusterDimension = 4,
};

struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  union {
    struct {
      unsigned x, y, z;
    } clusterDim;
    int cooperative;
  } val;
};

struct cudaLaunchConfig_t {
  dim3 gridDim;
  dim3 blockDim;
  size_t dynamicSmemBytes = 0;
  cudaStream_t stream = nullptr;
  cudaLaunchAttribute* attrs = nullptr;
  unsigned numAttrs = 0;
};
enum cudaDeviceAttr : int {
  cudaDevAttrMultiProcessorCount = 16,
  cudaDevAttrMaxSharedMemoryPerBlockOptin = 97,
};

// The running fiber's built-in variables: the scheduler sets them before it switches to a
// fiber (they are plain variables, not macros, so that a launch configuration's gridDim and
// blockDim members keep their names).
inline dim3 threadIdx, blockIdx, blockDim, gridDim;

namespace ks_emu {

struct settings {
  int32_t sm_count = 4;          ///< what cudaDevAttrMultiProcessorCount answers
  int32_t blocks_per_sm = 2;     ///< what the occupancy calculator answers
  int32_t concurrent_blocks = 3; ///< blocks resident at once
  uint64_t seed = 1;             ///< block start order and fiber order
  size_t max_dynamic_smem = 227 * 1024;
};

enum class fiber_state { runnable, sleeping, at_block_barrier, at_warp_barrier, done };

struct block_run;

/// A cp.async issued and not yet landed.
struct pending_copy {
  void* dst;
  const void* src;
  size_t bytes;
};

struct fiber {
  ucontext_t context{};
  std::unique_ptr<unsigned char[]> stack; // from the emulator's pool, uninitialized
  dim3 thread_idx;
  int32_t linear = 0;
  fiber_state state = fiber_state::runnable;
  block_run* block = nullptr;
  uint64_t cluster_arrivals = 0;    ///< barrier.cluster arrives so far
  uint64_t grid_arrivals = 0;       ///< grid syncs so far
  std::vector<pending_copy> copies; ///< its cp.async copies not yet waited for
};

/// The blocks of one thread-block cluster (a block without a cluster is one of its own), and
/// the arrivals of each phase of its barrier.
struct cluster_run {
  std::vector<block_run*> blocks; ///< by rank
  size_t threads = 0;             ///< of all its blocks
  std::map<uint64_t, size_t> arrived;
  size_t finished = 0; ///< blocks
};

/// One resident block: its fibers, shared memory and warp exchange areas.
struct block_run {
  dim3 idx;
  std::vector<std::unique_ptr<fiber>> fibers;
  // By declaration and type: one declaration in a template (a block reduction over any type)
  // is one variable per instantiation.
  std::map<std::pair<int, size_t>, std::vector<unsigned char>> shared;
  std::vector<unsigned char> dynamic_shared;
  std::vector<std::array<uint64_t, 32>> exchange; // per warp
  bool finished = false;
  std::shared_ptr<cluster_run> cluster;
  uint32_t cluster_rank = 0;
};

/// What a launch asks beyond its grid: thread-block clusters of `cluster` blocks along x, or
/// a cooperative launch (every block resident at once, grid-wide barriers).
struct launch_options {
  unsigned cluster = 1;
  bool cooperative = false;
};

struct emulator {
  settings config;
  std::string error; // the first error of the current launch
  dim3 grid_dim, block_dim;
  std::function<void()> body;
  fiber* current = nullptr;
  ucontext_t scheduler{};
  cudaError_t last_error = cudaSuccess;
  std::mt19937_64 rng{1};
  std::vector<std::unique_ptr<unsigned char[]>> spare_stacks; // reused across blocks
  uint64_t pool_threshold = 0;             // the default memory pool's release threshold, in bytes
  launch_options options;                  // of the current launch
  size_t grid_threads = 0;                 // of the current launch
  std::map<uint64_t, size_t> grid_arrived; // grid syncs of the current launch, per phase

  void fail(const std::string& what) {
    if (error.empty()) {
      error = what;
      if (current != nullptr)
        error += " (block " + std::to_string(current->block->idx.x) + ", thread " +
                 std::to_string(current->linear) + ")";
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
inline block_run& own_block() {
  return *state().current->block;
}

inline void yield_to_scheduler() {
  emulator& e = state();
  swapcontext(&e.current->context, &e.scheduler);
}

inline void wait_as(fiber_state s) {
  self().state = s;
  yield_to_scheduler();
}

inline void fiber_entry() {
  emulator& e = state();
  e.body();
  e.current->state = fiber_state::done;
  swapcontext(&e.current->context, &e.scheduler);
}

/// Returns where a block's shared variable (or its dynamic shared memory) starts in `bytes`:
/// 64-byte aligned, so that the same offset is the same variable in every block.
inline unsigned char* shared_base(std::vector<unsigned char>& bytes) {
  const uintptr_t at = reinterpret_cast<uintptr_t>(bytes.data());
  return bytes.data() + ((at + 63) / 64 * 64 - at);
}

/// Returns block `b`'s variable number `id` of type T, poisoned at the block's start.
template <typename T>
T& shared_of(block_run& b, int id) {
  static_assert(alignof(T) <= 64, "shared variables are 64-byte aligned at most");
  std::vector<unsigned char>& bytes = b.shared[{id, typeid(T).hash_code()}];
  if (bytes.empty())
    bytes.assign(sizeof(T) + 64, 0xff);
  return *reinterpret_cast<T*>(shared_base(bytes));
}

/// Returns the calling block's variable number `id` of type T, poisoned at the block's start.
template <typename T>
T& block_shared(int id) {
  return shared_of<T>(own_block(), id);
}

inline void* dynamic_shared() {
  return shared_base(own_block().dynamic_shared);
}

/// Returns whether [p, p + bytes) lies in block `b`'s shared memory, static or dynamic; if so,
/// sets `key` to its variable's (dynamic: id 0) and `offset` to its place in it.
inline bool find_shared(block_run& b, const void* p, size_t bytes, std::pair<int, size_t>& key,
                        size_t& offset) {
  const auto* at = static_cast<const unsigned char*>(p);
  auto inside = [&](std::vector<unsigned char>& v) {
    const unsigned char* base = shared_base(v);
    if (at < base || at + bytes > v.data() + v.size())
      return false;
    offset = static_cast<size_t>(at - base);
    return true;
  };
  if (inside(b.dynamic_shared)) {
    key = {0, 0};
    return true;
  }
  for (auto& [k, v] : b.shared)
    if (inside(v)) {
      key = k;
      return true;
    }
  return false;
}

/// Runs the fibers of `b` until each is done or waits; releases warps and the block barrier.
/// Returns whether any fiber ran to a point other than a spin-wait.
inline bool step_block(block_run& b) {
  emulator& e = state();
  bool progressed = false;
  std::vector<size_t> order(b.fibers.size());
  std::iota(order.begin(), order.end(), size_t{0});
  std::shuffle(order.begin(), order.end(), e.rng);
  for (size_t i : order) {
    fiber& f = *b.fibers[i];
    if (f.state == fiber_state::sleeping)
      f.state = fiber_state::runnable;
    else if (f.state == fiber_state::runnable)
      progressed = true;
    if (f.state != fiber_state::runnable)
      continue;
    e.current = &f;
    threadIdx = f.thread_idx;
    blockIdx = b.idx;
    blockDim = e.block_dim;
    gridDim = e.grid_dim;
    swapcontext(&e.scheduler, &f.context);
    e.current = nullptr;
    if (!e.error.empty())
      return false;
    if (f.state != fiber_state::sleeping)
      progressed = true;
  }
  const size_t warps = (b.fibers.size() + 31) / 32;
  for (size_t w = 0; w < warps; ++w) {
    size_t first = w * 32, last = std::min(first + 32, b.fibers.size());
    bool all = true, any = false;
    for (size_t i = first; i < last; ++i) {
      const bool at = b.fibers[i]->state == fiber_state::at_warp_barrier;
      all = all && at;
      any = any || at;
    }
    if (all) {
      for (size_t i = first; i < last; ++i)
        b.fibers[i]->state = fiber_state::runnable;
      progressed = true;
    } else if (any) {
      bool others_stuck = true; // lanes at a block barrier or done never reach the collective
      for (size_t i = first; i < last; ++i) {
        fiber_state s = b.fibers[i]->state;
        others_stuck = others_stuck && s != fiber_state::runnable && s != fiber_state::sleeping;
      }
      if (others_stuck) {
        e.fail("a warp collective that not every lane of the warp reaches");
        return false;
      }
    }
  }
  bool all_done = true, all_at_barrier_or_done = true, any_at_barrier = false;
  for (const auto& f : b.fibers) {
    all_done = all_done && f->state == fiber_state::done;
    all_at_barrier_or_done = all_at_barrier_or_done && (f->state == fiber_state::at_block_barrier ||
                                                        f->state == fiber_state::done);
    any_at_barrier = any_at_barrier || f->state == fiber_state::at_block_barrier;
  }
  if (all_done) {
    b.finished = true;
    return true;
  }
  if (all_at_barrier_or_done && any_at_barrier) {
    for (auto& f : b.fibers)
      if (f->state == fiber_state::at_block_barrier)
        f->state = fiber_state::runnable;
    progressed = true;
  }
  return progressed;
}

constexpr size_t kStackBytes = 64 * 1024;

inline std::unique_ptr<block_run> start_block(dim3 idx, size_t threads, size_t smem_bytes) {
  emulator& e = state();
  auto b = std::make_unique<block_run>();
  b->idx = idx;
  b->dynamic_shared.assign(smem_bytes + 64, 0xff);
  b->exchange.assign((threads + 31) / 32, {});
  for (size_t t = 0; t < threads; ++t) {
    auto f = std::make_unique<fiber>();
    if (e.spare_stacks.empty()) {
      f->stack.reset(new unsigned char[kStackBytes]);
    } else {
      f->stack = std::move(e.spare_stacks.back());
      e.spare_stacks.pop_back();
    }
    f->linear = static_cast<int32_t>(t);
    f->block = b.get();
    f->thread_idx =
        dim3(static_cast<unsigned>(t % e.block_dim.x),
             static_cast<unsigned>((t / e.block_dim.x) % e.block_dim.y),
             static_cast<unsigned>(t / (static_cast<size_t>(e.block_dim.x) * e.block_dim.y)));
    getcontext(&f->context);
    f->context.uc_stack.ss_sp = f->stack.get();
    f->context.uc_stack.ss_size = kStackBytes;
    f->context.uc_link = nullptr;
    makecontext(&f->context, &fiber_entry, 0);
    b->fibers.push_back(std::move(f));
  }
  return b;
}

/// Runs `kernel_body` for every thread of every block of `grid`, blocks interleaved; a
/// cluster's blocks start together, a cooperative launch's all at once.
inline cudaError_t launch(dim3 grid, dim3 block, size_t smem_bytes,
                          std::function<void()> kernel_body, launch_options options = {}) {
  emulator& e = state();
  e.error.clear();
  const size_t threads = static_cast<size_t>(block.x) * block.y * block.z;
  const uint64_t blocks = static_cast<uint64_t>(grid.x) * grid.y * grid.z;
  if (threads == 0 || threads > 1024 || blocks == 0 || grid.y > 65535 || grid.z > 65535) {
    e.fail("invalid launch configuration");
    return e.last_error = cudaErrorInvalidValue;
  }
  if (smem_bytes > e.config.max_dynamic_smem) {
    e.fail("dynamic shared memory over the limit: " + std::to_string(smem_bytes));
    return e.last_error = cudaErrorInvalidValue;
  }
  if (blocks > 4000000) {
    e.fail("grid too large to emulate: " + std::to_string(blocks) + " blocks");
    return e.last_error = cudaErrorInvalidValue;
  }
  const uint64_t cluster = options.cluster;
  if (cluster < 1 || cluster > 16 || grid.x % cluster != 0) {
    e.fail("invalid cluster size " + std::to_string(cluster) + " for a grid of " +
           std::to_string(grid.x) + " blocks along x");
    return e.last_error = cudaErrorInvalidValue;
  }
  const uint64_t gpu_blocks = static_cast<uint64_t>(e.config.sm_count) * e.config.blocks_per_sm;
  if (options.cooperative && blocks > gpu_blocks) {
    e.fail("a cooperative launch of " + std::to_string(blocks) + " blocks, more than the " +
           std::to_string(gpu_blocks) + " the GPU holds at once");
    return e.last_error = cudaErrorCooperativeLaunchTooLarge;
  }
  // Blocks resident at once: the setting, in whole clusters; every block when cooperative.
  const uint64_t most =
      options.cooperative
          ? blocks
          : std::max<uint64_t>(static_cast<uint64_t>(e.config.concurrent_blocks) / cluster, 1) *
                cluster;
  e.grid_dim = grid;
  e.block_dim = block;
  e.body = std::move(kernel_body);
  e.options = options;
  e.grid_threads = static_cast<size_t>(blocks) * threads;
  e.grid_arrived.clear();
  // Clusters (of one block without clusters) start mostly in order, with local shuffles:
  // blocks start in no promised order.
  std::vector<uint64_t> order(blocks / cluster);
  std::iota(order.begin(), order.end(), uint64_t{0});
  for (size_t i = 0; i + 1 < order.size(); i += 4)
    std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(i),
                 order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + 4)), e.rng);
  size_t next = 0;
  std::vector<std::unique_ptr<block_run>> resident;
  int64_t idle_rounds = 0;
  while (next < order.size() || !resident.empty()) {
    while (next < order.size() && resident.size() + cluster <= most) {
      // Cluster c is blocks [c * cluster, (c + 1) * cluster) in x order (clusters span x).
      const uint64_t c = order[next++];
      auto members = std::make_shared<cluster_run>();
      std::vector<uint32_t> ranks(cluster);
      std::iota(ranks.begin(), ranks.end(), 0u);
      std::shuffle(ranks.begin(), ranks.end(), e.rng);
      members->blocks.resize(cluster);
      members->threads = threads * cluster;
      for (uint32_t rank : ranks) {
        const uint64_t x_blocks = grid.x / cluster; // clusters along x
        const uint64_t x = c % x_blocks * cluster + rank, yz = c / x_blocks;
        dim3 idx(static_cast<unsigned>(x), static_cast<unsigned>(yz % grid.y),
                 static_cast<unsigned>(yz / grid.y));
        resident.push_back(start_block(idx, threads, smem_bytes));
        resident.back()->cluster = members;
        resident.back()->cluster_rank = rank;
        members->blocks[rank] = resident.back().get();
      }
    }
    bool progressed = false;
    for (auto& b : resident) {
      if (b->finished)
        continue;
      progressed = step_block(*b) || progressed;
      if (!e.error.empty())
        return e.last_error = cudaErrorLaunchFailure;
      if (b->finished)
        ++b->cluster->finished;
    }
    // A finished block leaves with the last of its cluster (a peer may still read its shared
    // memory until then: map_shared_rank refuses it).
    auto gone = [](const std::unique_ptr<block_run>& b) {
      return b->finished && b->cluster->finished == b->cluster->blocks.size();
    };
    for (auto& b : resident)
      if (gone(b))
        for (auto& f : b->fibers)
          e.spare_stacks.push_back(std::move(f->stack));
    resident.erase(std::remove_if(resident.begin(), resident.end(), gone), resident.end());
    idle_rounds = progressed ? 0 : idle_rounds + 1;
    if (idle_rounds > 200000) {
      e.fail("no block makes progress: a wait for a block that never runs, or a barrier not "
             "every thread reaches");
      return e.last_error = cudaErrorLaunchFailure;
    }
  }
  return cudaSuccess;
}

/// Spins (as __nanosleep does) until `done` holds.
template <typename Condition>
void spin_until(Condition done) {
  while (!done())
    wait_as(fiber_state::sleeping);
}

/// barrier.cluster.arrive: counts the calling thread in its cluster's next phase.
inline void cluster_arrive() {
  fiber& f = self();
  ++f.block->cluster->arrived[f.cluster_arrivals++];
}

/// barrier.cluster.wait: waits until every thread of the cluster arrived in the phase of the
/// calling thread's last arrive.
inline void cluster_wait() {
  fiber& f = self();
  if (f.cluster_arrivals == 0) {
    state().fail("barrier.cluster.wait without an arrive");
    wait_as(fiber_state::sleeping);
    return;
  }
  cluster_run& c = *f.block->cluster;
  const uint64_t phase = f.cluster_arrivals - 1;
  spin_until([&] { return c.arrived[phase] == c.threads; });
}

/// cg::this_grid().sync(): waits until every thread of the grid is there.
inline void grid_sync() {
  emulator& e = state();
  if (!e.options.cooperative) {
    e.fail("a grid sync in a launch that is not cooperative");
    wait_as(fiber_state::sleeping);
    return;
  }
  const uint64_t phase = self().grid_arrivals++;
  ++e.grid_arrived[phase];
  spin_until([&] { return e.grid_arrived[phase] == e.grid_threads; });
}

/// cluster.map_shared_rank: the address `p` (in the calling block's shared memory) has in
/// the shared memory of the cluster's block `rank`.
template <typename T>
T* map_shared_rank(T* p, unsigned rank) {
  emulator& e = state();
  block_run& own = own_block();
  if (rank >= own.cluster->blocks.size()) {
    e.fail("map_shared_rank to rank " + std::to_string(rank) + " of a cluster of " +
           std::to_string(own.cluster->blocks.size()));
    return p;
  }
  std::pair<int, size_t> key;
  size_t offset = 0;
  if (!find_shared(own, p, sizeof(T), key, offset)) {
    e.fail("map_shared_rank of an address outside the block's shared memory");
    return p;
  }
  block_run& peer = *own.cluster->blocks[rank];
  if (peer.finished) {
    e.fail("map_shared_rank to a block that has exited (its shared memory is gone)");
    return p;
  }
  std::vector<unsigned char>& bytes = key.first == 0 ? peer.dynamic_shared : peer.shared[key];
  if (bytes.empty()) // the peer has not touched the variable yet: poisoned, as at its start
    bytes.assign(own.shared[key].size(), 0xff);
  return reinterpret_cast<T*>(shared_base(bytes) + offset);
}

/// cp.async of `bytes` (4, 8 or 16) from global `src` to shared `dst`: checked now, landed at
/// the thread's cp_async_wait_all.
inline void cp_async(void* dst, const void* src, size_t bytes) {
  emulator& e = state();
  std::pair<int, size_t> key;
  size_t offset = 0;
  if (bytes != 4 && bytes != 8 && bytes != 16)
    e.fail("cp.async of " + std::to_string(bytes) + " bytes");
  else if (reinterpret_cast<uintptr_t>(dst) % bytes != 0 ||
           reinterpret_cast<uintptr_t>(src) % bytes != 0)
    e.fail("cp.async: an address not aligned to " + std::to_string(bytes) + " bytes");
  else if (!find_shared(own_block(), dst, bytes, key, offset))
    e.fail("cp.async: a destination outside the block's shared memory");
  else
    self().copies.push_back({dst, src, bytes});
}

/// cp.async.wait_all: lands every copy the calling thread issued.
inline void cp_async_wait_all() {
  for (const pending_copy& c : self().copies)
    std::memcpy(c.dst, c.src, c.bytes);
  self().copies.clear();
}

/// Returns *p, checking that p is aligned to T (a vector load).
template <typename T>
T load_aligned(const T* p) {
  if (reinterpret_cast<uintptr_t>(p) % alignof(T) != 0)
    state().fail("a vector load from an address not aligned to " + std::to_string(alignof(T)) +
                 " bytes");
  return *p;
}

/// A warp collective: deposits `bits`, meets the warp, returns lane `from`'s deposit.
inline uint64_t exchange(uint64_t bits, int from) {
  fiber& f = self();
  auto& slots = f.block->exchange[static_cast<size_t>(f.linear / 32)];
  slots[static_cast<size_t>(f.linear % 32)] = bits;
  wait_as(fiber_state::at_warp_barrier);
  uint64_t got = slots[static_cast<size_t>(from & 31)];
  wait_as(fiber_state::at_warp_barrier); // every lane has read before any writes again
  return got;
}

template <typename T>
T shuffle(T v, int from) {
  static_assert(sizeof(T) <= 8, "a shuffle moves at most 8 bytes here");
  uint64_t bits = 0;
  std::memcpy(&bits, &v, sizeof(T));
  uint64_t got = exchange(bits, from);
  T out;
  std::memcpy(&out, &got, sizeof(T));
  return out;
}

inline unsigned ballot(bool pred) {
  fiber& f = self();
  auto& slots = f.block->exchange[static_cast<size_t>(f.linear / 32)];
  slots[static_cast<size_t>(f.linear % 32)] = pred ? 1 : 0;
  wait_as(fiber_state::at_warp_barrier);
  unsigned mask = 0;
  for (int l = 0; l < 32; ++l)
    if (slots[static_cast<size_t>(l)] != 0)
      mask |= 1u << l;
  wait_as(fiber_state::at_warp_barrier);
  return mask;
}

} // namespace ks_emu

// -- device functions ---------------------------------------------------------------------------

inline void __syncthreads() {
  ks_emu::wait_as(ks_emu::fiber_state::at_block_barrier);
}
inline void __syncwarp(unsigned = 0xffffffffu) {
  (void)ks_emu::exchange(0, 0);
}
inline void __threadfence() {}
inline void __threadfence_block() {}
inline void __nanosleep(unsigned) {
  ks_emu::wait_as(ks_emu::fiber_state::sleeping);
}

template <typename T>
T __shfl_sync(unsigned, T v, int src, int = 32) {
  return ks_emu::shuffle(v, src);
}
template <typename T>
T __shfl_up_sync(unsigned, T v, unsigned delta, int = 32) {
  const int lane = ks_emu::self().linear % 32;
  T got =
      ks_emu::shuffle(v, lane >= static_cast<int>(delta) ? lane - static_cast<int>(delta) : lane);
  return got;
}
template <typename T>
T __shfl_down_sync(unsigned, T v, unsigned delta, int = 32) {
  const int lane = ks_emu::self().linear % 32;
  return ks_emu::shuffle(v, lane + static_cast<int>(delta) < 32 ? lane + static_cast<int>(delta)
                                                                : lane);
}
template <typename T>
T __shfl_xor_sync(unsigned, T v, int mask, int = 32) {
  const int lane = ks_emu::self().linear % 32;
  return ks_emu::shuffle(v, lane ^ mask);
}
inline unsigned __ballot_sync(unsigned, int pred) {
  return ks_emu::ballot(pred != 0);
}
inline int __any_sync(unsigned, int pred) {
  return ks_emu::ballot(pred != 0) != 0;
}
inline int __all_sync(unsigned, int pred) {
  return ks_emu::ballot(pred != 0) == 0xffffffffu;
}
inline int __ffs(unsigned x) {
  return x == 0 ? 0 : __builtin_ctz(x) + 1;
}
inline int __popc(unsigned x) {
  return __builtin_popcount(x);
}

// min and max of CUDA's device library (the host has std::min and std::max only).
inline int min(int a, int b) {
  return a < b ? a : b;
}
inline int max(int a, int b) {
  return a > b ? a : b;
}
inline unsigned min(unsigned a, unsigned b) {
  return a < b ? a : b;
}
inline unsigned max(unsigned a, unsigned b) {
  return a > b ? a : b;
}
inline long long min(long long a, long long b) {
  return a < b ? a : b;
}
inline long long max(long long a, long long b) {
  return a > b ? a : b;
}
inline long min(long a, long b) {
  return a < b ? a : b;
}
inline long max(long a, long b) {
  return a > b ? a : b;
}

// The cooperative groups the skills use: the grid of a cooperative launch, the cluster.
namespace cooperative_groups {
struct grid_group {
  void sync() const { ks_emu::grid_sync(); }
};
inline grid_group this_grid() {
  return {};
}
struct cluster_group {
  void sync() const {
    ks_emu::cluster_arrive();
    ks_emu::cluster_wait();
  }
  unsigned block_rank() const { return ks_emu::own_block().cluster_rank; }
  unsigned num_blocks() const {
    return static_cast<unsigned>(ks_emu::own_block().cluster->blocks.size());
  }
  template <typename T>
  T* map_shared_rank(T* p, unsigned rank) const {
    return ks_emu::map_shared_rank(p, rank);
  }
};
inline cluster_group this_cluster() {
  return {};
}
} // namespace cooperative_groups

template <typename T>
T __ldg(const T* p) {
  return *p;
}
template <typename T>
T __ldcs(const T* p) {
  return *p;
}
template <typename T>
T __ldcg(const T* p) {
  return *p;
}
template <typename T>
T __ldlu(const T* p) {
  return *p;
}
template <typename T>
void __stcs(T* p, T v) {
  *p = v;
}
template <typename T>
void __stcg(T* p, T v) {
  *p = v;
}

inline unsigned long long atomicAdd(unsigned long long* p, unsigned long long v) {
  unsigned long long old = *p;
  *p = old + v;
  return old;
}
inline unsigned atomicAdd(unsigned* p, unsigned v) {
  unsigned old = *p;
  *p = old + v;
  return old;
}
inline int atomicAdd(int* p, int v) {
  int old = *p;
  *p = old + v;
  return old;
}
inline unsigned atomicExch(unsigned* p, unsigned v) {
  unsigned old = *p;
  *p = v;
  return old;
}
inline float atomicAdd(float* p, float v) {
  float old = *p;
  *p = old + v;
  return old;
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
template <typename Kernel>
cudaError_t cudaOccupancyMaxActiveBlocksPerMultiprocessor(int* blocks, Kernel, int, size_t) {
  *blocks = ks_emu::state().config.blocks_per_sm;
  return cudaSuccess;
}
template <typename Kernel>
cudaError_t cudaFuncSetAttribute(Kernel, cudaFuncAttribute attribute, int value) {
  if (attribute == cudaFuncAttributeMaxDynamicSharedMemorySize &&
      static_cast<size_t>(value) > ks_emu::state().config.max_dynamic_smem)
    return ks_emu::state().last_error = cudaErrorInvalidValue;
  return cudaSuccess;
}
template <typename Kernel>
cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, Kernel,
                                           const cudaLaunchConfig_t* config) {
  unsigned size = 1;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeClusterDimension)
      size = config->attrs[i].val.clusterDim.x * config->attrs[i].val.clusterDim.y *
             config->attrs[i].val.clusterDim.z;
  const ks_emu::settings& s = ks_emu::state().config;
  *clusters = size > 16 ? 0 : s.sm_count * s.blocks_per_sm / static_cast<int>(size);
  return cudaSuccess;
}
/// cudaLaunchKernelEx's C++ form: a cluster (along x only) or a cooperative launch.
template <typename... Params, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...),
                               Args... args) {
  ks_emu::launch_options options;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute& a = config->attrs[i];
    if (a.id == cudaLaunchAttributeClusterDimension) {
      if (a.val.clusterDim.y != 1 || a.val.clusterDim.z != 1) {
        ks_emu::state().fail("the emulator runs clusters along x only");
        return ks_emu::state().last_error = cudaErrorInvalidValue;
      }
      options.cluster = a.val.clusterDim.x;
    } else if (a.id == cudaLaunchAttributeCooperative) {
      options.cooperative = a.val.cooperative != 0;
    }
  }
  return ks_emu::launch(
      config->gridDim, config->blockDim, config->dynamicSmemBytes, [=]() { kernel(args...); },
      options);
}
inline cudaError_t cudaMalloc(void** p, size_t bytes) {
  *p = std::aligned_alloc(256, (bytes + 255) / 256 * 256 + 256);
  if (*p != nullptr)
    std::memset(*p, 0xff, (bytes + 255) / 256 * 256); // NaN: memory nothing wrote
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFree(void* p) {
  std::free(p);
  return cudaSuccess;
}
// The stream-ordered allocator: the default pool of the one device, allocations as cudaMalloc's.
using cudaMemPool_t = struct ks_emulated_pool*;
enum cudaMemPoolAttr : int { cudaMemPoolAttrReleaseThreshold = 4 };
inline cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t* pool, int) {
  *pool = nullptr;
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t, cudaMemPoolAttr, void* value) {
  std::memcpy(value, &ks_emu::state().pool_threshold, sizeof(uint64_t));
  return cudaSuccess;
}
inline cudaError_t cudaMemPoolSetAttribute(cudaMemPool_t, cudaMemPoolAttr, void* value) {
  std::memcpy(&ks_emu::state().pool_threshold, value, sizeof(uint64_t));
  return cudaSuccess;
}
inline cudaError_t cudaMallocAsync(void** p, size_t bytes, cudaStream_t) {
  return cudaMalloc(p, bytes);
}
inline cudaError_t cudaFreeAsync(void* p, cudaStream_t) {
  return cudaFree(p);
}
inline cudaError_t cudaMemset(void* p, int value, size_t bytes) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}
inline cudaError_t cudaMemsetAsync(void* p, int value, size_t bytes, cudaStream_t = nullptr) {
  std::memset(p, value, bytes);
  return cudaSuccess;
}

/// Lets a test choose the emulator's settings and read the first error of the last launch;
/// every compiled candidate has its own emulator.
extern "C" __attribute__((visibility("default"))) void
ks_emulator_configure(int sm_count, int blocks_per_sm, int concurrent_blocks,
                      unsigned long long seed) {
  ks_emu::settings& s = ks_emu::state().config;
  s.sm_count = sm_count;
  s.blocks_per_sm = blocks_per_sm;
  s.concurrent_blocks = concurrent_blocks;
  s.seed = seed;
  ks_emu::state().rng.seed(seed);
}

extern "C" __attribute__((visibility("default"))) const char* ks_emulator_error() {
  return ks_emu::state().error.c_str();
}
