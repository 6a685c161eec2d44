// Histogram family: privatised-atomics histograms of bytes (256 bins, by value) and even-bins
// histograms of u16/i32/f32 samples, with tunable block and load shape, privatisation, replica
// layout, aggregation of equal samples, and a cluster merge through distributed shared memory.
#pragma once

#include "common.cuh"
#include "histogram_math.cuh"

namespace ktune {

// --- Shared memory by 32-bit address, and thread-block clusters (sm_90+) through PTX ---
__device__ __forceinline__ u32 shared_address(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

__device__ __forceinline__ void red_shared_add(u32 addr, u32 v) {
  asm volatile("red.shared.add.u32 [%0], %1;" ::"r"(addr), "r"(v) : "memory");
}

// Blocks in this block's cluster: 1 when launched without clusters (and before sm_90).
__device__ __forceinline__ u32 cluster_blocks() {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  u32 n;
  asm volatile("mov.u32 %0, %%cluster_nctarank;" : "=r"(n));
  return n;
#else
  return 1;
#endif
}

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
__device__ __forceinline__ u32 cluster_rank() {
  u32 r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

// The address of the same shared variable in block `rank` of the cluster.
__device__ __forceinline__ u32 cluster_map(u32 addr, u32 rank) {
  u32 out;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(out) : "r"(addr), "r"(rank));
  return out;
}

__device__ __forceinline__ void red_cluster_add(u32 addr, u32 v) {
  asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], %1;" ::"r"(addr), "r"(v)
               : "memory");
}

// Split cluster barrier: arrive releases this thread's writes, wait acquires everyone's. The
// non-.aligned forms, since the threads of a warp may arrive here from divergent code.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}
#endif

// --- Loads: VEC bytes per access (1, 4, 8, 16) as 32-bit words ---
template <int VEC>
struct HistUnit {
  u32 w[VEC >= 4 ? VEC / 4 : 1];
};

template <int VEC>
__device__ __forceinline__ void load_unit(const unsigned char* p, HistUnit<VEC>& u) {
  if constexpr (VEC == 1)
    asm volatile("ld.global.u8 %0, [%1];" : "=r"(u.w[0]) : "l"(p));
  else
    RawAccess<VEC, 0>::load(p, u.w);
}

template <typename T>
__device__ __forceinline__ T sample_of(const u32* w, int k) {
  if constexpr (sizeof(T) == 1)
    return static_cast<T>(w[k >> 2] >> ((k & 3) * 8));
  else if constexpr (sizeof(T) == 2)
    return static_cast<T>(w[k >> 1] >> ((k & 1) * 16));
  else if constexpr (T(0.5f) != T(0))
    return __uint_as_float(w[k]);
  else
    return static_cast<T>(w[k]);
}

// Where a thread's counts go. Shared replicas are addressed as base + bin * step bytes (4, or
// replicas * 4 interleaved); with global atomics (PRIV = 0) the output is updated directly. Bytes
// arrive as values (their privatised bin); other samples arrive as output bins.
template <typename T, int PRIV, bool INTERLEAVED>
struct HistSink {
  u32 base;
  u32 step;
  u32* counts;
  HistogramArgs args;

  __device__ __forceinline__ void add(u32 bin, u32 count) const {
    if constexpr (PRIV == kHistGlobal) {
      const u32 out = sizeof(T) == 1 ? histogram_bin(static_cast<unsigned char>(bin), args) : bin;
      if (out != kHistogramNoBin) atomicAdd(counts + out, count);
    } else {
      red_shared_add(base + bin * (INTERLEAVED ? step : 4u), count);
    }
  }
};

// Counts one sample (head and tail of the input).
template <typename T, class Sink>
__device__ __forceinline__ void count_sample(T v, const Sink& s) {
  if constexpr (sizeof(T) == 1) {
    s.add(v, 1);
  } else {
    const u32 b = histogram_bin(v, s.args);
    if (b != kHistogramNoBin) s.add(b, 1);
  }
}

