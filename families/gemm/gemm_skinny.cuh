// Skinny GEMM: D(M x N) = alpha * X(M x K) Y(K x N) + beta * D with N <= 16, for the GEMM calls
// whose n (or m, through C^T = op(B)^T op(A)^T) is at most 16, matrix-vector products included.
// Such a product is bound by reading X: each kernel reads it once, streaming, in whole packets,
// while Y (K x N, small) comes through the caches. N is a template argument, so the N sums of a
// row stay in registers.
//
// X is stored with one of its dimensions contiguous, which picks the kernel:
//  - skinny_dot: X k-contiguous (rows are dot products): the block's threads stride along k over
//    ROWS rows together, then reduce across lanes and warps;
//  - skinny_dot_staged: the same with Y staged in shared memory for GROUPS row groups;
//  - skinny_dot_mma: the same on the tensor cores, groups of 8 rows per warp (f64 on the FP64
//    units; f32 as 3xTF32, at about f32's precision);
//  - skinny_axpy: X m-contiguous (C += column of X times a row of Y): each lane holds ROWS
//    packets of VEC consecutive rows, KWARPS warps take interleaved k, then reduce in shared
//    memory.
// SPLIT: the k range of grid dimension z is one of several; partial sums go to the workspace
// ([split][j][i]) and skinny_reduce adds them in a fixed order (the bits do not depend on timing).
#pragma once

#include "common.cuh"

