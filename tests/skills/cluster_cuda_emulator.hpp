// An extension of the memory-bound skills' CPU emulator (memops_cuda_emulator.hpp) for kernels
// launched with cudaLaunchKernelEx: thread-block clusters (co-scheduled blocks, the cluster
// barrier, distributed shared memory) and cooperative launches (every block resident at once,
// so that a grid-wide barrier built from atomics makes progress), plus cp.async. A rendered
// template compiled with -DKS_EMULATE calls the ks_emu:: functions below where the GPU runs
// inline PTX (the cluster barrier, mapa, cp.async); tests/skills/channel_norm_skills_test.cpp
// compiles it with this header standing in for cuda_runtime.h, after the same source rewrite
// (emulated_kernel.hpp) that the memops tests use.
//
// What is modelled, and how it can catch a bug:
// - A cluster's blocks start together and stay resident until all of them are done, as on the
//   GPU; the grid must be a whole number of clusters (along x).
// - The cluster barrier (barrier.cluster.arrive / wait): a thread that waits is released once
//   every thread of every block of its cluster has arrived; arriving twice without waiting, or
//   waiting without arriving, is an error.
// - map_shared_rank (mapa): the same variable of the peer block, found by where the pointer
//   lies in the caller's shared memory (dynamic or static); a pointer outside it, a rank
//   outside the cluster or a peer that has exited is an error. A block that exits while a peer
//   of its cluster still runs has its shared memory poisoned (NaN bytes), so a peer that reads
//   it after it exited (a missing barrier before the exit) computes NaN.
// - A cooperative launch starts every block at once and fails, as the GPU does, when the grid
//   exceeds sm_count x blocks_per_sm.
// - cp.async: both addresses aligned to the copy's size, the destination inside the block's
//   shared memory; the copy lands only when its thread waits (cp.async.wait_all), the latest the
//   hardware may complete it, so a read of shared memory before the wait sees NaN. A thread that
//   exits with copies in flight is an error.
//
// Not modelled: clusters along y or z, the non-portable cluster size opt-in (sizes up to 16 are
// accepted), cudaOccupancyMaxActiveClusters (it answers as if the clusters fit), memory ordering
// beyond sequential consistency, cache hints (they are plain loads and stores).
#pragma once

#include <tuple>

#include "memops_cuda_emulator.hpp"

enum cudaLaunchAttributeID : int {
  cudaLaunchAttributeCooperative = 2,
  cudaLaunchAttributeClusterDimension = 4,
};

union cudaLaunchAttributeValue {
  int cooperative;
  struct {
    unsigned x, y, z;
  } clusterDim;
};

struct cudaLaunchAttribute {
  cudaLaunchAttributeID id;
  cudaLaunchAttributeValue val;
};

// The fields gridDim and blockDim, named otherwise: the emulator's gridDim and blockDim are
// macros. A candidate initializes the struct by position (as the CUDA runtime declares it).
struct cudaLaunchConfig_t {
  dim3 grid;
  dim3 block;
  size_t dynamicSmemBytes = 0;
  cudaStream_t stream = nullptr;
  cudaLaunchAttribute* attrs = nullptr;
  unsigned numAttrs = 0;
};

constexpr cudaFuncAttribute cudaFuncAttributeNonPortableClusterSizeAllowed =
    static_cast<cudaFuncAttribute>(12);
constexpr cudaError_t cudaErrorCooperativeLaunchTooLarge = static_cast<cudaError_t>(720);