// Counts the VEC / sizeof(T) samples of one load. AGG = 1 turns a run of equal samples into one
// atomic: bytes are checked a whole load and then a word at a time, so constant input costs one
// atomic per load and random bytes pay one compare per word; wider samples compare their bins. An
// atomic instruction is saved only where all lanes of a warp skip it, so this pays on long runs;
// the same-address conflicts of skewed input are what lane replicas remove.
template <typename T, int VEC, int AGG, class Sink>
__device__ __forceinline__ void count_unit(const HistUnit<VEC>& u, const Sink& s) {
  if constexpr (sizeof(T) == 1) {
    if constexpr (VEC == 1) {
      s.add(u.w[0] & 0xFF, 1);
    } else {
      constexpr int kWords = VEC / 4;
      if constexpr (AGG && kWords > 1) {
        bool same = u.w[0] == __byte_perm(u.w[0], 0, 0);
#pragma unroll
        for (int k = 1; k < kWords; ++k) same &= u.w[k] == u.w[0];
        if (same) {
          s.add(u.w[0] & 0xFF, VEC);
          return;
        }
      }
#pragma unroll
      for (int k = 0; k < kWords; ++k) {
        const u32 x = u.w[k];
        if constexpr (AGG) {
          const bool run = x == __byte_perm(x, 0, 0);
          s.add(x & 0xFF, run ? 4 : 1);
          if (!run) {
            s.add((x >> 8) & 0xFF, 1);
            s.add((x >> 16) & 0xFF, 1);
            s.add(x >> 24, 1);
          }
        } else {
          s.add(x & 0xFF, 1);
          s.add((x >> 8) & 0xFF, 1);
          s.add((x >> 16) & 0xFF, 1);
          s.add(x >> 24, 1);
        }
      }
    }
  } else {
    constexpr int kSamples = VEC / static_cast<int>(sizeof(T));
    u32 bins[kSamples];
#pragma unroll
    for (int k = 0; k < kSamples; ++k) bins[k] = histogram_bin(sample_of<T>(u.w, k), s.args);
    if constexpr (AGG) {
      bool same = true;
#pragma unroll
      for (int k = 1; k < kSamples; ++k) same &= bins[k] == bins[0];
      if (same) {
        if (bins[0] != kHistogramNoBin) s.add(bins[0], kSamples);
        return;
      }
    }
#pragma unroll
    for (int k = 0; k < kSamples; ++k)
      if (bins[k] != kHistogramNoBin) s.add(bins[k], 1);
  }
}

template <int BLOCK, int VEC, int ITEMS>
__device__ __forceinline__ void load_tile(const unsigned char* p, HistUnit<VEC> (&x)[ITEMS]) {
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) load_unit<VEC>(p + static_cast<u64>(i) * BLOCK * VEC, x[i]);
}

template <typename T, int VEC, int ITEMS, int AGG, class Sink>
__device__ __forceinline__ void count_tile(const HistUnit<VEC> (&x)[ITEMS], const Sink& s) {
#pragma unroll
  for (int i = 0; i < ITEMS; ++i) count_unit<T, VEC, AGG>(x[i], s);
}

// The m aligned loads from `base`, in tiles of BLOCK * ITEMS loads taken by the blocks in turn
// (thread t takes loads t, t + BLOCK, ...: coalesced). Two register stages: the next tile's loads
// are in flight while this tile is counted.
template <typename T, int BLOCK, int VEC, int ITEMS, int AGG, class Sink>
__device__ __forceinline__ void count_bulk(const unsigned char* base, u64 m, const Sink& s) {
  constexpr u64 kTile = static_cast<u64>(BLOCK) * ITEMS;
  const u64 full = m / kTile;
  const unsigned char* p = base + static_cast<u64>(threadIdx.x) * VEC;
  HistUnit<VEC> x[ITEMS], y[ITEMS];
  u64 tile = blockIdx.x;
  if (tile < full) load_tile<BLOCK, VEC, ITEMS>(p + tile * kTile * VEC, x);
  while (tile < full) {
    u64 next = tile + gridDim.x;
    if (next < full) load_tile<BLOCK, VEC, ITEMS>(p + next * kTile * VEC, y);
    count_tile<T, VEC, ITEMS, AGG>(x, s);
    tile = next;
    if (tile >= full) break;
    next = tile + gridDim.x;
    if (next < full) load_tile<BLOCK, VEC, ITEMS>(p + next * kTile * VEC, x);
    count_tile<T, VEC, ITEMS, AGG>(y, s);
    tile = next;
  }
  // The partial tile goes to the block whose turn it is.
  if (m > full * kTile && blockIdx.x == full % gridDim.x) {
#pragma unroll
    for (int i = 0; i < ITEMS; ++i) {
      const u64 unit = full * kTile + static_cast<u64>(i) * BLOCK + threadIdx.x;
      if (unit < m) {
        HistUnit<VEC> u;
        load_unit<VEC>(base + unit * VEC, u);
        count_unit<T, VEC, AGG>(u, s);
      }
    }
  }
}