namespace ktune {

// Same layout as SkinnyArgs<T> in gemm_skinny.cpp. Strides in elements; one of X's is 1.
template <typename T>
struct SkinnyParams {
  const T* x;
  const T* y;
  T* d;
  T* workspace;
  long long xs_m, xs_k, ys_k, ys_n, ds_m, ds_n;
  int m, n, k;
  int k_per_split;
  T alpha, beta;
};

// One result: D(i, j) = alpha * v + beta * D(i, j), D not read where beta is 0 (BLAS); or, in a
// split, the partial sum of split `s` into the workspace.
template <typename T, int SPLIT>
__device__ __forceinline__ void skinny_put(const SkinnyParams<T>& p, int i, int j, T v) {
  if (SPLIT) {
    p.workspace[(static_cast<long long>(blockIdx.z) * p.n + j) * p.m + i] = v;
  } else {
    T* dp = p.d + static_cast<long long>(i) * p.ds_m + static_cast<long long>(j) * p.ds_n;
    *dp = p.beta == T(0) ? p.alpha * v : p.alpha * v + p.beta * *dp;
  }
}

// One element from global to shared memory, zero where !valid: cp.async where the architecture
// has it (no register holds the value), else a load and a store. (gemm.cuh has its own copies:
// sharing them would change the tiled kernels' template hash and retire their tuned results.)
template <typename T>
__device__ __forceinline__ void skinny_copy_to_shared(T* dst, const T* src, bool valid) {
#if __CUDA_ARCH__ >= 800
  const unsigned d = static_cast<unsigned>(__cvta_generic_to_shared(dst));
  asm volatile("cp.async.ca.shared.global [%0], [%1], %2, %3;\n" ::"r"(d), "l"(src), "n"(sizeof(T)),
               "r"(valid ? static_cast<int>(sizeof(T)) : 0)
               : "memory");
#else
  *dst = valid ? __ldg(src) : T(0);
#endif
}

__device__ __forceinline__ void skinny_copy_wait() {
#if __CUDA_ARCH__ >= 800
  asm volatile("cp.async.wait_all;\n" ::: "memory");
#endif
}

// Y(kk .. kk + VEC - 1, j): one packet where Y is k-contiguous (YK), else VEC loads.
template <typename T, int VEC, int YK>
__device__ __forceinline__ Packet<T, VEC> skinny_y(const SkinnyParams<T>& p, int kk, int j) {
  if (YK) return *reinterpret_cast<const Packet<T, VEC>*>(p.y + kk + j * p.ys_n);
  Packet<T, VEC> v;
#pragma unroll
  for (int e = 0; e < VEC; ++e) v.v[e] = __ldg(p.y + (kk + e) * p.ys_k + j * p.ys_n);
  return v;
}

template <typename T, int N, int YK, int THREADS, int ROWS, int VEC, int UNROLL, int SPLIT>
__global__ void __launch_bounds__(THREADS) skinny_dot(SkinnyParams<T> p) {
  static_assert(THREADS % 32 == 0 && N >= 1 && N <= 16, "skinny_dot: bad geometry");
#if __CUDA_ARCH__ >= 900
  if (SPLIT) asm volatile("griddepcontrol.launch_dependents;");
#endif
  using P = Packet<T, VEC>;
  const int row0 = blockIdx.x * ROWS;
  const int k0 = blockIdx.z * p.k_per_split;
  const int k1 = min(p.k, k0 + p.k_per_split);
  const int kv = k0 + (k1 - k0) / VEC * VEC;  // the end of the whole packets
  const T* xr[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)  // rows past m read row m - 1; their sums are not written
    xr[r] = p.x + static_cast<long long>(min(row0 + r, p.m - 1)) * p.xs_m;
  T acc[ROWS][N];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int j = 0; j < N; ++j) acc[r][j] = T(0);
#pragma unroll UNROLL
  for (int kk = k0 + threadIdx.x * VEC; kk < kv; kk += THREADS * VEC) {
    P xv[ROWS];
#pragma unroll
    for (int r = 0; r < ROWS; ++r) xv[r] = load_packet<1>(reinterpret_cast<const P*>(xr[r] + kk));
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const P yv = skinny_y<T, VEC, YK>(p, kk, j);
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e) acc[r][j] = fma(xv[r].v[e], yv.v[e], acc[r][j]);
    }
  }
  for (int kk = kv + threadIdx.x; kk < k1; kk += THREADS) {  // fewer than VEC left
#pragma unroll
    for (int j = 0; j < N; ++j) {
      const T y = __ldg(p.y + kk * p.ys_k + j * p.ys_n);
#pragma unroll
      for (int r = 0; r < ROWS; ++r) acc[r][j] = fma(xr[r][kk], y, acc[r][j]);
    }
  }
  // Lanes, then warps in order.
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int j = 0; j < N; ++j)
#pragma unroll
      for (int off = 16; off > 0; off /= 2)
        acc[r][j] += __shfl_xor_sync(0xffffffffu, acc[r][j], off);
  constexpr int kWarps = THREADS / 32;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (kWarps == 1) {
    if (lane == 0)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
        if (row0 + r < p.m)
#pragma unroll
          for (int j = 0; j < N; ++j) skinny_put<T, SPLIT>(p, row0 + r, j, acc[r][j]);
    return;
  }
  __shared__ T part[kWarps][ROWS * N];
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int j = 0; j < N; ++j) part[warp][r * N + j] = acc[r][j];
  __syncthreads();
  for (int t = threadIdx.x; t < ROWS * N; t += THREADS) {
    const int r = t / N, j = t % N;
    if (row0 + r >= p.m) continue;
    T sum = part[0][t];
#pragma unroll
    for (int w = 1; w < kWarps; ++w) sum += part[w][t];
    skinny_put<T, SPLIT>(p, row0 + r, j, sum);
  }
}

// The dot kernel with Y staged in shared memory, a chunk of k at a time. The block's threads form
// GROUPS row groups of ROWS rows each, which stride along the same k: one chunk of Y, read from
// L2 once, serves GROUPS x ROWS rows (skinny_dot reads all of Y once per ROWS rows, which for N
// of 9 to 16 moves several times X's bytes out of L2). The chunk is stored transposed ([j][k]),
// so lanes at consecutive k read consecutive words however Y is stored (an n-contiguous Y read
// through L1 takes a sector per lane and column). Each thread loads UNROLL packets of X per row
// before the chunk's barrier, in flight while Y is staged.
template <typename T, int N, int YK, int THREADS, int ROWS, int VEC, int GROUPS, int UNROLL,
          int SPLIT>