namespace ks_emu {

/// One cluster of a launch: its blocks by rank and its barrier.
struct cluster_run {
  std::vector<block_run*> blocks;
  uint64_t phase = 0;                      ///< completed barrier phases
  size_t arrived = 0;                      ///< arrivals in the current phase
  size_t expected = 0;                     ///< threads of the cluster
  std::map<const fiber*, uint64_t> joined; ///< threads arrived and not yet waited: their phase
};

/// A cp.async in flight: it lands when its thread waits.
struct pending_copy {
  void* to;
  const void* from;
  size_t bytes;
};

struct cluster_emulator {
  std::map<const block_run*, cluster_run*> cluster_of;
  std::map<const fiber*, std::vector<pending_copy>> copies;
};

inline cluster_emulator& cluster_state() {
  static cluster_emulator s;
  return s;
}

inline cluster_run& own_cluster() {
  return *cluster_state().cluster_of.at(&own_block());
}

/// The calling block's rank in its cluster (%cluster_ctarank).
inline unsigned cluster_rank() {
  cluster_run& c = own_cluster();
  for (size_t r = 0; r < c.blocks.size(); ++r)
    if (c.blocks[r] == &own_block())
      return static_cast<unsigned>(r);
  state().fail("a block missing from its own cluster");
  return 0;
}

/// barrier.cluster.arrive: this thread has arrived at the current phase.
inline void cluster_arrive() {
  cluster_run& c = own_cluster();
  const fiber* f = state().current;
  if (c.joined.count(f) != 0) {
    state().fail("a thread arrives at the cluster barrier twice without waiting");
    return;
  }
  c.joined[f] = c.phase;
  if (++c.arrived == c.expected) {
    c.arrived = 0;
    ++c.phase;
  }
}

/// barrier.cluster.wait: returns once the phase this thread arrived at has completed.
inline void cluster_wait() {
  cluster_run& c = own_cluster();
  const fiber* f = state().current;
  auto it = c.joined.find(f);
  if (it == c.joined.end()) {
    state().fail("a thread waits at the cluster barrier without arriving");
    return;
  }
  const uint64_t phase = it->second;
  c.joined.erase(it);
  while (c.phase == phase)
    wait_as(fiber_state::sleeping);
}

inline void cluster_sync() {
  cluster_arrive();
  cluster_wait();
}

inline uintptr_t aligned16(const unsigned char* p) {
  return (reinterpret_cast<uintptr_t>(p) + 15) / 16 * 16;
}

/// Returns whether `p` points into the shared memory of block `b`.
inline bool in_shared(block_run& b, const void* p, size_t bytes) {
  const auto at = reinterpret_cast<uintptr_t>(p);
  auto inside = [&](const std::vector<unsigned char>& v) {
    const auto begin = reinterpret_cast<uintptr_t>(v.data());
    return at >= begin && at + bytes <= begin + v.size();
  };
  if (inside(b.dynamic_shared))
    return true;
  for (auto& [key, storage] : b.shared)
    if (inside(storage))
      return true;
  return false;
}

/// mapa / cluster.map_shared_rank: the address of `p`'s variable in block `rank` of the cluster.
template <typename T>
T* map_shared_rank(T* p, unsigned rank) {
  cluster_run& c = own_cluster();
  if (rank >= c.blocks.size()) {
    state().fail("map_shared_rank: rank " + std::to_string(rank) + " outside a cluster of " +
                 std::to_string(c.blocks.size()));
    return p;
  }
  block_run& me = own_block();
  block_run& peer = *c.blocks[rank];
  if (peer.finished) {
    state().fail("map_shared_rank: the peer block has exited");
    return p;
  }
  const auto at = reinterpret_cast<uintptr_t>(p);
  const uintptr_t dynamic = aligned16(me.dynamic_shared.data());
  if (at >= dynamic &&
      at < reinterpret_cast<uintptr_t>(me.dynamic_shared.data()) + me.dynamic_shared.size())
    return reinterpret_cast<T*>(aligned16(peer.dynamic_shared.data()) + (at - dynamic));
  for (auto& [key, storage] : me.shared) {
    const uintptr_t base = aligned16(storage.data());
    if (at >= base && at < reinterpret_cast<uintptr_t>(storage.data()) + storage.size()) {
      std::vector<unsigned char>& other = peer.shared[key];
      if (other.empty())
        other.assign(storage.size(), 0xff); // the peer never touched it: NaN
      return reinterpret_cast<T*>(aligned16(other.data()) + (at - base));
    }
  }
  state().fail("map_shared_rank: the pointer is not in the block's shared memory");
  return p;
}

/// cp.async of `bytes` (4, 8 or 16) from global `from` to shared `to`: lands at the wait.
inline void cp_async(void* to, const void* from, size_t bytes) {
  if (reinterpret_cast<uintptr_t>(to) % bytes != 0 || reinterpret_cast<uintptr_t>(from) % bytes) {
    state().fail("cp.async of " + std::to_string(bytes) + " bytes from an unaligned address");
    return;
  }
  if (!in_shared(own_block(), to, bytes)) {
    state().fail("cp.async to an address outside the block's shared memory");
    return;
  }
  cluster_state().copies[state().current].push_back({to, from, bytes});
}

/// cp.async.wait_all: every copy this thread issued has landed.
inline void cp_async_wait_all() {
  auto it = cluster_state().copies.find(state().current);
  if (it == cluster_state().copies.end())
    return;
  for (const pending_copy& c : it->second)
    std::memcpy(c.to, c.from, c.bytes);
  cluster_state().copies.erase(it);
}

/// Poisons a block's shared memory (it has exited; a peer may still hold its addresses).
inline void poison_shared(block_run& b) {
  std::fill(b.dynamic_shared.begin(), b.dynamic_shared.end(), 0xff);
  for (auto& [key, storage] : b.shared)
    std::fill(storage.begin(), storage.end(), 0xff);
}

/// Runs `body` for every thread of every block of `grid` in clusters of `cluster` blocks along
/// x; a cooperative launch has every block resident at once.
inline cudaError_t launch_ex(dim3 grid, dim3 block, size_t smem_bytes, unsigned cluster,
                             bool cooperative, std::function<void()> body) {
  emulator& e = state();
  e.error.clear();
  const size_t threads = static_cast<size_t>(block.x) * block.y * block.z;
  const uint64_t blocks = static_cast<uint64_t>(grid.x) * grid.y * grid.z;
  if (threads == 0 || threads > 1024 || blocks == 0 || grid.y > 65535 || grid.z > 65535 ||
      cluster == 0 || cluster > 16 || grid.x % cluster != 0 || (cluster > 1 && cooperative)) {
    e.fail("invalid launch configuration");
    return e.last_error = cudaErrorInvalidValue;
  }
  if (smem_bytes > e.config.max_dynamic_smem) {
    e.fail("dynamic shared memory over the limit: " + std::to_string(smem_bytes));
    return e.last_error = cudaErrorInvalidValue;
  }
  const uint64_t capacity =
      static_cast<uint64_t>(e.config.sm_count) * static_cast<uint64_t>(e.config.blocks_per_sm);
  if (cooperative && blocks > capacity) {
    e.fail("a cooperative launch of " + std::to_string(blocks) + " blocks, more than " +
           std::to_string(capacity) + " resident");
    return e.last_error = cudaErrorCooperativeLaunchTooLarge;
  }
  if (blocks > 4000000) {
    e.fail("grid too large to emulate: " + std::to_string(blocks) + " blocks");
    return e.last_error = cudaErrorInvalidValue;
  }
  e.grid_dim = grid;
  e.block_dim = block;
  e.body = std::move(body);
  const uint64_t clusters = blocks / cluster;
  std::vector<uint64_t> order(clusters);
  std::iota(order.begin(), order.end(), uint64_t{0});
  for (size_t i = 0; i + 1 < order.size(); i += 4)
    std::shuffle(order.begin() + static_cast<std::ptrdiff_t>(i),
                 order.begin() + static_cast<std::ptrdiff_t>(std::min(order.size(), i + 4)), e.rng);
  // Resident at once: every block (cooperative), else whole clusters up to the emulator's
  // concurrency (at least one cluster).
  const uint64_t resident_clusters =
      cooperative
          ? clusters
          : std::max<uint64_t>(1, static_cast<uint64_t>(e.config.concurrent_blocks) / cluster);
  cluster_emulator& cs = cluster_state();
  std::vector<std::unique_ptr<cluster_run>> running;
  std::vector<std::unique_ptr<block_run>> resident;
  size_t next = 0;
  int64_t idle_rounds = 0;
  auto cleanup = [&] {
    for (auto& b : resident)
      cs.cluster_of.erase(b.get());
    for (auto& b : resident)
      for (auto& f : b->fibers)
        cs.copies.erase(f.get());
  };
  while (next < order.size() || !resident.empty()) {
    while (next < order.size() && running.size() < resident_clusters) {
      const uint64_t id = order[next++];
      auto c = std::make_unique<cluster_run>();
      c->expected = threads * cluster;
      for (unsigned r = 0; r < cluster; ++r) {
        const uint64_t linear = id * cluster + r;
        dim3 idx(static_cast<unsigned>(linear % grid.x),
                 static_cast<unsigned>(linear / grid.x % grid.y),
                 static_cast<unsigned>(linear / (static_cast<uint64_t>(grid.x) * grid.y)));
        resident.push_back(start_block(idx, threads, smem_bytes));
        c->blocks.push_back(resident.back().get());
        cs.cluster_of[resident.back().get()] = c.get();
      }
      running.push_back(std::move(c));
    }
    bool progressed = false;
    for (auto& b : resident) {
      if (b->finished)
        continue;
      progressed = step_block(*b) || progressed;
      if (!e.error.empty()) {
        cleanup();
        return e.last_error = cudaErrorLaunchFailure;
      }
      if (b->finished) {
        for (auto& f : b->fibers)
          if (cs.copies.count(f.get()) != 0) {
            e.fail("a thread exits with cp.async copies it never waited for");
            cleanup();
            return e.last_error = cudaErrorLaunchFailure;
          }
        poison_shared(*b);
      }
    }
    // A cluster leaves when all of its blocks are done.
    for (auto& c : running) {
      const bool done = std::all_of(c->blocks.begin(), c->blocks.end(),
                                    [](const block_run* b) { return b->finished; });
      if (!done)
        continue;
      for (block_run* b : c->blocks)
        cs.cluster_of.erase(b);
      c.reset();
    }
    running.erase(std::remove(running.begin(), running.end(), nullptr), running.end());
    for (auto& b : resident)
      if (b->finished && cs.cluster_of.count(b.get()) == 0)
        for (auto& f : b->fibers)
          e.spare_stacks.push_back(std::move(f->stack));
    resident.erase(std::remove_if(resident.begin(), resident.end(),
                                  [&](const std::unique_ptr<block_run>& b) {
                                    return b->finished && cs.cluster_of.count(b.get()) == 0;
                                  }),
                   resident.end());
    idle_rounds = progressed ? 0 : idle_rounds + 1;
    if (idle_rounds > 200000) {
      e.fail("no block makes progress: a wait for a block that never runs, or a barrier not "
             "every thread reaches");
      cleanup();
      return e.last_error = cudaErrorLaunchFailure;
    }
  }
  return cudaSuccess;
}

} // namespace ks_emu