// Counts data[0, n) into counts[0, args.bins), adding to what is there (the host zeroes counts
// first unless the caller accumulates).
//   T       unsigned char (privatised by value: 256 bins, mapped to output bins in the merge),
//           unsigned short, int, float (privatised by output bin)
//   BLOCK   threads per block
//   VEC     bytes per load: 1 (bytes only), 4, 8, 16; head and tail samples are loaded singly so
//           that the bulk is aligned for any data pointer
//   ITEMS   loads per thread per tile
//   PRIV    kHistGlobal: atomics on the output; kHistBlock: one shared histogram per block;
//           kHistLanes: R = lane_replicas replicas (a power of two in [2, 32]; a kernel argument,
//           as it only changes address arithmetic), lane l uses l % R; kHistWarps: one per warp
//   LAYOUT  kHistReplicaMajor, kHistPadded (replica r's bin b in bank (r + b) % 32),
//           kHistInterleaved (bin-major: with R = 32 every lane has its own bank)
//   AGG     1: one atomic per run of equal samples within a load
// Launched with a thread-block cluster (sm_90+), the blocks of a cluster merge their totals in
// distributed shared memory and only the owner of a bin touches global memory.
template <typename T, int BLOCK, int VEC, int ITEMS, int PRIV, int LAYOUT, int AGG>
__global__ void __launch_bounds__(BLOCK)
    histogram_kernel(const T* data, u64 n, u32* counts, HistogramArgs args, int lane_replicas) {
  static_assert(sizeof(T) == 1 || sizeof(T) == 2 || sizeof(T) == 4, "u8, u16, i32 or f32 samples");
  static_assert(BLOCK % 32 == 0 && BLOCK >= 32 && BLOCK <= 1024, "BLOCK: whole warps, <= 1024");
  static_assert(VEC == 1 || VEC == 4 || VEC == 8 || VEC == 16, "VEC must be 1, 4, 8 or 16 bytes");
  static_assert(VEC % sizeof(T) == 0, "a load holds whole samples");
  static_assert(ITEMS >= 1 && ITEMS <= 16, "ITEMS must be in [1, 16]");
  static_assert(PRIV >= kHistGlobal && PRIV <= kHistWarps, "unknown privatisation");
  static_assert(PRIV == kHistLanes || LAYOUT == kHistReplicaMajor,
                "layouts differ only for lane replicas, which share a warp");
  static_assert(LAYOUT >= kHistReplicaMajor && LAYOUT <= kHistInterleaved, "unknown layout");
  static_assert(!AGG || VEC / sizeof(T) >= 2, "aggregation needs two samples per load");

  constexpr bool kInterleaved = LAYOUT == kHistInterleaved;
  extern __shared__ __align__(16) u32 hist_smem[];

  const int pbins = sizeof(T) == 1 ? 256 : args.bins;
  const int r = PRIV == kHistLanes ? lane_replicas : 1;
  const int replicas = histogram_replicas(PRIV, r, BLOCK);
  const int stride = histogram_replica_stride(LAYOUT, pbins);
  const int lane = threadIdx.x & 31;
  const int replica = PRIV == kHistLanes   ? (lane & (r - 1))
                      : PRIV == kHistWarps ? threadIdx.x / 32
                                           : 0;
  const u32 smem0 = shared_address(hist_smem);
  const int cluster = PRIV == kHistGlobal ? 1 : static_cast<int>(cluster_blocks());
  const u32 replica_words = histogram_replica_words(PRIV, r, LAYOUT, BLOCK, pbins);
  const u32 merge_words = histogram_merge_words(PRIV, pbins, cluster);

  HistSink<T, PRIV, kInterleaved> sink;
  sink.base = smem0 + 4u * (kInterleaved ? replica : replica * stride);
  sink.step = 4u * replicas;
  sink.counts = counts;
  sink.args = args;

  if constexpr (PRIV != kHistGlobal) {
    for (u32 i = threadIdx.x; i < replica_words + merge_words; i += BLOCK) hist_smem[i] = 0;
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    if (cluster > 1) cluster_arrive();  // released: the merge words are zero before anyone adds
#endif
    __syncthreads();
  }

  // Head samples up to the first VEC-aligned byte, the aligned bulk, and a tail of fewer than
  // VEC / sizeof(T) samples; 64-bit counts throughout (n may exceed 2^32).
  constexpr u64 kPer = VEC / sizeof(T);
  const u64 misalign = reinterpret_cast<u64>(data) % VEC;
  u64 head = misalign ? (VEC - misalign) / sizeof(T) : 0;
  if (head > n) head = n;
  const u64 m = (n - head) / kPer;
  const u64 tail_begin = head + m * kPer;
  const u64 gid = static_cast<u64>(blockIdx.x) * BLOCK + threadIdx.x;
  if (gid < head) count_sample(data[gid], sink);
  if (gid < n - tail_begin) count_sample(data[tail_begin + gid], sink);
  count_bulk<T, BLOCK, VEC, ITEMS, AGG>(reinterpret_cast<const unsigned char*>(data + head), m,
                                        sink);

  if constexpr (PRIV != kHistGlobal) {
    __syncthreads();
    // Replica totals of bin b. Interleaved replicas are read in an order rotated by lane, so the
    // warp's loads fall in distinct banks.
    auto total_of = [&](int b) {
      u32 t = 0;
      for (int k = 0; k < replicas; ++k) {
        if constexpr (kInterleaved)
          t += hist_smem[b * replicas + ((k + lane) & (replicas - 1))];
        else
          t += hist_smem[k * stride + b];
      }
      return t;
    };
    auto flush = [&](int b, u32 v) {
      const u32 out =
          sizeof(T) == 1 ? histogram_bin(static_cast<unsigned char>(b), args) : static_cast<u32>(b);
      if (out != kHistogramNoBin) atomicAdd(counts + out, v);
    };
    if (cluster == 1) {
      for (int b = threadIdx.x; b < pbins; b += BLOCK) {
        const u32 t = total_of(b);
        if (t) flush(b, t);
      }
    } else {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
      cluster_wait();  // every block of the cluster has zeroed its merge words
      const u32 merge0 = smem0 + 4u * replica_words;
      for (int b = threadIdx.x; b < pbins; b += BLOCK) {
        const u32 t = total_of(b);
        if (t) red_cluster_add(cluster_map(merge0 + 4u * (b / cluster), b % cluster), t);
      }
      cluster_arrive();
      cluster_wait();  // all totals have landed; nobody touches another block's memory after this
      const u32 rank = cluster_rank();
      for (u32 slot = threadIdx.x; slot < merge_words; slot += BLOCK) {
        const u32 b = slot * cluster + rank;
        const u32 v = hist_smem[replica_words + slot];
        if (b < static_cast<u32>(pbins) && v) flush(static_cast<int>(b), v);
      }
#endif
    }
  }
}

// Writes `count` 64-bit words of tuning input (see histogram_data_word).
template <typename T>
__global__ void histogram_fill(u64* words, u64 count, HistogramData g) {
  for (u64 w = static_cast<u64>(blockIdx.x) * blockDim.x + threadIdx.x; w < count;
       w += static_cast<u64>(gridDim.x) * blockDim.x) {
    union {
      T v[8 / sizeof(T)];
      u64 bits;
    } word;
    histogram_data_word<T>(g, w, word.v);
    words[w] = word.bits;
  }
}

}  // namespace ktune