__global__ void __launch_bounds__(THREADS) skinny_dot_staged(SkinnyParams<T> p) {
  constexpr int kLanes = THREADS / GROUPS;  // threads along k in a row group
  constexpr int kChunk = kLanes * UNROLL;   // packets of k per chunk
  constexpr int kGroupWarps = kLanes / 32;
  static_assert(kLanes % 32 == 0 && N >= 1 && N <= 16, "skinny_dot_staged: bad geometry");
#if __CUDA_ARCH__ >= 900
  if (SPLIT) asm volatile("griddepcontrol.launch_dependents;");
#endif
  using P = Packet<T, VEC>;
  // One packet of padding per column: the stores of an n-contiguous Y (consecutive threads,
  // consecutive columns of one k) spread over the banks.
  __shared__ P ys[N][kChunk + 1];
  __shared__ T part[THREADS / 32][ROWS * N];
  const int group = threadIdx.x / kLanes, lane_k = threadIdx.x % kLanes;
  const int row0 = (blockIdx.x * GROUPS + group) * ROWS;
  const int k0 = blockIdx.z * p.k_per_split;
  const int k1 = min(p.k, k0 + p.k_per_split);
  const T* xr[ROWS];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)  // rows past m read row m - 1; their sums are not written
    xr[r] = p.x + static_cast<long long>(min(row0 + r, p.m - 1)) * p.xs_m;
  T acc[ROWS][N];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int j = 0; j < N; ++j) acc[r][j] = T(0);
  for (int kb = k0; kb < k1; kb += kChunk * VEC) {
    P xv[UNROLL][ROWS];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      const int kk = kb + (u * kLanes + lane_k) * VEC;
#pragma unroll
      for (int r = 0; r < ROWS; ++r) {
        if (kk + VEC <= k1) {
          xv[u][r] = load_packet<1>(reinterpret_cast<const P*>(xr[r] + kk));
        } else {
#pragma unroll
          for (int e = 0; e < VEC; ++e) xv[u][r].v[e] = kk + e < k1 ? xr[r][kk + e] : T(0);
        }
      }
    }
    // Y(kb .. kb + chunk - 1, 0 .. N - 1), zero past k1, copied to shared memory without
    // registers (cp.async); consecutive threads read along Y's contiguous dimension. The indices
    // are computed afresh each chunk: hoisted out of the loop with the addresses and loaded values
    // held, they took 254 registers a thread for f64 and 14 columns.
    constexpr int kChunkK = kChunk * VEC;
    int t = threadIdx.x;
    asm volatile("" : "+r"(t));
#pragma unroll
    for (int i = 0; i < (kChunkK * N + THREADS - 1) / THREADS; ++i) {
      const int idx = i * THREADS + t;
      if (kChunkK * N % THREADS != 0 && idx >= kChunkK * N) break;
      const int j = YK ? idx / kChunkK : idx % N, k = YK ? idx % kChunkK : idx / N;
      const int kk = kb + k;
      const T* src =
          kk < k1 ? p.y + static_cast<long long>(kk) * p.ys_k + static_cast<long long>(j) * p.ys_n
                  : p.y;
      skinny_copy_to_shared(&ys[j][k / VEC].v[k % VEC], src, kk < k1);
    }
    skinny_copy_wait();
    __syncthreads();
#pragma unroll
    for (int u = 0; u < UNROLL; ++u)