inline unsigned atomicExch(unsigned* p, unsigned v) {
  unsigned old = *p;
  *p = v;
  return old;
}

template <typename... Params, typename... Args>
cudaError_t cudaLaunchKernelEx(const cudaLaunchConfig_t* config, void (*kernel)(Params...),
                               Args&&... args) {
  unsigned cluster = 1;
  bool cooperative = false;
  for (unsigned i = 0; i < config->numAttrs; ++i) {
    const cudaLaunchAttribute& a = config->attrs[i];
    if (a.id == cudaLaunchAttributeClusterDimension) {
      if (a.val.clusterDim.y != 1 || a.val.clusterDim.z != 1)
        return ks_emu::state().last_error = cudaErrorInvalidValue;
      cluster = a.val.clusterDim.x;
    } else if (a.id == cudaLaunchAttributeCooperative) {
      cooperative = a.val.cooperative != 0;
    }
  }
  std::tuple<std::decay_t<Params>...> values(std::forward<Args>(args)...);
  return ks_emu::launch_ex(config->grid, config->block, config->dynamicSmemBytes, cluster,
                           cooperative, [kernel, values]() { std::apply(kernel, values); });
}

template <typename Kernel>
cudaError_t cudaOccupancyMaxActiveClusters(int* clusters, Kernel,
                                           const cudaLaunchConfig_t* config) {
  unsigned cluster = 1;
  for (unsigned i = 0; i < config->numAttrs; ++i)
    if (config->attrs[i].id == cudaLaunchAttributeClusterDimension)
      cluster = config->attrs[i].val.clusterDim.x;
  const ks_emu::settings& s = ks_emu::state().config;
  *clusters = std::max(1, s.sm_count * s.blocks_per_sm / static_cast<int>(cluster));
  return cudaSuccess;
}