#pragma unroll
      for (int j = 0; j < N; ++j) {
        const P yv = ys[j][u * kLanes + lane_k];
#pragma unroll
        for (int r = 0; r < ROWS; ++r)
#pragma unroll
          for (int e = 0; e < VEC; ++e) acc[r][j] = fma(xv[u][r].v[e], yv.v[e], acc[r][j]);
      }
    __syncthreads();
  }
  // Lanes, then the group's warps in order.
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int j = 0; j < N; ++j)
#pragma unroll
      for (int off = 16; off > 0; off /= 2)
        acc[r][j] += __shfl_xor_sync(0xffffffffu, acc[r][j], off);
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  if (lane == 0)
#pragma unroll
    for (int r = 0; r < ROWS; ++r)
#pragma unroll
      for (int j = 0; j < N; ++j) part[warp][r * N + j] = acc[r][j];
  __syncthreads();
  for (int t = threadIdx.x; t < GROUPS * ROWS * N; t += THREADS) {
    const int g = t / (ROWS * N), q = t % (ROWS * N);
    const int row = (blockIdx.x * GROUPS + g) * ROWS + q / N;
    if (row >= p.m) continue;
    T sum = part[g * kGroupWarps][q];
#pragma unroll
    for (int w = 1; w < kGroupWarps; ++w) sum += part[g * kGroupWarps + w][q];
    skinny_put<T, SPLIT>(p, row, q % N, sum);
  }
}

// f32 on the tensor cores at about f32's precision (3xTF32): x = hi + lo, both TF32 (10-bit
// mantissas), and a b = a_lo b_hi + a_hi b_lo + a_hi b_hi, summed in f32 (the dropped a_lo b_lo
// and the split's rounding: about 2^-21 of |a b|, where an f32 product rounds to 2^-24). An
// infinite x keeps lo = 0, so that inf - inf does not make a NaN of an infinite result.
__device__ __forceinline__ void skinny_tf32_split(float x, unsigned& hi, unsigned& lo) {
#if __CUDA_ARCH__ >= 800
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(hi) : "f"(x));
  const float rest = x - __uint_as_float(hi);
  asm("cvt.rna.tf32.f32 %0, %1;\n" : "=r"(lo) : "f"(isfinite(rest) ? rest : 0.0f));
#endif
}

// D(16 x 8) += A(16 x 8) B(8 x 8) in TF32, f32 sums: lane (g, t) holds D's rows g (top) and g + 8
// (bottom) at columns 2t and 2t + 1, A's rows g and g + 8 at k = t and t + 4, B's column g at the
// same two k.
__device__ __forceinline__ void skinny_mma_tf32(float (&top)[2], float (&bottom)[2],
                                                const unsigned (&a)[4], const unsigned (&b)[2]) {
#if __CUDA_ARCH__ >= 800
  asm volatile(
      "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};\n"
      : "+f"(top[0]), "+f"(top[1]), "+f"(bottom[0]), "+f"(bottom[1])
      : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b[0]), "r"(b[1]));
#endif
}

// The dot kernel on the tensor cores (sm_80 and newer): f64 with mma.sync m8n8k4 on the FP64
// units, f32 with three mma.sync m16n8k8 TF32 per step (skinny_tf32_split). Each warp owns ROWS
// groups of 8 rows (f32: ROWS even, a pair of groups per 16-row tile) and all N columns (one or
// two tiles of 8), and walks its block's k range in slabs of 8, UNROLL slabs of loads in flight.
// The sums live in the mma fragments (2 registers a lane per group and tile of columns, where the
// FMA kernels hold ROWS x N a thread), which leaves registers for loads in flight; Y comes
// through L1, shared by the block's warps. In a slab, lane (g, t) loads the two k of X row g of
// each group at 2t and 2t + 1 (one packet with VEC = 2) and the same two k of Y column g. f64's
// two mma of the slab take the first and the second of each pair; f32's one mma takes the first as
// its k = t and the second as k = t + 4: either way X and Y agree on which k each step sums. X
// m-contiguous (XK = 0) is read the same way, a scalar at a time: the 8 rows of a group at one k
// are contiguous.
template <typename T, int N, int XK, int YK, int THREADS, int ROWS, int VEC, int UNROLL, int SPLIT>
__global__ void __launch_bounds__(THREADS) skinny_dot_mma(SkinnyParams<T> p) {
  static_assert((sizeof(T) == 8 || ROWS % 2 == 0) && THREADS % 32 == 0 && N >= 1 && N <= 16 &&
                    VEC <= 2 && (XK || VEC == 1),
                "skinny_dot_mma: bad geometry");
#if __CUDA_ARCH__ >= 900
  if (SPLIT) asm volatile("griddepcontrol.launch_dependents;");
#endif
#if __CUDA_ARCH__ >= 800
  constexpr int kTilesN = (N + 7) / 8;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int g = lane / 4, t = lane % 4;
  const int row0 = (blockIdx.x * (THREADS / 32) + warp) * 8 * ROWS;
  const int k0 = blockIdx.z * p.k_per_split;
  const int k1 = min(p.k, k0 + p.k_per_split);
  const T* xr[ROWS];  // rows past m read row m - 1, columns past N column N - 1: not written
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
    xr[r] = p.x + static_cast<long long>(min(row0 + 8 * r + g, p.m - 1)) * p.xs_m;
  const T* yc[kTilesN];
#pragma unroll
  for (int c = 0; c < kTilesN; ++c)
    yc[c] = p.y + static_cast<long long>(min(8 * c + g, N - 1)) * p.ys_n;
  T acc[ROWS][kTilesN][2];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int c = 0; c < kTilesN; ++c) acc[r][c][0] = acc[r][c][1] = T(0);
  for (int kb = k0; kb < k1; kb += 8 * UNROLL) {
    T a[UNROLL][ROWS][2], b[UNROLL][kTilesN][2];
    if (kb + 8 * UNROLL <= k1) {  // whole slabs (warp-uniform)
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        const int kk = kb + 8 * u + 2 * t;
#pragma unroll
        for (int r = 0; r < ROWS; ++r) {
          if (VEC == 2) {
            const Packet<T, 2> v =
                load_packet<1>(reinterpret_cast<const Packet<T, 2>*>(xr[r] + kk));
            a[u][r][0] = v.v[0], a[u][r][1] = v.v[1];
          } else if (XK) {
            a[u][r][0] = xr[r][kk], a[u][r][1] = xr[r][kk + 1];
          } else {
            a[u][r][0] = xr[r][static_cast<long long>(kk) * p.xs_k];
            a[u][r][1] = xr[r][static_cast<long long>(kk + 1) * p.xs_k];
          }
        }
#pragma unroll
        for (int c = 0; c < kTilesN; ++c) {
          if (YK && VEC == 2) {
            const Packet<T, 2> v = *reinterpret_cast<const Packet<T, 2>*>(yc[c] + kk);
            b[u][c][0] = v.v[0], b[u][c][1] = v.v[1];
          } else {
            b[u][c][0] = __ldg(yc[c] + static_cast<long long>(kk) * p.ys_k);
            b[u][c][1] = __ldg(yc[c] + static_cast<long long>(kk + 1) * p.ys_k);
          }
        }
      }
    } else {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
          const int kk = kb + 8 * u + 2 * t + e;
          const bool in = kk < k1;
#pragma unroll
          for (int r = 0; r < ROWS; ++r)
            a[u][r][e] = in ? xr[r][XK ? kk : static_cast<long long>(kk) * p.xs_k] : T(0);
#pragma unroll
          for (int c = 0; c < kTilesN; ++c)
            b[u][c][e] = in ? __ldg(yc[c] + static_cast<long long>(kk) * p.ys_k) : T(0);
        }
    }
    if constexpr (sizeof(T) == 8) {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u)
#pragma unroll
        for (int e = 0; e < 2; ++e)
#pragma unroll
          for (int r = 0; r < ROWS; ++r)
#pragma unroll
            for (int c = 0; c < kTilesN; ++c)
              asm volatile(
                  "mma.sync.aligned.m8n8k4.row.col.f64.f64.f64.f64 {%0, %1}, {%2}, {%3}, {%0, "
                  "%1};\n"
                  : "+d"(acc[r][c][0]), "+d"(acc[r][c][1])
                  : "d"(a[u][r][e]), "d"(b[u][c][e]));
    } else {
#pragma unroll
      for (int u = 0; u < UNROLL; ++u) {
        unsigned bh[kTilesN][2], bl[kTilesN][2];
#pragma unroll
        for (int c = 0; c < kTilesN; ++c)
#pragma unroll
          for (int e = 0; e < 2; ++e) skinny_tf32_split(b[u][c][e], bh[c][e], bl[c][e]);
#pragma unroll
        for (int r = 0; r < ROWS; r += 2) {
          // A's fragment: rows g and g + 8 (groups r and r + 1) at k = t and t + 4.
          unsigned ah[4], al[4];
          skinny_tf32_split(a[u][r][0], ah[0], al[0]);
          skinny_tf32_split(a[u][r + 1][0], ah[1], al[1]);
          skinny_tf32_split(a[u][r][1], ah[2], al[2]);
          skinny_tf32_split(a[u][r + 1][1], ah[3], al[3]);
#pragma unroll
          for (int c = 0; c < kTilesN; ++c) {  // the small terms first, then the large one
            skinny_mma_tf32(acc[r][c], acc[r + 1][c], al, bh[c]);
            skinny_mma_tf32(acc[r][c], acc[r + 1][c], ah, bl[c]);
            skinny_mma_tf32(acc[r][c], acc[r + 1][c], ah, bh[c]);
          }
        }
      }
    }
  }
  // Lane (g, t) holds D(row g of each group, columns 2t and 2t + 1).
#pragma unroll
  for (int r = 0; r < ROWS; ++r) {
    const int row = row0 + 8 * r + g;
    if (row >= p.m) continue;
#pragma unroll
    for (int c = 0; c < kTilesN; ++c)
#pragma unroll
      for (int e = 0; e < 2; ++e) {
        const int j = 8 * c + 2 * t + e;
        if (j < N) skinny_put<T, SPLIT>(p, row, j, acc[r][c][e]);
      }
  }
#endif
}

template <typename T, int N, int YK, int THREADS, int ROWS, int VEC, int KWARPS, int UNROLL,
          int SPLIT>
__global__ void __launch_bounds__(THREADS) skinny_axpy(SkinnyParams<T> p) {
  constexpr int kWarps = THREADS / 32, kWarpRows = kWarps / KWARPS;
  static_assert(THREADS % 32 == 0 && kWarps % KWARPS == 0 && N >= 1 && N <= 16,
                "skinny_axpy: bad geometry");
#if __CUDA_ARCH__ >= 900
  if (SPLIT) asm volatile("griddepcontrol.launch_dependents;");
#endif
  using P = Packet<T, VEC>;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  const int wr = warp % kWarpRows, wk = warp / kWarpRows;
  // Packet r of this lane: rows first(r) .. first(r) + VEC - 1.
  const int base = (blockIdx.x * kWarpRows + wr) * ROWS * 32 * VEC + lane * VEC;
  const int k0 = blockIdx.z * p.k_per_split;
  const int k1 = min(p.k, k0 + p.k_per_split);
  T acc[ROWS][VEC][N];
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int e = 0; e < VEC; ++e)
#pragma unroll
      for (int j = 0; j < N; ++j) acc[r][e][j] = T(0);
#pragma unroll UNROLL
  for (int kk = k0 + wk; kk < k1; kk += KWARPS) {
    T yv[N];
#pragma unroll
    for (int j = 0; j < N; ++j)
      yv[j] = __ldg(p.y + static_cast<long long>(kk) * p.ys_k + j * p.ys_n);
    const T* column = p.x + static_cast<long long>(kk) * p.xs_k;
#pragma unroll
    for (int r = 0; r < ROWS; ++r) {
      const int row = base + r * 32 * VEC;
      P xv;
      if (row + VEC <= p.m) {
        xv = load_packet<1>(reinterpret_cast<const P*>(column + row));
      } else {
#pragma unroll
        for (int e = 0; e < VEC; ++e) xv.v[e] = row + e < p.m ? column[row + e] : T(0);
      }
#pragma unroll
      for (int e = 0; e < VEC; ++e)
#pragma unroll
        for (int j = 0; j < N; ++j) acc[r][e][j] = fma(xv.v[e], yv[j], acc[r][e][j]);
    }
  }
  if (KWARPS > 1) {
    // Warps 1 .. KWARPS-1 of each row group hand their sums to warp 0, which adds them in order.
    constexpr int kPerLane = ROWS * VEC * N;
    __shared__ T part[KWARPS > 1 ? KWARPS - 1 : 1][kWarpRows][kPerLane][32];
    if (wk > 0)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e)
#pragma unroll
          for (int j = 0; j < N; ++j) part[wk - 1][wr][(r * VEC + e) * N + j][lane] = acc[r][e][j];
    __syncthreads();
    if (wk > 0) return;
#pragma unroll
    for (int w = 0; w < KWARPS - 1; ++w)
#pragma unroll
      for (int r = 0; r < ROWS; ++r)
#pragma unroll
        for (int e = 0; e < VEC; ++e)
#pragma unroll
          for (int j = 0; j < N; ++j) acc[r][e][j] += part[w][wr][(r * VEC + e) * N + j][lane];
  }
#pragma unroll
  for (int r = 0; r < ROWS; ++r)
#pragma unroll
    for (int e = 0; e < VEC; ++e) {
      const int row = base + r * 32 * VEC + e;
      if (row < p.m)
#pragma unroll
        for (int j = 0; j < N; ++j) skinny_put<T, SPLIT>(p, row, j, acc[r][e][j]);
    }
}

// Launched as a programmatic dependent of the split kernel: adds the splits' partial sums in a
// fixed order (split order, or beyond 32 splits a warp's lanes and a shuffle tree) and writes D.
template <typename T>
__global__ void __launch_bounds__(256) skinny_reduce(SkinnyParams<T> p, int splits) {
#if __CUDA_ARCH__ >= 900
  asm volatile("griddepcontrol.wait;" ::: "memory");
#endif
  const long long total = static_cast<long long>(p.m) * p.n;
  if (splits > 32) {
    // Many splits of few results (a huge k over a few dozen rows): a warp per result, its lanes
    // taking every 32nd split, then a fixed shuffle tree (a thread adding 512 splits in turn
    // waited on them one by one).
    const int lane = threadIdx.x % 32;
    const long long warps = static_cast<long long>(gridDim.x) * blockDim.x / 32;
    for (long long idx = (static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x) / 32;
         idx < total; idx += warps) {
      T sum = T(0);
      for (int s = lane; s < splits; s += 32) sum += p.workspace[s * total + idx];
#pragma unroll
      for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
      if (lane == 0)
        skinny_put<T, 0>(p, static_cast<int>(idx % p.m), static_cast<int>(idx / p.m), sum);
    }
    return;
  }
  for (long long idx = static_cast<long long>(blockIdx.x) * blockDim.x + threadIdx.x; idx < total;
       idx += static_cast<long long>(gridDim.x) * blockDim.x) {
    const int i = static_cast<int>(idx % p.m), j = static_cast<int>(idx / p.m);
    T sum = p.workspace[idx];
    for (int s = 1; s < splits; ++s) sum += p.workspace[s * total + idx];
    skinny_put<T, 0>(p, i, j, sum);
  }
}

}  // namespace ktune
